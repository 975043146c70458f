"""The Ray executor against the local one: the same pipeline on the same documents, each run timed
from process start to exit (imports, model loads and, for Ray, starting the local cluster
included).

    .venv/bin/python benchmarks/bench_ray.py [--copies 8] [--rounds 1]

Documents: the 24 files of `../shared/tools/peer/BENCH_SET.txt`, each copied `--copies` times
under distinct names. Pipeline: Fast partitioning, chunk by title at 896 characters,
all-MiniLM-L6-v2 on this machine (the workflow of `bench_peer.py`). Runs: the local executor with
2 workers, Ray with 1 worker, Ray with 2 workers (a local Ray cluster started by the run). Per
run: wall seconds, CPU seconds of the process tree (Ray's processes included), peak summed RSS
of the tree, CPU seconds the host stole from this VM (a busy host), the job's own
runtime (from the job record: without process start and the cluster's start-up), and the output's
documents / records / embedded records. Last line: Ray / local wall time at 2 workers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peer import bench_docs, count, ingestflow_run

RUNS = {  # name: extra arguments of `ingestflow run`
    "local x2": ["--workers", "2"],
    "ray x1": ["--workers", "1", "--executor", "ray"],
    "ray x2": ["--workers", "2", "--executor", "ray"],
}


def inputs(folder: Path, copies: int) -> int:
    """The bench set, `copies` times, under distinct names; how many files."""
    docs = bench_docs()
    missing = [str(p) for p in docs if not p.is_file()]
    if missing:
        sys.exit(f"bench_ray: missing corpus files (is ../shared/corpus there?): {missing[:3]}")
    for copy in range(copies):
        for path in docs:
            shutil.copy2(path, folder / f"c{copy}-{path.name}")
    return copies * len(docs)


def steal_s() -> float:
    """CPU seconds this VM's host took from it so far (`steal` in /proc/stat): a run that
    loses many was measured on a busy host."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def sample(pid: int, result: dict) -> None:
    """Until the process ends, sample its tree: CPU seconds per process (the last sample of
    each: Ray's processes are not children the run waits for, so `getrusage` misses them) and
    the peak summed RSS."""
    import psutil

    cpu: dict[int, float] = {}
    peak = 0
    try:
        root = psutil.Process(pid)
        while root.is_running() and root.status() != psutil.STATUS_ZOMBIE:
            total = 0
            for process in [root, *root.children(recursive=True)]:
                try:
                    times = process.cpu_times()
                    cpu[process.pid] = times.user + times.system
                    total += process.memory_info().rss
                except psutil.Error:
                    continue
            peak = max(peak, total)
            time.sleep(0.2)
    except psutil.Error:
        pass
    result["cpu_s"] = round(sum(cpu.values()), 1)
    result["peak_rss_mb"] = round(peak / 2**20)


def timed(command: list[str], log: Path) -> dict:
    """Run a command: wall seconds, CPU seconds and peak RSS of its process tree, steal."""
    stolen = steal_s()
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        result: dict = {}
        sampler = threading.Thread(target=sample, args=(process.pid, result))
        sampler.start()
        rc = process.wait()
        sampler.join()
    wall = time.perf_counter() - started
    return {"rc": rc, "wall_s": round(wall, 1), **result, "steal_s": round(steal_s() - stolen, 1)}


def runtime_s(log: Path) -> float | None:
    """The job record's runtime (`PT12.3S`) from a `--json` run's output."""
    text = log.read_text(errors="replace")
    start = text.find("{")
    try:
        record = json.loads(text[start:]) if start >= 0 else {}
    except json.JSONDecodeError:
        return None
    found = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?([\d.]+)S", str(record.get("runtime", "")))
    if not found:
        return None
    hours, minutes, seconds = found.groups()
    return round(int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds), 1)


def run(name: str, folder: Path, work: Path) -> dict:
    out = work / "out"
    command = ingestflow_run(work, folder, out, work / "ws", *RUNS[name])
    log = work / f"{name.replace(' ', '-')}.log"
    result = timed(command, log)
    return {"run": name, **result, "job_s": runtime_s(log), **count(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    folder = work / "in"
    folder.mkdir()
    files = inputs(folder, args.copies)
    cpus = len(os.sched_getaffinity(0))
    print(f"# {files} files ({args.copies} x 24), {cpus} CPUs, {platform.python_version()}")
    results: dict[str, list[dict]] = {name: [] for name in RUNS}
    try:
        for round_ in range(args.rounds):
            order = list(RUNS) if round_ % 2 == 0 else list(reversed(RUNS))
            for name in order:
                result = run(name, folder, work)
                results[name].append(result)
                print(json.dumps(result), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    heads = ("wall s", "job s", "cpu s", "rss MB", "steal s")
    print(f"{'run':10} {heads[0]:>8} " + " ".join(f"{h:>7}" for h in heads[1:]) + " docs records")
    wall = {}
    for name, rows in results.items():
        wall[name] = statistics.median(r["wall_s"] for r in rows)
        jobs = [r["job_s"] for r in rows if r["job_s"] is not None]
        job = statistics.median(jobs) if jobs else float("nan")
        cpu = statistics.median(r["cpu_s"] for r in rows)
        rss = max(r.get("peak_rss_mb", 0) for r in rows)
        steal = max(r["steal_s"] for r in rows)
        last = rows[-1]
        print(
            f"{name:10} {wall[name]:8.1f} {job:7.1f} {cpu:7.1f} {rss:7d} {steal:7.1f} "
            f"{last['docs']:4d} {last['records']:7d}"
        )
    print(f"ray x2 / local x2 (wall): {wall['ray x2'] / wall['local x2']:.2f}")


if __name__ == "__main__":
    main()
