"""OCR engines of High Res compared: tesseract against PP-OCRv6 (rapidocr's bundled models).

    .venv/bin/python benchmarks/bench_ocr.py [--sets tables tables_1x pages scans] [--json]
        [--pages-per-document 2]

Per set and engine: word accuracy (the share of the reference's words read, as a multiset;
letters and digits, case ignored), character error rate (below), and seconds per image, wall
and CPU (one process, one thread, models loaded before timing; on a shared machine the CPU
figure is the steadier one).

Sets:
- `tables`, `tables_1x`: the table crops of `benchmarks/fidelity/make_tables.py` at 192 and 96
  dpi (generate them first), against the HTML they were rendered from (exact). Tesseract runs as
  High Res runs it on a table crop without text layer (`page_words.ocr_words`: rules erased, small
  crops enlarged, `--psm 6`);
- `pages`: the English pages of `../shared/corpus/docs/docling` rendered at High Res's 200 dpi as
  if scanned, against their own text layer (exact). Tesseract runs as the library's whole-page
  OCR (`OCRAgentTesseract.get_layout_from_image`, its zoom to the best text height included);
- `scans`: the corpus's photographed pages with a published text, against that text (the
  library's own tesseract reading of them: a reference that favours tesseract, not ground truth);
  `english-and-korean.png` shows what PP-OCRv6 does with Korean, which it does not read.

Character error rate, independent of reading order (the engines order a table's words
differently): reference and OCR words are paired, equal words first, then each remaining
reference word with its closest remaining OCR word (Levenshtein); CER = (sum of the pairs'
edit distances + characters of unpaired reference words + characters of unpaired OCR words) /
characters of the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
CORPUS = REPO.parent / "shared" / "corpus"
FIDELITY = REPO / "benchmarks" / "fidelity" / "out"
IF = CORPUS / "expected/unstructured-ingest/test/integration/chunkers/assets"
SETS = ("tables", "tables_1x", "pages", "scans")
#: docling's PDFs that are not English (Korean; right to left) are left out of `pages`.
NOT_ENGLISH = ("normal_4pages", "right_to_left_01")
SCANS = [
    ("img/layout-parser-paper-with-table.jpg", IF / "layout-parser-paper-with-table.jpg.json"),
    ("img/embedded-images-tables.jpg", IF / "embedded-images-tables.jpg.json"),
    ("img/english-and-korean.png", IF / "english-and-korean.png.json"),
]
Image = Any  # a PIL image


def cer(reference: list[str], found: list[str]) -> float:
    """Order-independent character error rate of `found` words against `reference` words."""
    from rapidfuzz.distance import Levenshtein

    total = sum(len(w) for w in reference)
    if not total:
        return 0.0
    left = list(found)
    missed = []
    for word in reference:
        if word in left:
            left.remove(word)
        else:
            missed.append(word)
    errors = 0
    for word in missed:
        if not left:
            errors += len(word)
            continue
        best = min(range(len(left)), key=lambda i: Levenshtein.distance(word, left[i]))
        errors += Levenshtein.distance(word, left.pop(best))
    errors += sum(len(w) for w in left)
    return errors / total


def tables(folder: str) -> list[tuple[str, Image, str]]:
    """(name, image, reference text) of the rendered table crops."""
    from PIL import Image as PILImage

    from ingestflow.quality import table_rows

    manifest = json.loads((FIDELITY / "manifest.json").read_text())
    out = []
    for table in manifest["tables"]:
        truth = (FIDELITY / table["truth"]).read_text()
        text = " ".join(c for row in table_rows(truth) for c in row)
        image = PILImage.open(FIDELITY / table[folder]["file"]).convert("RGB")
        out.append((table["name"], image, text))
    return out


def pages(most: int) -> list[tuple[str, Image, str]]:
    """(name, 200 dpi rendering, text layer) of docling's English pages, at most `most` pages
    with text of each document."""
    import pypdfium2 as pdfium

    from ingestflow.stages.partition.hires import DPI

    out = []
    for path in sorted((CORPUS / "docs" / "docling").glob("*.pdf")):
        if path.stem in NOT_ENGLISH:
            continue
        pdf = pdfium.PdfDocument(str(path))
        taken = 0
        for number, page in enumerate(pdf, 1):
            text = page.get_textpage().get_text_range()
            if len(text.split()) < 20:
                continue  # a page with no text layer to compare with
            if taken == most:
                break
            taken += 1
            image = page.render(scale=DPI / 72).to_pil().convert("RGB")
            out.append((f"{path.stem} p{number}", image, text))
        pdf.close()
    return out


def scans() -> list[tuple[str, Image, str]]:
    """(name, image, published text) of the corpus's photographed pages."""
    from PIL import Image as PILImage

    out = []
    for rel, expected in SCANS:
        text = " ".join(e["text"] for e in json.loads(expected.read_text()))
        out.append((rel, PILImage.open(CORPUS / "docs" / rel).convert("RGB"), text))
    return out


