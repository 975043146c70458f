"""The Ray executor against the local one, at 1 and 2 workers: the same pipeline on the same
documents, each run timed from process start to exit (imports, model loads and, for Ray, starting
the local cluster included), to local JSON files or, with `--milvus-server`, to a Milvus server.

    .venv/bin/python benchmarks/bench_ray.py [--copies 8] [--rounds 1] [--milvus-server]
        [--runs "local x1,local x2,ray x1,ray x2"] [--files N] [--json OUT.json]
        [--machines 100] [--cores 16] [--probe-seconds 30] [--no-wait-probe]

Documents: the 24 files of `../shared/tools/peer/BENCH_SET.txt` (the first `--files` of them),
each copied `--copies` times under distinct names. Pipeline: Fast partitioning, chunk by title at
896 characters, all-MiniLM-L6-v2 on this machine (the workflow of `bench_peer.py`). Runs: the
local executor and Ray (a local cluster started by the run), each with 1 and 2 workers.

With `--milvus-server`: one standalone Milvus server started as the tests start it
(`tests/milvus_server.py`), its idle CPU measured first; before each run a fresh collection made
with `ingestflow vectordb create-collection`, the run's destination a vectordb connector on it
(with Ray, the actors write the rows); after each run its rows counted (no primary key twice) and
digested, and every run must have written the same rows. Then `--probe-seconds` of writes through
the vectordb destination from this process alone (new documents of the runs' rows a document):
what one writer gets from this server, and the server's CPU a row.

Per run: wall seconds, the job's own runtime (the job record's window: without process start and
the cluster's shutdown), documents/s on both and in the run's steady part (between the moments the
job had recorded 10% and 90% of its documents: actors started, models loaded, no tail), CPU
seconds of the process tree split into the driver (the `ingestflow run` process), the workers
(local worker processes, Ray actors) and Ray's own processes (GCS, raylet, agents), the same per
document in the steady part and the driver's share of the tree's CPU there, peak summed RSS, the
Milvus server's CPU (job window; net of its idle rate), rows written, and CPU seconds the host
stole from this VM (a busy host). Then scaling efficiency = docs/s at 2 workers / (2 × docs/s at
1 worker) per executor, what a document costs (`costs`: w, d, r, rows, server CPU a row), the
bytes one document's task and outcome take between the driver and an actor (pickled, as Ray
sends them), the driver's CPU for one `ray.wait` with 4 and with 2 × machines × cores tasks in
flight, and the 100-machine model of `docs/ray.md` with those figures (`model`: its check on this
machine, and `--machines` × `--cores`). Everything goes to `--json`; a Markdown table and the
model's lines to the terminal.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import pickle
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(Path(__file__).resolve().parent), str(REPO / "src"), str(REPO)]
from bench_peer import WORKFLOW, bench_docs, count, ingestflow_run  # noqa: E402

RUNS = {  # name: extra arguments of `ingestflow run`
    "local x1": ["--workers", "1"],
    "local x2": ["--workers", "2"],
    "ray x1": ["--workers", "1", "--executor", "ray"],
    "ray x2": ["--workers", "2", "--executor", "ray"],
}
DIM = 384  # all-MiniLM-L6-v2
COLLECTION_MAX_ROWS = 1_000_000  # the digest reads every row back


def inputs(folder: Path, copies: int, files: int | None) -> int:
    """The bench set (its first `files`), `copies` times, under distinct names; how many."""
    docs = bench_docs()[:files]
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


def role(process: Any, root: int) -> str:
    """driver (the run's own process), worker (a local worker process, a Ray actor: titled
    `ray::StagesActor…`, or a Ray worker that is to be one: `ray::IDLE`, `default_worker.py`)
    or ray (Ray's GCS, raylet, dashboard, monitors and agents: `ray::…Agent`)."""
    if process.pid == root:
        return "driver"
    try:
        line = " ".join(process.cmdline())
    except Exception:
        line = ""
    if not line:  # ended, or not yet exec'd: the caller keeps what it saw before
        return ""
    if line.startswith("ray::"):
        return "ray" if line.split()[0].endswith("Agent") else "worker"
    if "default_worker.py" in line:
        return "worker"
    return "ray" if "/ray/" in line or "ray" in line.split()[0].rsplit("/", 1)[-1] else "worker"


def tree_cpu(root: Any, seen: dict[int, tuple[float, str]], root_pid: int) -> int:
    """Update `seen` (pid: last CPU seconds, role at the last sample: a Ray worker is titled
    once it has started) from the tree under `root`; the tree's summed RSS."""
    import psutil

    rss = 0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
            kind = role(process, root_pid) or seen.get(process.pid, (0.0, "worker"))[1]
            seen[process.pid] = (times.user + times.system, kind)
            rss += process.memory_info().rss
        except psutil.Error:
            continue
    return rss


class Sampler:
    """Samples, every 0.2 s until the run ends, its process tree (CPU seconds per process: the
    last sample of each, since Ray's processes are not children `getrusage` counts; the peak
    summed RSS), the Milvus server's tree, and the documents the job has recorded so far (its
    workspace's `job_files`); keeps a time series of the cumulative figures, so that a window
    (the job's; its steady part) can be cut out afterwards."""

    def __init__(self, pid: int, server_pid: int | None, db: Path | None) -> None:
        self.pid, self.server_pid, self.db = pid, server_pid, db
        self.series: list[tuple[float, dict[str, float]]] = []  # (epoch s, cumulative figures)
        self.peak = 0
        self.docs = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        import psutil

        seen: dict[int, tuple[float, str]] = {}
        server: dict[int, tuple[float, str]] = {}
        try:
            root = psutil.Process(self.pid)
            server_root = psutil.Process(self.server_pid) if self.server_pid else None
            while root.is_running() and root.status() != psutil.STATUS_ZOMBIE:
                self.peak = max(self.peak, tree_cpu(root, seen, self.pid))
                if server_root is not None:
                    with contextlib.suppress(psutil.Error):
                        tree_cpu(server_root, server, -1)
                self._count_docs()
                self._record(seen, server)
                time.sleep(0.2)
        except psutil.Error:
            pass
        self._count_docs()
        self._record(seen, server)

    def _count_docs(self) -> None:
        """Documents recorded as written so far (the workspace's SQLite, read-only: the run
        commits each document's result as it collects it)."""
        if self.db is None or not self.db.is_file():
            return
        with contextlib.suppress(sqlite3.Error):
            db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=0.1)
            try:
                query = "SELECT count(*) FROM job_files WHERE status = 'SUCCESS'"
                self.docs = db.execute(query).fetchone()[0]
            finally:
                db.close()

    def _record(self, seen: dict, server: dict) -> None:
        totals = {"driver": 0.0, "worker": 0.0, "ray": 0.0}
        for cpu, kind in seen.values():
            totals[kind] += cpu
        totals["server"] = sum(cpu for cpu, _ in server.values())
        totals["docs"] = self.docs
        self.series.append((time.time(), totals))

    def at(self, when: float) -> dict[str, float]:
        """The cumulative figures at the sample nearest before `when` (the first if none)."""
        times = [t for t, _ in self.series]
        index = max(0, bisect.bisect_right(times, when) - 1)
        return self.series[index][1]

    def window(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds by role (and documents) between two moments."""
        a, b = self.at(start), self.at(end)
        return {k: b[k] - a[k] for k in b}

    def steady(self, low: float = 0.1, high: float = 0.9) -> tuple[float, float] | None:
        """The moments the job had recorded `low` and `high` of its documents: the steady part
        of the run (actors started and models loaded; no tail of the last documents)."""
        total = self.series[-1][1]["docs"] if self.series else 0
        if total < 10:
            return None
        first = next(t for t, f in self.series if f["docs"] >= max(1, low * total))
        last = next(t for t, f in self.series if f["docs"] >= high * total)
        return (first, last) if last > first else None


def timed(
    command: list[str], log: Path, server_pid: int | None, db: Path | None = None
) -> tuple[dict, Sampler]:
    """Run a command: wall seconds, CPU seconds by role and peak RSS of its process tree, the
    server's CPU, steal."""
    stolen = steal_s()
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        sampler = Sampler(process.pid, server_pid, db)
        sampler.thread.start()
        rc = process.wait()
        sampler.thread.join()
    wall = time.perf_counter() - started
    cpu = sampler.series[-1][1] if sampler.series else {}
    result = {
        "rc": rc,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu.get("driver", 0) + cpu.get("worker", 0) + cpu.get("ray", 0), 1),
        "cpu_driver_s": round(cpu.get("driver", 0), 1),
        "cpu_workers_s": round(cpu.get("worker", 0), 1),
        "cpu_ray_s": round(cpu.get("ray", 0), 1),
        "peak_rss_mb": round(sampler.peak / 2**20),
        "steal_s": round(steal_s() - stolen, 1),
    }
    return result, sampler


