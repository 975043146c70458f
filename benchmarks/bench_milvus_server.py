"""Soak of the test suite's Milvus server: does it stay up, and how fast does the writer replace?

Starts one standalone server the way the tests do (`tests/milvus_server.py`), creates a minimal
collection, then for `--seconds` writes a document every `--every` seconds through the vectordb
destination (50 record ids in turn, 20 elements each: from the second round on every write is a
replace), and prints the start time, the writes, the failures, the replace latency and whether the
server is still up. Run from the repository root:

    .venv/bin/python benchmarks/bench_milvus_server.py --seconds 600
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pydantic import SecretStr

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO)]  # this checkout's code, and its tests' launcher

from ingestflow.connectors.vectordb import VectorDBConfig  # noqa: E402
from ingestflow.connectors.vectordb_destination import VectorDBDestination, create_collection  # noqa: E402
from ingestflow.elements import Document  # noqa: E402
from tests.milvus_server import ROOT_PASSWORD, MilvusServer  # noqa: E402


def document(record_id: str, size: int) -> Document:
    """`size` elements with 4-dimensional vectors."""
    elements = [
        {
            "type": "NarrativeText",
            "element_id": f"{record_id}-{i}",
            "text": f"element {i} of {record_id}",
            "metadata": {},
            "embeddings": [1.0, 0.0, 0.5, float(i)],
        }
        for i in range(size)
    ]
    return Document(record_id, record_id, f"{record_id}.txt", elements=elements)


def main() -> None:
    """Run the soak and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--every", type=float, default=2.0)
    args = parser.parse_args()
    cache = Path.home() / ".cache" / "ingestflow-tests"
    with tempfile.TemporaryDirectory(prefix="milvus-soak-") as base:
        server = MilvusServer(Path(base), cache)
        started = time.monotonic()
        server.start()
        print(f"server ready in {time.monotonic() - started:.1f} s at {server.uri}", flush=True)
        try:
            create_collection(server.uri, "soak", 4, "minimal", user="root", password=ROOT_PASSWORD)
            config = VectorDBConfig(
                user="root",
                uri=server.uri,
                db_name="",
                password=SecretStr(ROOT_PASSWORD),
                collection_name="soak",
            )
            dest = VectorDBDestination(config)
            dest.precheck(4)
            took: list[float] = []
            failures = 0
            begin = time.monotonic()
            while time.monotonic() - begin < args.seconds:
                rid = f"r{(len(took) + failures) % 50}"  # 50 ids in turn
                t = time.monotonic()
                try:
                    dest.write(document(rid, 20))
                    took.append(time.monotonic() - t)
                except Exception as exc:  # count and go on: the soak asks whether it recovers
                    failures += 1
                    print(f"{time.monotonic() - begin:6.0f} s: write failed: {exc}", flush=True)
                assert server.process is not None
                if server.process.poll() is not None:
                    print(f"server exited ({server.process.returncode})", flush=True)
                    break
                time.sleep(args.every)
            alive = server.process is not None and server.process.poll() is None
            dest.close()
            print(
                f"{time.monotonic() - begin:.0f} s: {len(took)} writes, {failures} failed, "
                f"replace median {statistics.median(took) * 1000:.0f} ms, "
                f"max {max(took) * 1000:.0f} ms; server up: {alive}"
            )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