def tesseract_table(image: Image) -> str:
    import numpy as np

    from ingestflow.stages.partition.hires.page_words import ocr_words as _ocr_words

    gray = np.asarray(image.convert("L"))
    words = _ocr_words(gray, "eng", max(1.0, 1600 / image.width))
    return " ".join(w.text for w in words)


def tesseract_page(image: Image, language: str = "eng") -> str:
    from unstructured.partition.utils.ocr_models.tesseract_ocr import OCRAgentTesseract

    regions = OCRAgentTesseract(language).get_layout_from_image(image)
    return " ".join(str(t) for t in regions.texts)


def rapidocr(image: Image) -> str:
    from ingestflow.stages.partition.hires import ocr

    return " ".join(w.text for w in ocr.read_words(image))


def cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (tesseract runs as a child)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_set(
    cases: list[tuple[str, Image, str]], engines: dict[str, Callable[[Image], str]]
) -> dict[str, Any]:
    """Per engine: mean word accuracy, mean CER and seconds per image, and the per-case rows."""
    from ingestflow.quality import word_recall, words

    result: dict[str, Any] = {"images": len(cases), "engines": {}, "cases": []}
    rows = {name: [] for name in engines}
    for name, image, reference in cases:
        row: dict[str, Any] = {"case": name}
        for engine, read in engines.items():
            start, cpu = time.perf_counter(), cpu_seconds()
            text = read(image)
            seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
            accuracy = word_recall(reference, text)
            error = cer(words(reference), words(text))
            rows[engine].append((accuracy, error, seconds, cpu))
            row[engine] = {
                "word_acc": round(accuracy, 3),
                "cer": round(error, 3),
                "cpu_s": round(cpu, 2),
            }
        result["cases"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    for engine, values in rows.items():
        n = max(len(values), 1)
        result["engines"][engine] = {
            "word_accuracy": round(sum(v[0] for v in values) / n, 3),
            "cer": round(sum(v[1] for v in values) / n, 3),
            "s_per_image": round(sum(v[2] for v in values) / n, 2),
            "cpu_s_per_image": round(sum(v[3] for v in values) / n, 2),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--json", action="store_true", help="print the per-case rows too")
    parser.add_argument(
        "--pages-per-document", type=int, default=2, help="`pages`: at most this many per PDF"
    )
    args = parser.parse_args()
    os.environ["OMP_THREAD_LIMIT"] = "1"  # one tesseract thread, as in a High Res worker
    from ingestflow.stages.partition import configure_unstructured
    from ingestflow.stages.partition.hires import ocr

    configure_unstructured()
    ocr.get_engine()  # loaded before timing
    if {"tables", "tables_1x"} & set(args.sets) and not (FIDELITY / "manifest.json").is_file():
        sys.exit("run benchmarks/fidelity/make_tables.py first (the table crops are missing)")
    if {"pages", "scans"} & set(args.sets) and not CORPUS.is_dir():
        sys.exit(f"the corpus is not at {CORPUS}")
    out = {}
    for name in args.sets:
        if name in ("tables", "tables_1x"):
            cases = tables("images" if name == "tables" else "images_1x")
            engines = {"tesseract": tesseract_table, ocr.RAPIDOCR: rapidocr}
        elif name == "pages":
            engines = {"tesseract": tesseract_page, ocr.RAPIDOCR: rapidocr}
            cases = pages(args.pages_per_document)
        else:
            cases = scans()
            engines = {
                "tesseract": tesseract_page,
                "tesseract eng+kor": lambda image: tesseract_page(image, "eng+kor"),
                ocr.RAPIDOCR: rapidocr,
            }
        result = run_set(cases, engines)
        if not args.json:
            result.pop("cases")
        out[name] = result
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