def job_record(log: Path) -> dict:
    """The job record a `--json` run printed ({} when it printed none)."""
    text = log.read_text(errors="replace")
    start = text.find("{")
    try:
        return json.loads(text[start:]) if start >= 0 else {}
    except json.JSONDecodeError:
        return {}


def runtime_s(record: dict) -> float | None:
    """The job record's runtime (`PT12.3S`)."""
    found = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?([\d.]+)S", str(record.get("runtime", "")))
    if not found:
        return None
    hours, minutes, seconds = found.groups()
    return round(int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds), 1)


def epoch(stamp: Any) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        return None


# --- the Milvus server ---------------------------------------------------------------------------


class Milvus:
    """One standalone server for the whole benchmark, a fresh collection a run."""

    def __init__(self, work: Path, schema: str) -> None:
        from tests.milvus_server import ROOT_PASSWORD, MilvusServer

        self.password = ROOT_PASSWORD
        self.schema = schema
        self.server = MilvusServer(work / "milvus", Path.home() / ".cache" / "ingestflow-tests")
        started = time.monotonic()
        self.server.start()
        self.ready_s = round(time.monotonic() - started, 1)
        assert self.server.process is not None
        self.pid = self.server.process.pid
        self.idle_cpu_per_s = 0.0

    def cpu_s(self) -> float:
        import psutil

        root = psutil.Process(self.pid)
        total = 0.0
        for process in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                total += times.user + times.system
        return total

    def measure_idle(self, seconds: float) -> float:
        """The server's CPU seconds per second with nothing to do (compactions, etcd, timers)."""
        before, started = self.cpu_s(), time.monotonic()
        time.sleep(seconds)
        self.idle_cpu_per_s = (self.cpu_s() - before) / (time.monotonic() - started)
        return round(self.idle_cpu_per_s, 3)

    def client(self) -> Any:
        from pymilvus import MilvusClient

        return MilvusClient(uri=self.server.uri, token=f"root:{self.password}", timeout=60)

    def collection(self, name: str, work: Path) -> Path:
        """A new collection made by `ingestflow vectordb create-collection`; the vectordb
        destination connector file for it."""
        exe = str(REPO / ".venv/bin/ingestflow")
        command = [exe, "vectordb", "create-collection", "--uri", self.server.uri]
        command += ["--collection", name, "--dim", str(DIM), "--schema", self.schema]
        command += ["--user", "root"]
        env = {**os.environ, "INGESTFLOW_VECTORDB_PASSWORD": self.password}
        made = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        if made.returncode != 0:
            sys.exit(f"bench_ray: create-collection failed: {made.stdout}{made.stderr}")
        config = {
            "user": "root",
            "uri": self.server.uri,
            "db_name": "",
            "password": self.password,
            "collection_name": name,
        }
        connector = work / f"{name}.json"
        connector.write_text(json.dumps({"name": name, "type": "vectordb", "config": config}))
        return connector

    def rows(self, name: str) -> dict:
        """Rows in the collection (count(*)), distinct primary keys, and a digest of its
        (record_id, text) pairs, sorted; the collection is dropped afterwards."""
        logging.getLogger("pymilvus").setLevel(logging.ERROR)  # the iterator's notes on its ts
        client = self.client()
        try:
            client.load_collection(name)
            strong = {"consistency_level": "Strong"}
            (counted,) = client.query(name, filter="", output_fields=["count(*)"], **strong)
            pairs: list[str] = []
            ids: set[str] = set()
            text_bytes = 0
            iterator = client.query_iterator(
                name,
                batch_size=1000,
                filter='element_id != ""',
                **strong,
                output_fields=["element_id", "record_id", "text"],
            )
            while batch := iterator.next():
                for row in batch:
                    ids.add(row["element_id"])
                    pairs.append(json.dumps([row["record_id"], row["text"]]))
                    text_bytes += len(str(row["text"]).encode())
                if len(pairs) > COLLECTION_MAX_ROWS:
                    break
            iterator.close()
            client.drop_collection(name)
        finally:
            client.close()
        digest = hashlib.sha256("\n".join(sorted(pairs)).encode()).hexdigest()[:16]
        mean_text = round(text_bytes / len(pairs)) if pairs else 0
        return {
            "rows": counted["count(*)"],
            "distinct_ids": len(ids),
            "rows_digest": digest,
            "text_bytes_per_row": mean_text,
        }

    def probe(self, seconds: float, rows_per_doc: int) -> dict:
        """Documents written one after another through the vectordb destination, from this
        process, for `seconds`: new documents of `rows_per_doc` 384-d rows each."""
        from pydantic import SecretStr

        from ingestflow.connectors.vectordb import VectorDBConfig
        from ingestflow.connectors.vectordb_destination import VectorDBDestination
        from ingestflow.elements import Document

        name = "bench_probe"
        self.collection(name, self.server.base)
        config = VectorDBConfig(
            user="root",
            uri=self.server.uri,
            db_name="",
            password=SecretStr(self.password),
            collection_name=name,
        )
        dest = VectorDBDestination(config)
        dest.precheck(DIM)
        text = "lorem ipsum dolor sit amet " * 30  # ~800 characters, a chunk's size
        took: list[float] = []
        cpu_before, begin = self.cpu_s(), time.monotonic()
        while time.monotonic() - begin < seconds:
            rid = f"probe-{len(took)}"
            elements = [
                {
                    "type": "CompositeElement",
                    "element_id": f"{rid}-{i}",
                    "text": f"{i} {text}",
                    "metadata": {"filename": f"{rid}.txt", "page_number": 1},
                    "embeddings": [((i * 7 + j) % 13) / 13.0 for j in range(DIM)],
                }
                for i in range(rows_per_doc)
            ]
            t = time.monotonic()
            dest.write(Document(rid, rid, f"{rid}.txt", elements=elements))
            took.append(time.monotonic() - t)
        elapsed = time.monotonic() - begin
        server_cpu = self.cpu_s() - cpu_before - self.idle_cpu_per_s * elapsed
        dest.close()
        counted = self.rows(name)["rows"]
        return {
            "seconds": round(elapsed, 1),
            "docs": len(took),
            "rows_per_doc": rows_per_doc,
            "rows": counted,
            "docs_per_s": round(len(took) / elapsed, 2),
            "rows_per_s": round(counted / elapsed, 1),
            "write_median_ms": round(statistics.median(took) * 1000),
            "server_cpu_net_s": round(server_cpu, 1),
            "server_cpu_ms_per_row": round(server_cpu / counted * 1000, 3) if counted else None,
        }

    def stop(self) -> None:
        self.server.stop()


