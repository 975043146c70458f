"""The tuning loop: a full traced run, then the same workflow with one chunker setting changed.

    .venv/bin/python benchmarks/bench_tuning.py [--strategy hi_res|fast] [--workers 2]

Four PDFs from the third-party corpus, Partitioner → chunk_by_title → local embedder, run the
way a user does (`ingestflow run ... --trace`, process start to exit). Prints the seconds of the
full run, of the re-run after changing `max_characters` (partition outputs from the cache), and
of the same re-run with `--no-cache` (what it cost before), and checks the re-run's output equals
the uncached one once element ids (random UUIDs) are renumbered.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO.parent / "shared" / "corpus" / "docs" / "pdf"
FILES = [
    "multi-column-2p.pdf",
    "layout-parser-paper-fast.pdf",
    "korean-text-with-tables.pdf",
    "embedded-images-tables.pdf",
]
EXE = str(REPO / ".venv" / "bin" / "ingestflow")


def workflow(strategy: str, max_characters: int) -> dict:
    return {
        "name": "tuning",
        "workflow_type": "custom",
        "workflow_nodes": [
            {
                "name": "Partitioner",
                "type": "partition",
                "subtype": "unstructured_api",
                "settings": {"strategy": strategy},
            },
            {
                "name": "Chunker",
                "type": "chunk",
                "subtype": "chunk_by_title",
                "settings": {
                    "max_characters": max_characters,
                    "new_after_n_chars": max_characters * 3 // 4,
                },
            },
            {
                "name": "Embedder",
                "type": "embed",
                "subtype": "ibm",
                "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
            },
        ],
    }


def run(tmp: Path, body: dict, out: str, ws: str, workers: int, *flags: str) -> float:
    wf = tmp / f"{out}.json"
    wf.write_text(json.dumps(body))
    started = time.perf_counter()
    args = [EXE, "run", str(wf), "-i", str(tmp / "in"), "-o", str(tmp / out), "--json"]
    args += ["--workspace", str(tmp / ws), "--workers", str(workers), *flags]
    done = subprocess.run(args, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{out}: exit {done.returncode}: {done.stderr[-2000:]}")
    return seconds


def canonical(path: Path) -> list:
    """A file's elements with element ids (random UUIDs) renumbered by first appearance:
    element_id, parent_id, table_id, and those inside orig_elements."""
    ids: dict[str, str] = {}

    def fix(elements: list) -> list:
        out = []
        for e in elements:
            e = json.loads(json.dumps(e))
            e["element_id"] = ids.setdefault(e["element_id"], f"id{len(ids)}")
            meta = e.get("metadata", {})
            for key in ("parent_id", "table_id"):
                if meta.get(key):
                    meta[key] = ids.setdefault(meta[key], f"id{len(ids)}")
            if meta.get("orig_elements"):
                raw = json.loads(zlib.decompress(base64.b64decode(meta["orig_elements"])))
                meta["orig_elements"] = fix(raw)
            out.append(e)
        return out

    return fix(json.loads(path.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="hi_res")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "in").mkdir()
        for file in FILES:
            shutil.copy(DOCS / file, tmp / "in" / file)
        a, b = workflow(args.strategy, 800), workflow(args.strategy, 400)
        full = run(tmp, a, "full", "ws", args.workers, "--trace")
        rerun = run(tmp, b, "rerun", "ws", args.workers, "--trace")
        uncached = run(tmp, b, "uncached", "ws-fresh", args.workers, "--trace", "--no-cache")
        differ = [
            f
            for f in FILES
            if canonical(tmp / "rerun" / f"{f}.json") != canonical(tmp / "uncached" / f"{f}.json")
        ]
        same = not differ
    print(f"{len(FILES)} PDFs, {args.strategy}, {args.workers} workers")
    print(f"full traced run:                       {full:6.1f} s")
    print(f"chunker changed, from the cache:       {rerun:6.1f} s")
    print(f"chunker changed, no cache (as before): {uncached:6.1f} s")
    print(
        f"re-run output equals the uncached run: {same}"
        + (f" (differ: {differ})" if differ else "")
    )


if __name__ == "__main__":
    main()
