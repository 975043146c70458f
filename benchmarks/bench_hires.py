"""High Res and Auto on the third-party corpus: quality against published outputs, and speed.

    .venv/bin/python benchmarks/bench_hires.py [--quality] [--speed] [--partition FILE ...]

Quality (one process): tables found and cell-text recall against the library's published hi_res
outputs with table structure; word recall of scans and photos against their published text; word
recall and element-type counts of text PDFs against the library's own Fast reading. Speed: the
README's `ingestflow run` with 2 workers over the corpus's text PDFs and its scans, hi_res and
Auto, pages per second end to end (process start to exit). Beside each run, `machine_s`: the
seconds a fixed CPU workload took just before it (`machine`), so that a slow run on a busy VM
can be told from a slower program (the same code has read up to 55 % slower at another hour of the
same day: benchmarks/RESULTS.md, "From a fresh clone").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
EXPECTED = CORPUS / "expected"
IF = EXPECTED / "unstructured-ingest/test/integration/chunkers/assets"
TS = EXPECTED / (
    "unstructured/test_unstructured_ingest/expected-structured-output/"
    "local-single-file-with-pdf-infer-table-structure"
)
#: Text similarity at which a cell counts as found in the "near" cell recall (the published
#: outputs are OCR too: `42121` for 42.121, `sNO` for 2).
NEAR = 0.8
#: (document, published output with text_as_html)
TABLE_CASES = [
    ("img/layout-parser-paper-with-table.jpg", TS / "layout-parser-paper-with-table.jpg.json"),
    ("img/layout-parser-paper-with-table.jpg", IF / "layout-parser-paper-with-table.jpg.json"),
    ("img/embedded-images-tables.jpg", IF / "embedded-images-tables.jpg.json"),
    ("pdf/embedded-images-tables.pdf", IF / "embedded-images-tables.pdf.json"),
]
#: Scans and photos with a published text (the library's own OCR of them)
SCAN_CASES = [
    ("img/english-and-korean.png", IF / "english-and-korean.png.json", ["eng", "kor"]),
    (
        "img/layout-parser-paper-with-table.jpg",
        TS / "layout-parser-paper-with-table.jpg.json",
        None,
    ),
    ("img/embedded-images-tables.jpg", IF / "embedded-images-tables.jpg.json", None),
]
TEXT_PDFS = [
    "pdf/layout-parser-paper-fast.pdf",
    "pdf/multi-column-2p.pdf",
    "pdf/list-item-example.pdf",
    "pdf/embedded-images-tables.pdf",
    "pdf/DA-1p-with-duplicate-pages.pdf",
    "pdf/korean-text-with-tables.pdf",
    "pdf/multi-column.pdf",
]
SCANS = [
    "pdf/loremipsum-flat.pdf",
    "pdf/single_table.pdf",
    "pdf/pdf-with-ocr-text.pdf",
    "img/layout-parser-paper-with-table.jpg",
    "img/embedded-images-tables.jpg",
    "img/english-and-korean.png",
]


def stage(strategy: str, languages: list[str] | None = None):
    from ingestflow.spec.settings import UnstructuredPartitionSettings
    from ingestflow.stages.base import RunContext
    from ingestflow.stages.partition import UnstructuredPartitionStage

    settings = UnstructuredPartitionSettings(
        strategy=strategy,
        infer_table_structure=True,
        ocr_languages=languages or ["eng"],
    )
    s = UnstructuredPartitionStage("Partitioner", "unstructured_api", settings, RunContext())
    s.open()
    return s


def partition(s, rel: str) -> list[dict]:
    from ingestflow.elements import Document

    path = CORPUS / "docs" / rel
    return s.process(Document(rel, rel, path.name, path=path)).elements


def best_recalls(expected: list[dict], found: list[dict], similarity: float) -> list[float]:
    """Per expected table, the cell recall of the found table that matches it best."""
    from ingestflow.quality import cell_recall

    return [
        max(
            (
                cell_recall(
                    e["metadata"]["text_as_html"], f["metadata"].get("text_as_html"), similarity
                )
                for f in found
            ),
            default=0.0,
        )
        for e in expected
    ]


def quality() -> dict:
    from ingestflow.quality import word_recall

    hi = stage("hi_res")
    fast = stage("fast")
    out: dict = {"tables": [], "scans": [], "text_pdfs": []}
    for rel, expected_path in TABLE_CASES:
        expected = [e for e in json.loads(expected_path.read_text()) if e["type"] == "Table"]
        found = [e for e in partition(hi, rel) if e["type"] == "Table"]

        recalls, near = best_recalls(expected, found, 1.0), best_recalls(expected, found, NEAR)
        out["tables"].append(
            {
                "document": rel,
                "expected": expected_path.name + " (" + expected_path.parent.name + ")",
                "tables_expected": len(expected),
                "tables_found": min(len(found), len(expected)),
                "cell_recall": round(sum(recalls) / max(len(recalls), 1), 3),
                f"cell_recall_near_{NEAR}": round(sum(near) / max(len(near), 1), 3),
            }
        )
    for rel, expected_path, languages in SCAN_CASES:
        s = stage("hi_res", languages) if languages else hi
        text = " ".join(e["text"] for e in json.loads(expected_path.read_text()))
        found = " ".join(e["text"] for e in partition(s, rel))
        out["scans"].append({"document": rel, "word_recall": round(word_recall(text, found), 3)})
    for rel in TEXT_PDFS:
        f = partition(fast, rel)
        h = partition(hi, rel)
        out["text_pdfs"].append(
            {
                "document": rel,
                "word_recall_vs_fast": round(
                    word_recall(_as_read(" ".join(e["text"] for e in f)), _joined(h)), 3
                ),
                "word_recall_vs_raw_fast": round(
                    word_recall(" ".join(e["text"] for e in f), _joined(h)), 3
                ),
                "types_fast": dict(Counter(e["type"] for e in f)),
                "types_hi_res": dict(Counter(e["type"] for e in h)),
            }
        )
    return out


def _joined(elements: list[dict]) -> str:
    return " ".join(e["text"] for e in elements)


def _as_read(fast_text: str) -> str:
    """Fast's text as High Res cleans its own (ligatures, accents, line-end hyphens), less
    pdfminer's `(cid:N)` placeholders, which name a glyph code, not a word: High Res shows the
    glyph it reads there (a minus sign) or U+FFFD. `word_recall_vs_raw_fast` keeps Fast's text
    as it is."""
    import re

    from ingestflow.stages.partition.hires.clean_text import clean

    return clean(re.sub(r"\(cid:\d+\)", " ", fast_text))


def pages(paths: list[Path]) -> int:
    from pypdf import PdfReader

    return sum(len(PdfReader(str(p)).pages) if p.suffix == ".pdf" else 1 for p in paths)


def machine(rounds: int = 3) -> float:
    """Seconds of a fixed single-core workload (compression and a Python loop), the best of
    `rounds`: the machine's speed at this moment, to read beside a timing."""
    import zlib

    data = bytes(range(256)) * 40_000  # 10 MB
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        zlib.compress(data, 6)
        total = 0
        for number in range(4_000_000):
            total += number % 7
        best = min(best, time.perf_counter() - started)
    return round(best, 3)


