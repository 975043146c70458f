"""How soon a small run produces output: the README's main job (Fast, chunk by title, the local
embedder over `fixtures/docs`), timed from process start to the first output file and to exit.

    .venv/bin/python benchmarks/bench_first_output.py [--rounds 3]

The output folder is polled every 20 ms; each round uses a fresh output folder and workspace.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXE = str(REPO / ".venv" / "bin" / "ingestflow")


def one_round() -> tuple[float, float]:
    """Seconds to the first output file, and to exit."""
    with tempfile.TemporaryDirectory(prefix="bench-first-") as tmp:
        out = Path(tmp) / "out"
        command = [EXE, "run", str(REPO / "examples" / "fast-by-title-embed.json")]
        command += ["-i", str(REPO / "fixtures" / "docs"), "-o", str(out)]
        command += ["--workspace", str(Path(tmp) / "ws")]
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        first = None
        while process.poll() is None:
            if first is None and out.is_dir() and any(out.glob("*.json")):
                first = time.perf_counter() - started
            time.sleep(0.02)
        total = time.perf_counter() - started
        if process.returncode != 0:
            raise SystemExit(f"the run failed (exit {process.returncode})")
        return (first if first is not None else total), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds = [one_round() for _ in range(args.rounds)]
    for first, total in rounds:
        print(f"first output {first:.2f} s, exit {total:.2f} s")
    print(
        f"median: first output {statistics.median(r[0] for r in rounds):.2f} s, "
        f"exit {statistics.median(r[1] for r in rounds):.2f} s"
    )


if __name__ == "__main__":
    main()
