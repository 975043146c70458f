"""Rotated and skewed scans under High Res: orientation detectors, then words read per rotation.

    .venv/bin/python benchmarks/bench_rotation.py [--parts detect words rotate] [--osd] [--baseline]
        [--limit N] [--json]

The set: the corpus's scans and photos (`img/*`, the scanned PDFs `loremipsum-flat.pdf` and
`single_table.pdf`) and three born-digital pages rendered to images (200 dpi), each turned
0/90/180/270 degrees clockwise and skewed ±3 degrees (turned with PIL, white fill); the
detectors also get 90/180/270 with a skew of ±3 degrees.

- `detect`: per variant, what `orientation.straighten` finds (skew levelled, then the orientation
  model) against the turn that was applied, with its time; the model alone on the page as given;
  `--osd` adds tesseract's OSD (`--psm 0`, many seconds a page) for comparison.
- `words`: each variant through High Res end to end (an image file for the corpus's images and
  the rendered pages, an image-only PDF for the scanned PDFs); word accuracy is the share of the
  upright variant's words (as a multiset, `quality.word_recall`) that the turned one reads.
  `--baseline` also runs each variant with the straightening switched off (the code before).
- `rotate`: PDF pages shown turned by `/Rotate` 90/180/270, set in the file (rewritten) and
  appended as an incremental update (a viewer's save): the set's pages as image-only PDFs (200
  dpi), a drawn letter (four lines at the top, the middle of the page white), and the
  born-digital pages with their text layers; word accuracy against the same page without
  `/Rotate`. Blank image-only pages (with and without `/Rotate`) must give no elements, succeed,
  and be named blank in the document's warnings.
Models are loaded before timing; times are seconds on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
CORPUS = REPO.parent / "shared" / "corpus" / "docs"
#: (document, page index, saved as): the corpus's scans and photos, and born-digital pages
PAGES = [
    ("img/embedded-images-tables.jpg", 0, "png"),
    ("img/english-and-korean.png", 0, "png"),
    ("img/layout-parser-paper-with-table.jpg", 0, "png"),
    ("pdf/loremipsum-flat.pdf", 0, "pdf"),
    ("pdf/single_table.pdf", 0, "pdf"),
    ("pdf/layout-parser-paper-fast.pdf", 0, "png"),
    ("pdf/multi-column.pdf", 0, "png"),
    ("pdf/list-item-example.pdf", 0, "png"),
]
#: (clockwise quarter turn, clockwise skew in degrees) applied to the upright page
VARIANTS = [(0, 0.0), (90, 0.0), (180, 0.0), (270, 0.0), (0, 3.0), (0, -3.0)]
#: The detectors also see pages both turned and skewed.
DETECT_VARIANTS = [*VARIANTS, (90, 3.0), (180, -3.0), (270, -3.0)]
LANGUAGES = {"img/english-and-korean.png": ["eng", "kor"]}


def page_image(rel: str, index: int) -> Any:
    """The upright page as a PIL RGB image (PDF pages rendered at High Res's 200 dpi)."""
    from PIL import Image

    path = CORPUS / rel
    if path.suffix.lower() != ".pdf":
        with Image.open(path) as image:
            return image.convert("RGB")
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return pdf[index].render(scale=200 / 72).to_pil().convert("RGB")
    finally:
        pdf.close()


def turned(image: Any, rotation: int, skew: float) -> Any:
    """`image` turned clockwise by `rotation`, then by `skew` degrees (white corners)."""
    from PIL import Image

    image = image.rotate(-rotation, expand=True)
    if skew:
        image = image.rotate(
            -skew, expand=True, fillcolor=(255, 255, 255), resample=Image.Resampling.BICUBIC
        )
    return image


def osd(image: Any) -> int | None:
    """Tesseract's OSD: clockwise degrees that turn the page upright (None when it fails)."""
    import unstructured_pytesseract as tess

    try:
        found = tess.image_to_osd(image, output_type=tess.Output.DICT, config="--psm 0")
    except Exception:  # "Too few characters" on sparse pages
        return None
    return int(found["rotate"])


def detect(limit: int | None, with_osd: bool) -> dict:
    """Per detector: right answers and seconds per page over every variant."""
    from ingestflow.stages.partition.hires import orientation

    orientation.get_session()
    rows = []
    for rel, index, _ in PAGES[:limit]:
        page = page_image(rel, index)
        for rotation, skew in DETECT_VARIANTS:
            image = turned(page, rotation, skew)
            want = (360 - rotation) % 360
            start = time.perf_counter()
            turn, _ = orientation.straighten(image)  # as High Res runs it: level, then classify
            seconds = time.perf_counter() - start
            start = time.perf_counter()
            alone, probability = orientation.classify(image)  # the model on the page as given
            alone_s = time.perf_counter() - start
            got, skew_found = (turn.rotation, turn.skew) if turn else (0, 0.0)
            row = {
                "page": rel,
                "rotation": rotation,
                "skew": skew,
                "found": got,
                "ok": got == want,
                "skew_found": skew_found,
                "skew_error": round(abs(skew_found + skew), 2),
                "s": round(seconds, 3),
                "model_alone": alone,
                "model_alone_ok": alone == want,
                "model_alone_p": round(probability, 3),
                "model_alone_s": round(alone_s, 3),
            }
            if with_osd:
                start = time.perf_counter()
                row["osd"] = osd(image)
                row["osd_ok"] = row["osd"] == want
                row["osd_s"] = round(time.perf_counter() - start, 3)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    summary = {
        "straighten": _share(rows, "ok", "s"),
        "model_alone": _share(rows, "model_alone_ok", "model_alone_s"),
        "model_alone_min_p_right": min(r["model_alone_p"] for r in rows if r["model_alone_ok"]),
        "skew_error_max": max(r["skew_error"] for r in rows),
    }
    if with_osd:
        summary["osd"] = _share(rows, "osd_ok", "osd_s")
    upright = [r for r in rows if not r["rotation"] and not r["skew"]]
    summary["upright_check_s_median"] = statistics.median(r["s"] for r in upright)
    return {"summary": summary, "rows": rows}


def _share(rows: list[dict], ok: str, seconds: str) -> dict:
    return {
        "right": sum(r[ok] for r in rows),
        "of": len(rows),
        "s_median": statistics.median(r[seconds] for r in rows),
    }


def words(limit: int | None, baseline: bool) -> dict:
    """Per page and variant: word accuracy against the upright variant, with and without the
    straightening."""
    from ingestflow.elements import Document
    from ingestflow.quality import word_recall
    from ingestflow.stages.partition.hires import orientation

    stages: dict[tuple[str, ...], Any] = {}
    rows = []
    modes = ["straightened", "baseline"] if baseline else ["straightened"]
    with tempfile.TemporaryDirectory(prefix="bench-rotation-") as folder:
        for rel, index, kind in PAGES[:limit]:
            languages = LANGUAGES.get(rel, ["eng"])
            key = tuple(languages)
            if key not in stages:
                stages[key] = _stage(languages)
            page = page_image(rel, index)
            upright_text: str | None = None
            for rotation, skew in VARIANTS:
                path = Path(folder) / f"page-{rotation}-{skew}.{kind}"
                image = turned(page, rotation, skew)
                image.save(path, **({"resolution": 200.0} if kind == "pdf" else {}))
                for mode in modes:
                    start = time.perf_counter()
                    with _switched_off(orientation) if mode == "baseline" else _nothing():
                        doc = Document(path.name, path.name, path.name, path=path)
                        elements = stages[key].process(doc).elements
                    seconds = time.perf_counter() - start
                    text = " ".join(e["text"] for e in elements)
                    if upright_text is None:
                        upright_text = text
                    meta = elements[0]["metadata"] if elements else {}
                    row = {
                        "page": rel,
                        "rotation": rotation,
                        "skew": skew,
                        "mode": mode,
                        "word_accuracy": round(word_recall(upright_text, text), 3),
                        "page_rotation": meta.get("page_rotation", 0),
                        "page_skew": meta.get("page_skew", 0.0),
                        "seconds": round(seconds, 2),
                    }
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    summary: dict[str, Any] = {}
    for mode in modes:
        for rotation, skew in VARIANTS:
            got = [
                r["word_accuracy"]
                for r in rows
                if r["mode"] == mode and (r["rotation"], r["skew"]) == (rotation, skew)
            ]
            summary[f"{mode} {rotation}/{skew:+g}"] = {
                "mean": round(statistics.mean(got), 3),
                "min": min(got),
            }
    return {"summary": summary, "rows": rows}


#: /Rotate variants: (degrees, appended as an incremental update)
ROTATE_VARIANTS = [(90, False), (180, False), (270, False), (90, True), (180, True), (270, True)]
LETTER = [
    "Dear Mr Hansen,",
    "the shipment left Bergen on Monday",
    "and reaches the harbour on Friday.",
    "Yours, the harbour office",
]


def letter_image() -> Any:
    """A letter page at 200 dpi: four lines at the top, the middle of the page white."""
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("RGB", (1700, 2200), "white")
    draw, font = ImageDraw.Draw(page), ImageFont.load_default(size=40)
    for index, line in enumerate(LETTER):
        draw.text((150, 150 + 56 * index), line, fill="black", font=font)
    return page


def with_rotate(source: Path, target: Path, rotation: int, incremental: bool) -> Path:
    """`source` (one page) shown turned by `rotation`: /Rotate set and the file rewritten, or
    appended as an incremental update (pypdf: the page again, an xref section, /Prev)."""
    if incremental:
        from pypdf import PdfWriter

        writer = PdfWriter(str(source), incremental=True)
        writer.pages[0].rotate(rotation)
        with target.open("wb") as fh:
            writer.write(fh)
        return target
    import pikepdf

    with pikepdf.open(source) as pdf:
        pdf.pages[0].Rotate = rotation
        pdf.save(target)
    return target


def rotate_sources(folder: Path, limit: int | None) -> list[tuple[str, str, Path]]:
    """(name, kind, one-page upright PDF): the set's pages image-only, the letter, and the
    born-digital pages with their text layers."""
    import pikepdf

    out: list[tuple[str, str, Path]] = []
    for number, (rel, index, _) in enumerate(PAGES[:limit]):
        path = folder / f"scan-{number}.pdf"
        page_image(rel, index).save(path, resolution=200.0)
        out.append((rel, "image-only", path))
        if rel.endswith(".pdf") and rel not in ("pdf/loremipsum-flat.pdf", "pdf/single_table.pdf"):
            text = folder / f"text-{number}.pdf"
            with pikepdf.open(CORPUS / rel) as pdf:
                del pdf.pages[index + 1 :]
                del pdf.pages[:index]
                pdf.save(text)
            out.append((rel, "text layer", text))
    letter = folder / "letter.pdf"
    letter_image().save(letter, resolution=200.0)
    out.append(("drawn letter", "image-only", letter))
    return out


def rotate(limit: int | None) -> dict:
    """Per page and /Rotate variant: word accuracy against the page without /Rotate; blank
    pages: no elements, success, a note."""
    from PIL import Image

    from ingestflow.elements import Document
    from ingestflow.quality import word_recall

    stage = _stage(["eng"])
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-rotate-") as scratch:
        folder = Path(scratch)
        for name, kind, source in rotate_sources(folder, limit):
            doc = stage.process(Document(source.name, source.name, source.name, path=source))
            upright = " ".join(e["text"] for e in doc.elements)
            layer = _layer_text(source) if kind == "text layer" else None
            if layer is not None:  # the page's own words, beside its upright reading's
                rows.append(
                    {
                        "page": name,
                        "kind": "text layer, upright",
                        "layer_accuracy": round(word_recall(layer, upright), 3),
                    }
                )
            for rotation, incremental in ROTATE_VARIANTS:
                path = with_rotate(source, folder / "turned.pdf", rotation, incremental)
                start = time.perf_counter()
                try:
                    doc = stage.process(Document(path.name, path.name, path.name, path=path))
                    text, error = " ".join(e["text"] for e in doc.elements), None
                    turns = sorted({e["metadata"].get("page_rotation", 0) for e in doc.elements})
                except Exception as exc:  # a failed page is a figure here, not a stop
                    text, error, turns = "", str(exc), []
                row = {
                    "page": name,
                    "kind": kind,
                    "rotate": rotation,
                    "incremental": incremental,
                    "word_accuracy": round(word_recall(upright, text), 3),
                    "layer_accuracy": None if layer is None else round(word_recall(layer, text), 3),
                    "page_rotation": turns,
                    "error": error,
                    "seconds": round(time.perf_counter() - start, 2),
                }
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        blank = folder / "blank.pdf"
        Image.new("RGB", (1700, 2200), "white").save(blank, resolution=200.0)
        blanks: list[dict[str, Any]] = []
        for rotation, incremental in [(0, False), (90, False), (270, True)]:
            path = with_rotate(blank, folder / f"blank-{rotation}.pdf", rotation, incremental)
            try:
                doc = stage.process(Document(path.name, path.name, path.name, path=path))
                ok = not doc.elements and any("page 1 is blank" in w for w in doc.warnings)
                blanks.append({"rotate": rotation, "incremental": incremental, "ok": ok})
            except Exception as exc:  # the failure this part is there to catch
                blanks.append({"rotate": rotation, "incremental": incremental, "error": str(exc)})
    summary: dict[str, Any] = {}
    for kind in ("image-only", "text layer"):
        for rotation in (90, 180, 270):
            got = [
                r["word_accuracy"] for r in rows if (r["kind"], r.get("rotate")) == (kind, rotation)
            ]
            if got:
                summary[f"{kind} /Rotate {rotation}"] = {
                    "pages": len(got),
                    "mean": round(statistics.mean(got), 3),
                    "min": min(got),
                }
    turned = [r for r in rows if "rotate" in r]
    for kind in ("text layer, upright", "text layer"):
        got = [r["layer_accuracy"] for r in rows if r["kind"] == kind]
        if got:
            summary[f"{kind}: share of the text layer's words"] = {
                "mean": round(statistics.mean(got), 3),
                "min": min(got),
            }
    summary["every turned page >= 0.95"] = all(r["word_accuracy"] >= 0.95 for r in turned)
    summary["failed"] = [f"{r['page']} {r['rotate']}: {r['error']}" for r in turned if r["error"]]
    summary["blank pages"] = blanks
    return {"summary": summary, "rows": rows}


def _layer_text(path: Path) -> str:
    """The text layer of the PDF's first page, as pdfium reads it."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        page = pdf[0]
        textpage = page.get_textpage()
        text = textpage.get_text_range()
        textpage.close()
        page.close()
        return text
    finally:
        pdf.close()


def _stage(languages: list[str]) -> Any:
    from ingestflow.spec.settings import UnstructuredPartitionSettings
    from ingestflow.stages.base import RunContext
    from ingestflow.stages.partition import UnstructuredPartitionStage

    settings = UnstructuredPartitionSettings(
        strategy="hi_res", infer_table_structure=True, ocr_languages=languages
    )
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", settings, RunContext())
    stage.open()
    return stage


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _switched_off:
    """The straightening switched off (every page taken as upright): the code before."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def __enter__(self) -> None:
        self.saved = self.module.straighten
        self.module.straighten = lambda image: (None, image)

    def __exit__(self, *exc: object) -> None:
        self.module.straighten = self.saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["detect", "words"])
    parser.add_argument("--osd", action="store_true", help="also time tesseract's OSD")
    parser.add_argument("--baseline", action="store_true", help="also run without straightening")
    parser.add_argument("--limit", type=int, default=None, help="only the first N pages")
    parser.add_argument("--json", action="store_true", help="print every row as JSON")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"this benchmark needs the corpus at {CORPUS}")
    out: dict[str, Any] = {}
    if "detect" in args.parts:
        out["detect"] = detect(args.limit, args.osd)
    if "words" in args.parts:
        out["words"] = words(args.limit, args.baseline)
    if "rotate" in args.parts:
        out["rotate"] = rotate(args.limit)
    if not args.json:
        out = {part: result["summary"] for part, result in out.items()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