# --- what crosses between the driver and an actor ------------------------------------------------


def message_sizes(folder: Path) -> dict:
    """Pickled bytes (protocol 5, as Ray serializes) of a 4-document task as the driver ships it
    on a local cluster (paths: the actors read the files) and of the outcomes an actor returns
    once it has written the documents (elements dropped, `worker.Written`), a document each; and
    of the same task with the documents as bytes, as it goes to a cluster without a shared
    file system (the set's mean file size says what that is on average). Built from real
    documents run in this process (Fast, by title, the embedder)."""
    from dataclasses import replace

    from ingestflow.connectors.base import Destination
    from ingestflow.connectors.local import LocalSource
    from ingestflow.runner import worker
    from ingestflow.runner.plan import build_plan

    class Null(Destination):
        def write(self, doc: Any) -> list[str]:
            return []

    plan = build_plan(WORKFLOW)
    worker.init_worker(plan, 1, in_process=True)
    docs = list(LocalSource([folder]).documents())[:4]
    call = worker.BatchCall(tuple(docs))
    results = worker.write_results(call(), Null())
    as_bytes = replace(call, docs=tuple(replace(d, data=d.read_bytes(), path=None) for d in docs))
    worker.close_worker()
    n = len(docs)
    files = [p for p in folder.iterdir() if p.is_file()]
    return {
        "docs": n,
        "task_bytes_per_doc": len(pickle.dumps(call, protocol=5)) // n,
        "outcome_bytes_per_doc": len(pickle.dumps(results, protocol=5)) // n,
        "task_as_bytes_per_doc": len(pickle.dumps(as_bytes, protocol=5)) // n,
        "mean_file_bytes": round(statistics.mean(p.stat().st_size for p in files)),
    }