def speed() -> list[dict]:
    rows = []
    for label, rels in (("text PDFs", TEXT_PDFS), ("scans and photos", SCANS)):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "in"
            folder.mkdir()
            paths = []
            for rel in rels:
                target = folder / Path(rel).name
                target.write_bytes((CORPUS / "docs" / rel).read_bytes())
                paths.append(target)
            n = pages(paths)
            for workflow in ("examples/hi-res-tables.json", "examples/auto.json"):
                reference = machine()
                started = time.perf_counter()
                subprocess.run(
                    [
                        str(Path(sys.executable).with_name("ingestflow")),  # this venv's
                        "run",
                        workflow,
                        "-i",
                        str(folder),
                        "-o",
                        str(Path(tmp) / "out"),
                        "--workers",
                        "2",
                        "--workspace",
                        str(Path(tmp) / "ws"),
                    ],
                    cwd=REPO,
                    check=True,
                    capture_output=True,
                )
                wall = time.perf_counter() - started
                rows.append(
                    {
                        "set": label,
                        "workflow": workflow,
                        "pages": n,
                        "wall_s": round(wall, 1),
                        "pages_per_s": round(n / wall, 2),
                        "machine_s": reference,
                    }
                )
                print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quality", action="store_true")
    parser.add_argument("--speed", action="store_true")
    parser.add_argument(
        "--partition",
        nargs="+",
        metavar="FILE",
        help="only run High Res over these corpus files (docs/...), in this process, and print "
        "nothing: for paired timing of the whole process",
    )
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"the corpus is not at {CORPUS}")
    if args.partition:
        s = stage("hi_res")
        for rel in args.partition:
            partition(s, rel)
        return
    result: dict = {}
    if args.quality or not args.speed:
        result["quality"] = quality()
    if args.speed or not args.quality:
        result["speed"] = speed()
    print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
