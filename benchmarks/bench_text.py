"""Long plain text under Fast, chunk by character: ingestflow beside the library alone (and the
open-source peer, when installed), timed from process start to exit.

    .venv/bin/python benchmarks/bench_text.py [--copies 1 4] [--rounds 2] [--src OTHER/src]

Input: War and Peace (`../shared/corpus/docs/book-war-and-peace-1225p.txt`, 3.2 MB), and with
`--copies N` that text N times in one file. Sides, alternating each round:
- `ingestflow`: `ingestflow run examples/fast-by-character.json --workers 2`; `--src` runs
  another checkout's `src` the same way (a before/after pair on one machine);
- `library`: one process calling `partition(filename, strategy="fast")` and `chunk_by_character`
  (500 characters, overlap 50) — what the peer runs for one file, which it cannot split;
- `peer`: `unstructured-ingest local` (basic chunking, same sizes, 2 processes), when
  `$PEER/venv` exists (`PEER=$HOME/peer bash ../shared/tools/peer/install.sh`).
Per run: wall and CPU seconds of the process tree, MB/s of wall, chunks out, and for
ingestflow when its progress first showed lines done and how many times that figure moved.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peer import CORPUS, REPO, count

BOOK = CORPUS / "book-war-and-peace-1225p.txt"
WORKFLOW = REPO / "examples" / "fast-by-character.json"
LIBRARY = """
import sys
from unstructured.partition.auto import partition
from unstructured.chunking.basic import chunk_elements
from unstructured.staging.base import elements_to_json
elements = partition(filename=sys.argv[1], strategy="fast")
elements = [e for e in elements if e.category not in ("Header", "Footer", "PageBreak")]
chunks = chunk_elements(elements, max_characters=500, overlap=50)
elements_to_json(chunks, filename=sys.argv[2])
"""
_LINES = re.compile(r": (\d+) of (\d+) lines")


def timed(command: list[str], env: dict[str, str], log: Path) -> dict:
    """Run a command: wall and CPU seconds of its tree, and when its progress lines (read as
    they come) first showed lines done, and how many different counts they showed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    seen: list[tuple[float, int]] = []
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )

    def read() -> None:
        assert process.stdout is not None
        with log.open("w") as out:
            for line in process.stdout:
                out.write(line)
                found = _LINES.search(line)
                if found:
                    seen.append((time.perf_counter() - started, int(found.group(1))))

    reader = threading.Thread(target=read)
    reader.start()
    rc = process.wait()
    reader.join()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    moving = [t for t, done in seen if done > 0]
    return {
        "rc": rc,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "first_lines_s": round(moving[0], 1) if moving else None,
        "line_counts_shown": len({done for _, done in seen}),
    }


def run_ingestflow(inputs: Path, work: Path, src: Path | None) -> dict:
    out, ws = work / "ours-out", work / "ours-ws"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ws, ignore_errors=True)
    env = {**os.environ, "INGESTFLOW_PROGRESS_INTERVAL": "1"}
    env["PYTHONPATH"] = str(src or REPO / "src")
    command = [str(REPO / ".venv/bin/ingestflow"), "run", str(WORKFLOW), "-i", str(inputs)]
    command += ["-o", str(out), "--workspace", str(ws), "--workers", "2"]
    return {**timed(command, env, work / "ours.log"), **count(out)}


def run_library(inputs: Path, work: Path) -> dict:
    out = work / "library-out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    (source,) = sorted(inputs.iterdir())
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    # ingestflow's offline set-up (the spaCy model from PyPI, no telemetry), then the library
    code = "from ingestflow.stages.partition import configure_unstructured\n"
    code += "configure_unstructured()\n" + LIBRARY
    target = out / f"{source.name}.json"
    command = [str(REPO / ".venv/bin/python"), "-c", code, str(source), str(target)]
    return {**timed(command, env, work / "library.log"), **count(out)}


def run_peer(peer: Path, inputs: Path, work: Path) -> dict:
    out = work / "peer-out"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work / "peer-work", ignore_errors=True)
    command = [str(peer / "venv/bin/unstructured-ingest"), "local", "--input-path", str(inputs)]
    command += ["--work-dir", str(work / "peer-work"), "--num-processes", "2"]
    command += ["--strategy", "fast", "--reprocess", "--no-tqdm"]
    command += ["--chunking-strategy", "basic", "--chunk-max-characters", "500"]
    command += ["--chunk-overlap", "50", "local", "--output-dir", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DO_NOT_TRACK": "true"}
    return {**timed(command, env, work / "peer.log"), **count(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sides", default="ingestflow,library,peer")
    parser.add_argument("--src", type=Path, help="another checkout's src, run as 'before'")
    parser.add_argument(
        "--peer", type=Path, default=Path(os.environ.get("PEER", Path.home() / "peer"))
    )
    args = parser.parse_args()
    sides = args.sides.split(",")
    if "peer" in sides and not (args.peer / "venv/bin/unstructured-ingest").exists():
        print(f"no peer in {args.peer}: left out", file=sys.stderr)
        sides.remove("peer")
    if args.src is not None:
        sides.insert(0, "before")
    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-text-") as tmp:
        for copies in args.copies:
            work = Path(tmp) / f"x{copies}"
            inputs = work / "in"
            inputs.mkdir(parents=True)
            text = BOOK.read_bytes()
            (inputs / BOOK.name).write_bytes(text * copies)
            megabytes = len(text) * copies / 1e6
            runs: dict[str, list[dict]] = {side: [] for side in sides}
            for round_ in range(args.rounds):
                for side in sides if round_ % 2 == 0 else sides[::-1]:
                    if side == "ingestflow":
                        result = run_ingestflow(inputs, work, None)
                    elif side == "before":
                        result = run_ingestflow(inputs, work, args.src)
                    elif side == "library":
                        result = run_library(inputs, work)
                    else:
                        result = run_peer(args.peer, inputs, work)
                    result["MB_per_s"] = round(megabytes / result["wall_s"], 3)
                    runs[side].append(result)
                    print(f"x{copies} {side} round {round_ + 1}: {json.dumps(result)}", flush=True)
            report[f"x{copies} ({megabytes:.1f} MB)"] = runs
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