def wait_probe(sizes: list[int], calls: int = 50) -> list[dict]:
    """The driver's cost of one `ray.wait(list(pending), num_returns=1, timeout=0.2)` (the call
    `_Pool._drain` makes for each finished task) with each of `sizes` tasks in flight (2 an
    actor: here, and at `--machines` x `--cores` actors): on a local Ray cluster of one CPU, an
    actor holds that many queued calls (the first sleeps until it is killed), and each wait is
    timed with one ready object. CPU: this process's, Ray's threads in it included."""
    import ray

    out = []
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:

        @ray.remote(num_cpus=1)
        class Holder:
            def hold(self, seconds: float) -> None:
                time.sleep(seconds)

        done = ray.put(None)
        for size in sizes:
            holder = Holder.remote()  # type: ignore[attr-defined]
            refs = [holder.hold.remote(600.0 if i == 0 else 0.0) for i in range(size)]
            ray.wait([done, *refs], num_returns=1, timeout=0.2)  # warm
            cpu, started = time.process_time(), time.perf_counter()
            for _ in range(calls):
                ready, _ = ray.wait([done, *refs], num_returns=1, timeout=0.2)
                assert ready == [done]
            wall = (time.perf_counter() - started) / calls
            cpu = (time.process_time() - cpu) / calls
            ray.kill(holder)
            out.append(
                {"pending": size, "wall_ms": round(wall * 1e3, 3), "cpu_ms": round(cpu * 1e3, 3)}
            )
    finally:
        ray.shutdown()
    return out


# --- runs and the report -------------------------------------------------------------------------


