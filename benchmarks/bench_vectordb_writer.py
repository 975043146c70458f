"""Rows per second of the vectordb writer against a plain pymilvus insert of the same rows.

Both sides write into fresh collections with the same schema (SPEC.md's recommended one) in one
Milvus Lite database, in the same process and run. The plain side inserts the very rows the writer
would build (converted beforehand, outside the timing) in batches of `--batch-size`; the writer
side calls `write(doc)` per document, which builds and checks the rows, looks up what is stored,
inserts in batches of the same size and deletes stale rows. Shapes:

  one document   all rows in one document (the writer's per-document overhead, once)
  N documents    the rows spread over `--docs` documents (the usual case)
  rewrite        the same N documents written again (every row replaced, as a re-run does)

Each figure is the median of `--repeat` runs, each into fresh collections.

    .venv/bin/python benchmarks/bench_vectordb_writer.py
    .venv/bin/python benchmarks/bench_vectordb_writer.py --rows 10000 --docs 100 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import SecretStr
from rich.console import Console
from rich.table import Table

from ingestflow.connectors.vectordb import VectorDBConfig
from ingestflow.connectors.vectordb_destination import VectorDBDestination, create_collection
from ingestflow.elements import Document


def make_documents(rows: int, docs: int, dim: int, seed: int = 7) -> list[Document]:
    """`rows` elements with SPEC.md's metadata and random unit vectors, over `docs` documents."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((rows, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    per_doc = -(-rows // docs)
    out = []
    for d in range(docs):
        elements = []
        for i in range(d * per_doc, min(rows, (d + 1) * per_doc)):
            elements.append(
                {
                    "type": "NarrativeText",
                    "element_id": f"{d:05d}-{i:07d}-" + "0" * 16,
                    "text": f"Element {i} of document {d}. " + "Lorem ipsum dolor sit amet. " * 6,
                    "metadata": {
                        "filename": f"doc-{d}.pdf",
                        "filetype": "application/pdf",
                        "languages": ["eng"],
                        "page_number": 1 + i % 40,
                        "is_extracted": "true",
                        "coordinates": {
                            "points": [[0.0, 0.0], [0.0, 12.0], [300.0, 12.0], [300.0, 0.0]],
                            "system": "PixelSpace",
                            "layout_width": 1700,
                            "layout_height": 2200,
                        },
                        "data_source": {
                            "url": f"file:///corpus/doc-{d}.pdf",
                            "record_locator": {
                                "protocol": "file",
                                "remote_file_path": f"/corpus/doc-{d}.pdf",
                            },
                        },
                        "entities": {"items": [{"entity": "ACME", "type": "ORGANIZATION"}]},
                    },
                    "embeddings": vectors[i].tolist(),
                }
            )
        out.append(
            Document(
                id=str(d), record_id=f"record-{d:05d}", filename=f"doc-{d}.pdf", elements=elements
            )
        )
    return out


class Bench:
    """One Milvus Lite database; a fresh collection per measurement."""

    def __init__(self, folder: Path, dim: int, batch_size: int) -> None:
        self.db = str(folder / "bench.db")
        self.dim = dim
        self.batch_size = batch_size
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        name = f"bench_{self.count}"
        create_collection(self.db, name, dim=self.dim, schema="recommended")
        return name

    def destination(self, collection: str) -> VectorDBDestination:
        config = VectorDBConfig(
            user="", uri=self.db, db_name="", password=SecretStr(""), collection_name=collection
        )
        dest = VectorDBDestination(config, batch_size=self.batch_size)
        dest.precheck(self.dim)
        return dest

    def plain(self, docs: list[Document]) -> float:
        """Seconds for pymilvus `insert` of the writer's rows, in batches."""
        from pymilvus import MilvusClient

        collection = self.fresh()
        dest = self.destination(collection)
        assert dest._builder is not None
        rows = [row for doc in docs for row in dest._builder.build(doc)[0]]
        dest.close()
        client = MilvusClient(self.db)
        start = time.perf_counter()
        for at in range(0, len(rows), self.batch_size):
            client.insert(collection, rows[at : at + self.batch_size])
        elapsed = time.perf_counter() - start
        self._check(client, collection, len(rows))
        client.close()
        return elapsed

    def writer(self, docs: list[Document], rewrite: bool = False) -> float:
        """Seconds for `write(doc)` of every document (the second pass when `rewrite`)."""
        from pymilvus import MilvusClient

        collection = self.fresh()
        dest = self.destination(collection)
        if rewrite:
            for doc in docs:
                dest.write(doc)
        start = time.perf_counter()
        for doc in docs:
            dest.write(doc)
        elapsed = time.perf_counter() - start
        dest.close()
        client = MilvusClient(self.db)
        self._check(client, collection, sum(len(d.elements) for d in docs))
        client.close()
        return elapsed

    @staticmethod
    def _check(client: Any, collection: str, expected: int) -> None:
        got = client.query(collection, filter="", output_fields=["count(*)"])[0]["count(*)"]
        assert got == expected, f"{collection}: {got} rows, expected {expected}"


def median_of(repeat: int, run: Callable[[], float]) -> float:
    return statistics.median(run() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--docs", type=int, default=100, help="documents in the N-document shape")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    one = make_documents(args.rows, 1, args.dim)
    many = make_documents(args.rows, args.docs, args.dim)
    with tempfile.TemporaryDirectory(prefix="bench-vectordb-") as tmp:
        bench = Bench(Path(tmp), args.dim, args.batch_size)
        bench.writer(many[:2])  # warm-up: server start, imports
        plain = median_of(args.repeat, lambda: bench.plain(many))
        shapes = [
            ("one document", median_of(args.repeat, lambda: bench.writer(one))),
            (f"{args.docs} documents", median_of(args.repeat, lambda: bench.writer(many))),
            (
                f"rewrite {args.docs} documents",
                median_of(args.repeat, lambda: bench.writer(many, rewrite=True)),
            ),
        ]

    table = Table(
        title=f"vectordb writer vs plain pymilvus insert: {args.rows:,} rows x {args.dim}-d, "
        f"batches of {args.batch_size}, Milvus Lite, median of {args.repeat}"
    )
    for column in ("what", "seconds", "rows/s", "vs plain"):
        table.add_column(column, justify="left" if column == "what" else "right")
    table.add_row("plain pymilvus insert", f"{plain:.2f}", f"{args.rows / plain:,.0f}", "100%")
    for label, seconds in shapes:
        table.add_row(
            f"writer, {label}",
            f"{seconds:.2f}",
            f"{args.rows / seconds:,.0f}",
            f"{plain / seconds:.0%}",
        )
    console = Console()
    console.print(table)
    console.print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )


if __name__ == "__main__":
    main()