def run(name: str, folder: Path, work: Path, milvus: Milvus | None, round_: int) -> dict:
    log = work / f"{name.replace(' ', '-')}.log"
    out = work / "out"
    command = ingestflow_run(work, folder, out, work / "ws", *RUNS[name])
    collection = None
    if milvus is not None:  # the same run, its destination the server's fresh collection
        collection = f"bench_{name.replace(' ', '_')}_{round_}"
        connector = milvus.collection(collection, work)
        at = command.index("-o")
        command[at : at + 2] = ["--destination", str(connector)]
    db = work / "ws" / "ingestflow.db"
    result, sampler = timed(command, log, milvus.pid if milvus else None, db)
    record = job_record(log)
    progress = record.get("progress") or {}
    docs = int(progress.get("written") or 0)
    job_s = runtime_s(record)
    row: dict[str, Any] = {"run": name, "round": round_ + 1, **result, "job_s": job_s}
    row["docs"] = docs
    row["failed"] = int(progress.get("failed") or 0)
    row["elements"] = int(progress.get("elements") or 0)
    # seconds inside the stages, summed over documents (no start-up, no model load, no write)
    row["stage_s"] = round(
        sum(float(n.get("seconds") or 0) for n in record.get("node_stats") or []), 1
    )
    row["docs_per_s"] = round(docs / result["wall_s"], 3) if result["wall_s"] else None
    row["docs_per_s_job"] = round(docs / job_s, 3) if job_s else None
    start, end = epoch(record.get("created_at")), epoch(record.get("finished_at"))
    if start and end and sampler.series:
        window = sampler.window(start, end)
        tree = window["driver"] + window["worker"] + window["ray"]
        row["job_cpu_s"] = round(tree, 1)
        row["job_cpu_driver_s"] = round(window["driver"], 2)
        row["job_cpu_workers_s"] = round(window["worker"], 1)
        row["job_cpu_ray_s"] = round(window["ray"], 1)
        row["driver_share"] = round(window["driver"] / tree, 4) if tree else None
        if milvus is not None:
            row["server_cpu_s"] = round(window["server"], 1)
            row["server_cpu_net_s"] = round(
                window["server"] - milvus.idle_cpu_per_s * (end - start), 1
            )
    steady = sampler.steady()
    if steady:  # the same, per document, between 10% and 90% of the documents recorded
        window = sampler.window(*steady)
        n = window["docs"]
        row["steady_s"] = round(steady[1] - steady[0], 1)
        row["steady_docs"] = int(n)
        row["steady_docs_per_s"] = round(n / (steady[1] - steady[0]), 3)
        for kind in ("driver", "worker", "ray"):
            row[f"steady_{kind}_cpu_s_per_doc"] = round(window[kind] / n, 5)
        tree = window["driver"] + window["worker"] + window["ray"]
        row["steady_driver_share"] = round(window["driver"] / tree, 4) if tree else None
        if milvus is not None:
            net = window["server"] - milvus.idle_cpu_per_s * (steady[1] - steady[0])
            row["steady_server_cpu_s_per_doc"] = round(net / n, 5)
    row["message"] = record.get("message")
    row["driver_wrote"] = "wrote every document" in (record.get("message") or "")
    if milvus is not None and collection is not None:
        row.update(milvus.rows(collection))
    else:
        row.update({f"out_{k}": v for k, v in count(out).items()})
    return row


def median(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


STEADY = (
    "steady_docs_per_s", "steady_driver_cpu_s_per_doc", "steady_worker_cpu_s_per_doc",
    "steady_ray_cpu_s_per_doc", "steady_server_cpu_s_per_doc", "steady_driver_share",
)  # fmt: skip


def summary(results: dict[str, list[dict]]) -> dict:
    """Medians per run, and scaling efficiency per executor: on the whole run (wall), the job's
    window (job) and its steady part (steady: between 10% and 90% of the documents)."""
    keys = (
        "wall_s", "job_s", "docs_per_s", "docs_per_s_job", "cpu_s", "cpu_driver_s",
        "cpu_workers_s", "cpu_ray_s", "job_cpu_s", "job_cpu_driver_s", "job_cpu_workers_s",
        "job_cpu_ray_s", "driver_share", "server_cpu_s", "server_cpu_net_s", "peak_rss_mb",
        "steal_s", "rows", "stage_s", "text_bytes_per_row", *STEADY,
    )  # fmt: skip
    runs = {name: {k: median(rows, k) for k in keys} for name, rows in results.items() if rows}
    efficiency = {}
    bases = (("wall", "docs_per_s"), ("job", "docs_per_s_job"), ("steady", "steady_docs_per_s"))
    for executor in ("local", "ray"):
        one, two = runs.get(f"{executor} x1"), runs.get(f"{executor} x2")
        if one and two:
            efficiency[executor] = {
                basis: round(two[key] / (2 * one[key]), 3)
                for basis, key in bases
                if one.get(key) and two.get(key)
            }
    return {"runs": runs, "scaling_efficiency": efficiency}


def costs(results: dict[str, list[dict]], runs: dict[str, dict]) -> dict:
    """What one document costs, from the Ray run with 2 actors (1 if there is none), in the
    run's steady part (between 10% and 90% of the documents recorded: no start-up, no model
    load, no tail): CPU seconds of the actors (w), the driver (d) and Ray's own processes (r),
    rows (k), and the Milvus server's CPU a row (net of its idle rate); the same over the whole
    job window (`*_job`: start-up included) beside them."""
    name = "ray x2" if runs.get("ray x2") else "ray x1"
    base, rows = runs.get(name), results.get(name) or []
    docs = rows[-1]["docs"] if rows else 0
    if not base or not docs or base.get("job_cpu_workers_s") is None:
        return {}
    job = {
        "worker": base["job_cpu_workers_s"] / docs,
        "driver": base["job_cpu_driver_s"] / docs,
        "ray": base["job_cpu_ray_s"] / docs,
    }
    steady = {k: base.get(f"steady_{k}_cpu_s_per_doc") for k in ("worker", "driver", "ray")}
    out: dict[str, Any] = {"from_run": name, "docs": docs, "steady": steady["worker"] is not None}
    for kind in ("worker", "driver", "ray"):
        value = steady[kind] if steady[kind] is not None else job[kind]
        out[f"{kind}_cpu_s_per_doc"] = round(value, 5)
        out[f"{kind}_cpu_s_per_doc_job"] = round(job[kind], 5)
    out["driver_share"] = base.get("steady_driver_share") or base["driver_share"]
    out["driver_share_job"] = base["driver_share"]
    out["stage_s_per_doc"] = round(base["stage_s"] / docs, 4) if base.get("stage_s") else None
    local = runs.get("local x2")
    if local:  # the local executor's main process gets every result back and writes it itself
        value = local.get("steady_driver_cpu_s_per_doc")
        if value is None and local.get("job_cpu_driver_s") is not None:
            value = local["job_cpu_driver_s"] / docs
        out["local_x2_driver_cpu_s_per_doc"] = None if value is None else round(value, 5)
    if base.get("rows"):
        k = base["rows"] / docs
        out["rows_per_doc"] = round(k, 2)
        server = base.get("steady_server_cpu_s_per_doc")
        if server is None and base.get("server_cpu_net_s") is not None:
            server = base["server_cpu_net_s"] / docs
        if server is not None:
            out["server_cpu_ms_per_row"] = round(server / k * 1e3, 3)
        if base.get("text_bytes_per_row") is not None:  # a float32 vector, the text, the ids
            out["row_bytes"] = round(DIM * 4 + base["text_bytes_per_row"] + 2 * 36)
        rate = base.get("steady_docs_per_s") or base.get("docs_per_s_job")
        if rate:
            out["server_rows_per_s_in_run"] = round(rate * k, 1)
    return out


def model(report: dict, machines: int, cores: int) -> dict:
    """The 100-machine model of docs/ray.md, with this run's costs: first what it predicts for
    this machine (checked against the runs' steady documents/s), then for `machines` x `cores`.

    An actor finishes a document every w + L seconds (w: its CPU a document; L: a write's
    latency, during which it waits: the probe's median write); the driver spends d CPU seconds
    a document, Ray's own processes r, the Milvus server s (its CPU a row x rows a document)."""
    c = report.get("costs") or {}
    if not c.get("worker_cpu_s_per_doc"):
        return {}
    w, d, r = c["worker_cpu_s_per_doc"], c["driver_cpu_s_per_doc"], c["ray_cpu_s_per_doc"]
    probe, sizes = report.get("probe") or {}, report.get("message_sizes") or {}
    latency = (probe.get("write_median_ms") or 0) / 1e3
    rows = c.get("rows_per_doc") or 0
    server = (c.get("server_cpu_ms_per_row") or 0) / 1e3 * rows
    here = report["machine"]["cpus"]
    runs = report["runs"]
    check: dict[str, Any] = {"write_latency_s": latency}
    one = 1 / (w + latency)  # one actor, the rest on the other core
    # two actors: each bound by w + L, and all of it sharing this machine's cores
    two = min(2 / (w + latency), here / (w + d + r + server))
    check["predicted_docs_per_s_x1"] = round(one, 3)
    check["predicted_docs_per_s_x2"] = round(two, 3)
    check["predicted_efficiency"] = round(two / (2 * one), 3)
    for n in ("x1", "x2"):
        figures = runs.get(f"ray {n}") or {}
        measured = figures.get("steady_docs_per_s") or figures.get("docs_per_s_job")
        check[f"measured_docs_per_s_{n}"] = measured
        if measured:
            ratio = measured / check[f"predicted_docs_per_s_{n}"]
            check[f"measured_over_predicted_{n}"] = round(ratio, 3)
    eff = report["scaling_efficiency"].get("ray") or {}
    check["measured_efficiency"] = eff.get("steady") or eff.get("job")
    actors = machines * cores
    waits = report.get("wait_probe") or []
    if len(waits) == 2:  # one wait per finished task (a task: 1 to 4 documents; 1 assumed)
        d += max(0.0, waits[1]["cpu_ms"] - waits[0]["cpu_ms"]) / 1e3
    rate = actors / (w + latency)
    link = (sizes.get("task_bytes_per_doc") or 0) + (sizes.get("outcome_bytes_per_doc") or 0)
    as_bytes = (sizes.get("mean_file_bytes") or 0) + (sizes.get("outcome_bytes_per_doc") or 0)
    scale: dict[str, Any] = {
        "machines": machines,
        "cores_per_machine": cores,
        "actors": actors,
        "docs_per_s": round(rate),
        "docs_per_s_if_writes_overlap": round(actors / w),
        "actor_share_waiting_on_writes": round(latency / (w + latency), 3),
        "driver_cpu_s_per_doc": round(d, 5),
        "driver_cores_needed": round(rate * d, 2),
        "machines_one_driver_core_keeps_up_with": round((w + latency) / (d * cores), 1)
        if d
        else None,
        "tasks_in_flight": 2 * actors,
        "driver_link_mb_per_s_paths": round(rate * link / 1e6, 2),
        "driver_link_mb_per_s_bytes": round(rate * as_bytes / 1e6, 1),
        "ray_cores_per_machine": round(r * cores / (w + latency), 2),
    }
    if rows:
        scale["milvus_rows_per_s"] = round(rate * rows)
        scale["milvus_lookups_per_s"] = round(rate * 2)  # two Strong queries a document
        if c.get("row_bytes"):
            scale["milvus_mb_per_s"] = round(rate * rows * c["row_bytes"] / 1e6, 1)
        if server:
            scale["milvus_server_cores_needed"] = round(rate * server, 1)
        seen = c.get("server_rows_per_s_in_run")
        if seen:
            scale["milvus_rows_per_s_over_this_run"] = round(rate * rows / seen)
    return {"check_here": check, "at_scale": scale}


def table(summary_: dict, milvus: bool) -> str:
    """The runs' medians as a Markdown table (RESULTS.md's), then the scaling efficiency."""
    heads = ["run", "wall s", "job s", "docs/s", "docs/s job", "docs/s steady", "CPU s"]
    heads += ["driver s", "workers s", "Ray s", "driver % steady", "RSS MiB", "steal s"]
    if milvus:
        heads += ["server CPU s", "net of idle", "rows"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]

    def cell(value: Any, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    for name, r in summary_["runs"].items():
        share = r["steady_driver_share"]
        cells = [name, cell(r["wall_s"]), cell(r["job_s"]), cell(r["docs_per_s"], 2)]
        cells += [cell(r["docs_per_s_job"], 2), cell(r["steady_docs_per_s"], 2), cell(r["cpu_s"])]
        cells += [cell(r["cpu_driver_s"]), cell(r["cpu_workers_s"]), cell(r["cpu_ray_s"])]
        cells += [cell(None if share is None else share * 100, 2)]
        cells += [cell(r["peak_rss_mb"], 0), cell(r["steal_s"])]
        if milvus:
            cells += [cell(r["server_cpu_s"]), cell(r["server_cpu_net_s"]), cell(r["rows"], 0)]
        lines.append("| " + " | ".join(cells) + " |")
    for executor, eff in summary_["scaling_efficiency"].items():
        said = ", ".join(f"{v:.2f} ({basis})" for basis, v in eff.items())
        lines.append(f"scaling efficiency, {executor}: {said}")
    wall = {n: r["wall_s"] for n, r in summary_["runs"].items()}
    if wall.get("ray x2") and wall.get("local x2"):
        lines.append(f"ray x2 / local x2 (wall): {wall['ray x2'] / wall['local x2']:.2f}")
    return "\n".join(lines)


PLACEHOLDER = re.compile(r"<measured: ([^>]+)>")


def field(report: Any, path: str) -> Any:
    """A field of the JSON report by its path: `costs.w`, `runs."ray x2".rows`, `wait_probe[1]`."""
    for part in re.findall(r'"[^"]+"|\[\d+\]|[^.\[\]]+', path):
        report = report[int(part[1:-1])] if part.startswith("[") else report[part.strip('"')]
    return report


def placeholders(report_path: Path) -> None:
    """Each `<measured: FIELD>` of docs/ray.md and RESULTS.md with its value in a --json report
    (those that are not a field are to be written by hand)."""
    report = json.loads(report_path.read_text())
    for doc in (REPO / "docs" / "ray.md", REPO / "benchmarks" / "RESULTS.md"):
        for found in PLACEHOLDER.finditer(doc.read_text()):
            path = " ".join(found.group(1).split())
            try:
                value: Any = field(report, path)
            except (KeyError, IndexError, TypeError, ValueError):
                value = "(by hand)"
            print(f"{doc.relative_to(REPO)}: <measured: {path[:70]}> = {value}")


def use_this_checkout() -> None:
    """This checkout's code in every run and its Ray actors (they inherit PYTHONPATH), whatever
    `.venv`'s editable install points at."""
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--runs", default=",".join(RUNS), help="which runs, comma-separated")
    parser.add_argument("--files", type=int, default=None, help="the bench set's first N files")
    parser.add_argument("--milvus-server", action="store_true", help="write to a Milvus server")
    parser.add_argument(
        "--schema",
        default="minimal",
        choices=("minimal", "recommended"),
        help="the collection's (the test server, Milvus 2.3, takes only the minimal one)",
    )
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="server idle CPU")
    parser.add_argument("--probe-seconds", type=float, default=30.0, help="0: no write probe")
    parser.add_argument("--machines", type=int, default=100, help="the model's cluster")
    parser.add_argument("--cores", type=int, default=16, help="the model's cores a machine")
    parser.add_argument(
        "--no-wait-probe",
        dest="wait_probe",
        action="store_false",
        help="skip timing ray.wait with the model's tasks in flight",
    )
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--placeholders",
        type=Path,
        metavar="REPORT",
        help="run nothing: print the value a --json report gives each <measured: FIELD> of "
        "docs/ray.md and RESULTS.md",
    )
    args = parser.parse_args()
    if args.placeholders:
        placeholders(args.placeholders)
        return
    use_this_checkout()
    names = [n.strip() for n in args.runs.split(",") if n.strip()]
    if unknown := [n for n in names if n not in RUNS]:
        sys.exit(f"bench_ray: unknown runs {unknown}; known: {list(RUNS)}")
    work = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    folder = work / "in"
    folder.mkdir()
    files = inputs(folder, args.copies, args.files)
    cpus = len(os.sched_getaffinity(0))
    set_size = len(bench_docs()[: args.files])
    began = time.monotonic()
    report: dict[str, Any] = {
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": cpus, "python": platform.python_version(), "load": os.getloadavg()},
        "command": " ".join(sys.argv),
        "files": files,
        "copies": args.copies,
        "destination": f"milvus server ({args.schema} schema)"
        if args.milvus_server
        else "local JSON",
    }
    print(f"# {files} files ({args.copies} x {set_size}), {cpus} CPUs, {platform.python_version()}")
    results: dict[str, list[dict]] = {name: [] for name in names}
    milvus: Milvus | None = None
    try:
        if args.milvus_server:
            milvus = Milvus(work, args.schema)
            idle = milvus.measure_idle(args.idle_seconds)
            report["milvus"] = {"ready_s": milvus.ready_s, "idle_cpu_per_s": idle}
            print(f"# Milvus server ready in {milvus.ready_s} s, idle CPU {idle} s/s", flush=True)
        for round_ in range(args.rounds):
            order = names if round_ % 2 == 0 else list(reversed(names))
            for name in order:
                result = run(name, folder, work, milvus, round_)
                results[name].append(result)
                print(json.dumps(result), flush=True)
        report["results"] = results
        report.update(summary(results))
        report["costs"] = costs(results, report["runs"])
        if milvus is not None:
            digests = {r["rows_digest"] for rows in results.values() for r in rows}
            counts = {(r["rows"], r["distinct_ids"]) for rows in results.values() for r in rows}
            report["same_rows"] = len(digests) == 1 and all(a == b for a, b in counts)
            if args.probe_seconds > 0:
                per_doc = round(report["costs"].get("rows_per_doc") or 22)
                report["probe"] = milvus.probe(args.probe_seconds, per_doc)
                print("# probe " + json.dumps(report["probe"]), flush=True)
        report["message_sizes"] = message_sizes(folder)
        if args.wait_probe:
            report["wait_probe"] = wait_probe([4, 2 * args.machines * args.cores])
            print("# wait probe " + json.dumps(report["wait_probe"]), flush=True)
        report["model"] = model(report, args.machines, args.cores)
    finally:
        if milvus is not None:
            milvus.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report["duration_min"] = round((time.monotonic() - began) / 60, 1)
    print(table(report, milvus is not None))
    if "same_rows" in report:
        print(f"every run wrote the same rows: {report['same_rows']}")
    print("costs a document: " + json.dumps(report["costs"]))
    print("message sizes: " + json.dumps(report["message_sizes"]))
    for part, figures in report["model"].items():
        print(f"model, {part}: " + json.dumps(figures))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"# written to {args.json}")
    if milvus is not None and not report.get("same_rows"):
        sys.exit("bench_ray: the runs did not write the same rows")


if __name__ == "__main__":
    main()
