"""Table fidelity of High Res (`infer_table_structure`): TEDS and TEDS-struct per table set.

    .venv/bin/python benchmarks/bench_fidelity.py [--sets images images_1x pdfs pdfs_turned
        docling corpus scanned figures]
        [--limit N] [--json] [--languages eng ...] [--structure model|rules|auto]

`--structure` picks the table-structure builder (`INGESTFLOW_TABLE_STRUCTURE`, docs/hi_res.md).

Sets (see benchmarks/fidelity/README.md):
- `images`: the table crops rendered by `benchmarks/fidelity/make_tables.py` (generated first
  when missing or out of date) at 192 dpi, scored against the HTML they were rendered from;
  `images_1x`: the same crops at 96 dpi (a screenshot);
- `pdfs`: the same generator's born-digital PDFs (a table on a page with running text);
  `pdfs_turned`: each of them stored turned, as a landscape page is (its content drawn a quarter
  turned, `/Rotate 270` showing it upright), and with `/Rotate 90` alone (shown sideways, which
  the library turns back): the same tables expected where they are on the upright page;
- `docling`: the 9 PDFs of `../shared/corpus/docs/docling`, scored against the tables of docling's
  own outputs (`expected/docling/*.json`; the bar to reach, not ground truth: docling's tables
  are a model's reading too); the table of contents docling types `document_index` is left out;
- `corpus`: the corpus's scans and PDF with a published hi_res table (the library's own OCR and
  table model: a reference, not ground truth), as in `bench_hires.py`;
- `scanned`: the corpus's two scanned tables against hand transcriptions (`fidelity/scanned/`);
- `figures`: corpus files with figures, prose and lists and no table (any table found is false).

Each found Table is matched to an expected one on the same page by the overlap of their boxes
(intersection over union ≥ `MIN_IOU`, best pairs first); where the reference has no box (the
published outputs) the found table of that page that scores best is taken. An expected table with
no match scores 0. Per set: tables expected and found, extra tables (found, matched to nothing),
mean TEDS and TEDS-struct over the expected tables (unfound ones count 0) and over the found
ones, and seconds per page of High Res (models loaded before timing; a first untimed call per
file kind pays the library's lazy imports).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
CORPUS = REPO.parent / "shared" / "corpus"
EXPECTED = CORPUS / "expected"
FIDELITY = REPO / "benchmarks" / "fidelity"
#: Overlap (intersection over union of the table boxes) from which a found table is the one
#: expected there: low, because a table read without its header rows or caption is still that
#: table (its score says how well it was read).
MIN_IOU = 0.2
SETS = ("images", "images_1x", "pdfs", "pdfs_turned", "docling", "corpus", "scanned", "figures")
#: The corpus's scanned tables, transcribed by hand from the images (benchmarks/fidelity/scanned/).
SCANNED = ["img/layout-parser-paper-with-table.jpg", "img/embedded-images-tables.jpg"]
#: Pages with figures, prose, lists or two columns and no table: every table found is a false one.
FIGURE_FILES = [
    "pdf/embedded-images.pdf",
    "pdf/multi-column-2p.pdf",
    "pdf/loremipsum-flat.pdf",
    "pdf/list-item-example.pdf",
    "docling/picture_classification.pdf",
    "docling/amt_handbook_sample.pdf",
    "img/english-and-korean.png",
]
_TS = EXPECTED / (
    "unstructured/test_unstructured_ingest/expected-structured-output/"
    "local-single-file-with-pdf-infer-table-structure"
)
_IF = EXPECTED / "unstructured-ingest/test/integration/chunkers/assets"
#: (document, published output with text_as_html): bench_hires.py's table cases
CORPUS_CASES = [
    ("img/layout-parser-paper-with-table.jpg", _TS / "layout-parser-paper-with-table.jpg.json"),
    ("img/layout-parser-paper-with-table.jpg", _IF / "layout-parser-paper-with-table.jpg.json"),
    ("img/embedded-images-tables.jpg", _IF / "embedded-images-tables.jpg.json"),
    ("pdf/embedded-images-tables.pdf", _IF / "embedded-images-tables.pdf.json"),
]

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 as shares of the page (origin top left)


@dataclass
class Expected:
    """One table the set expects: where, and its HTML."""

    id: str
    page: int
    box: Box | None
    html: str
    features: list[str] = field(default_factory=list)


@dataclass
class Case:
    """One file of a set and the tables expected in it."""

    path: Path
    tables: list[Expected]


# --- the sets ------------------------------------------------------------------------------------
def rendered(kind: str) -> list[Case]:
    """The generated table set: `images` (PNG crops at 192 dpi), `images_1x` (96 dpi) or `pdf`."""
    if str(FIDELITY) not in sys.path:
        sys.path.insert(0, str(FIDELITY))
    from make_tables import FORMAT, render

    manifest_path = FIDELITY / "out" / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    if manifest.get("format") != FORMAT:
        print("generating the table set (benchmarks/fidelity/make_tables.py)", file=sys.stderr)
        manifest = render(FIDELITY / "out")
    cases = []
    for t in manifest["tables"]:
        rendition = t.get(kind)
        if rendition is None:
            continue  # a table not printed to PDF
        truth = (FIDELITY / "out" / t["truth"]).read_text(encoding="utf-8")
        w, h = rendition["size"]
        x0, y0, x1, y1 = rendition["table_box"]
        expected = Expected(
            t["name"],
            rendition.get("page", 1),
            (x0 / w, y0 / h, x1 / w, y1 / h),
            truth,
            t["features"],
        )
        cases.append(Case(FIDELITY / "out" / rendition["file"], [expected]))
    return cases


def turned_pdfs() -> list[Case]:
    """`pdfs`, each PDF stored turned in two ways (written to `fidelity/out/turned/`)."""
    from pypdf import PdfWriter, Transformation

    folder = FIDELITY / "out" / "turned"
    folder.mkdir(parents=True, exist_ok=True)
    cases = []
    for case in rendered("pdf"):
        for how in ("landscape", "sideways"):
            writer = PdfWriter(clone_from=case.path)
            for page in writer.pages:
                if how == "sideways":
                    page.rotation = 90
                    continue
                width, height = float(page.mediabox.width), float(page.mediabox.height)
                page.add_transformation(Transformation().rotate(-90).translate(0, width))
                page.mediabox.upper_right = (height, width)
                page.cropbox.upper_right = (height, width)
                page.rotation = 270
            path = folder / f"{case.path.stem}-{how}.pdf"
            writer.write(path)
            cases.append(Case(path, case.tables))
    return cases


def docling() -> list[Case]:
    """docling's 9 PDFs and the tables of its outputs (label `table`), boxes flipped to top-left."""
    from ingestflow.quality.teds import docling_table_html

    cases = []
    for pdf in sorted((CORPUS / "docs" / "docling").glob("*.pdf")):
        document = json.loads((EXPECTED / "docling" / f"{pdf.stem}.json").read_text())
        tables = []
        for item in document.get("tables", []):
            if item.get("label") != "table":
                continue  # document_index: a table of contents, scored by nobody here
            prov = item["prov"][0]
            page = int(prov["page_no"])
            size = document["pages"][str(page)]["size"]
            w, h = float(size["width"]), float(size["height"])
            b = prov["bbox"]
            if b.get("coord_origin", "BOTTOMLEFT") == "BOTTOMLEFT":
                box = (b["l"] / w, (h - b["t"]) / h, b["r"] / w, (h - b["b"]) / h)
            else:
                box = (b["l"] / w, b["t"] / h, b["r"] / w, b["b"] / h)
            tables.append(
                Expected(f"{pdf.stem}{item['self_ref'][1:]}", page, box, docling_table_html(item))
            )
        cases.append(Case(pdf, tables))
    return cases


def corpus() -> list[Case]:
    """The corpus's published hi_res tables (no boxes: matched by score on their page)."""
    cases = []
    for rel, published in CORPUS_CASES:
        elements = json.loads(published.read_text())
        tables = [
            Expected(
                f"{rel} ({published.parent.name}) #{n}",
                int(e["metadata"].get("page_number") or 1),
                None,
                e["metadata"].get("text_as_html") or "",
            )
            for n, e in enumerate(x for x in elements if x["type"] == "Table")
        ]
        cases.append(Case(CORPUS / "docs" / rel, tables))
    return cases


def scanned() -> list[Case]:
    """The corpus's scanned tables against their hand transcriptions (no boxes)."""
    cases = []
    for rel in SCANNED:
        path = CORPUS / "docs" / rel
        truth = (FIDELITY / "scanned" / f"{path.stem}.html").read_text(encoding="utf-8")
        cases.append(Case(path, [Expected(f"{rel} (transcribed)", 1, None, truth)]))
    return cases


def figures() -> list[Case]:
    """The corpus's pages without a table (FIGURE_FILES): any table found there is extra."""
    return [Case(CORPUS / "docs" / rel, []) for rel in FIGURE_FILES]


# --- running and scoring -------------------------------------------------------------------------
class Checks:
    """The regions High Res checked for a table the layout model did not call one
    (`table_finding`'s DEBUG records), kept per file."""

    def __init__(self) -> None:
        import logging

        self.records: list[dict[str, Any]] = []
        handler = logging.Handler()
        # logging passes a single dict argument as `args` itself
        handler.emit = lambda record: self.records.append(dict(record.args))  # type: ignore
        log = logging.getLogger("ingestflow.stages.partition.hires.tables.finding")
        log.setLevel(logging.DEBUG)
        log.addHandler(handler)

    def take(self) -> list[dict[str, Any]]:
        out, self.records = self.records, []
        return out


def stage(languages: list[str]) -> Any:
    """The partition stage High Res runs in (tables, coordinates), opened: models loaded."""
    from ingestflow.spec.settings import UnstructuredPartitionSettings
    from ingestflow.stages.base import RunContext
    from ingestflow.stages.partition import UnstructuredPartitionStage

    settings = UnstructuredPartitionSettings(
        strategy="hi_res", infer_table_structure=True, coordinates=True, ocr_languages=languages
    )
    s = UnstructuredPartitionStage("Partitioner", "unstructured_api", settings, RunContext())
    s.open()
    return s


def partition(s: Any, path: Path) -> list[dict[str, Any]]:
    from ingestflow.elements import Document

    return s.process(Document(path.name, path.name, path.name, path=path)).elements


def pages(path: Path) -> int:
    if path.suffix.lower() != ".pdf":
        return 1
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return len(pdf)
    finally:
        pdf.close()


def found_tables(elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Table elements: page, box (shares of the page) and HTML."""
    out = []
    for e in elements:
        if e.get("type") != "Table":
            continue
        m = e.get("metadata") or {}
        box = None
        c = m.get("coordinates")
        if c and c.get("points") and c.get("layout_width") and c.get("layout_height"):
            xs = [p[0] for p in c["points"]]
            ys = [p[1] for p in c["points"]]
            w, h = float(c["layout_width"]), float(c["layout_height"])
            box = (min(xs) / w, min(ys) / h, max(xs) / w, max(ys) / h)
        out.append(
            {"page": int(m.get("page_number") or 1), "box": box, "html": m.get("text_as_html")}
        )
    return out


def iou(a: Box | None, b: Box | None) -> float:
    if a is None or b is None:
        return 0.0
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def shape(html: str | None) -> str:
    """`rows×cells` of a table's HTML (empty when there is no table)."""
    from ingestflow.quality.teds import table_tree

    tree = table_tree(html)
    if tree is None:
        return ""
    return f"{len(tree.children)}x{sum(len(r.children) for r in tree.children)}"


def score(
    case: Case, found: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per expected table its match and scores, and the found tables left unmatched."""
    from ingestflow.quality import cell_recall
    from ingestflow.quality.teds import teds, teds_struct

    pairs = []
    for i, e in enumerate(case.tables):
        for j, f in enumerate(found):
            if f["page"] != e.page:
                continue
            if e.box is None:  # no box to match by: the found table that reads best
                pairs.append((teds(f["html"], e.html), 1.0, i, j))
            else:
                overlap = iou(e.box, f["box"])
                if overlap >= MIN_IOU:
                    pairs.append((overlap, overlap, i, j))
    pairs.sort(key=lambda p: -p[0])
    match: dict[int, tuple[int, float]] = {}
    used: set[int] = set()
    for _, overlap, i, j in pairs:
        if i not in match and j not in used:
            match[i] = (j, overlap)
            used.add(j)
    rows = []
    for i, e in enumerate(case.tables):
        j, overlap = match.get(i, (None, 0.0))
        html = found[j]["html"] if j is not None else None
        rows.append(
            {
                "table": e.id,
                "page": e.page,
                "found": j is not None,
                "iou": round(overlap, 3) if e.box is not None and j is not None else None,
                "teds": round(teds(html, e.html), 4) if j is not None else 0.0,
                "teds_struct": round(teds_struct(html, e.html), 4) if j is not None else 0.0,
                "cell_recall": round(cell_recall(e.html, html or ""), 4) if j is not None else 0.0,
                "shape_expected": shape(e.html),
                "shape_found": shape(html) if j is not None else "",
                "features": e.features,
            }
        )
    return rows, [f for j, f in enumerate(found) if j not in used]


def mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def run_set(
    name: str, cases: list[Case], s: Any, cache: dict[Path, tuple], checks: Checks
) -> dict[str, Any]:
    from collections import Counter

    tables: list[dict[str, Any]] = []
    extras: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    n_pages = 0
    seconds = 0.0
    for case in cases:
        if case.path not in cache:
            checks.take()
            started = time.perf_counter()
            elements = partition(s, case.path)
            took = time.perf_counter() - started
            cache[case.path] = (elements, took, pages(case.path), checks.take())
            seconds += took
            n_pages += cache[case.path][2]
            files.append(
                {
                    "file": case.path.name,
                    "pages": cache[case.path][2],
                    "seconds": round(took, 2),
                    "types": dict(Counter(e["type"] for e in elements)),
                    "checked": cache[case.path][3],
                }
            )
        elements = cache[case.path][0]
        rows, unmatched = score(case, found_tables(elements))
        for row in rows:
            row["file"] = case.path.name
        tables.extend(rows)
        extras.extend(
            {"file": case.path.name, "page": f["page"], "shape_found": shape(f["html"])}
            for f in unmatched
        )
        print(
            f"{name}: {case.path.name}: "
            + ", ".join(f"{r['table']} teds={r['teds']:.3f}/{r['teds_struct']:.3f}" for r in rows)
            + (f" (+{len(unmatched)} extra)" if unmatched else "")
            + "".join(
                f" [checked {c['region']}: {'table' if c['table'] else 'no'}]"
                for c in cache[case.path][3]
            )
            + ("" if rows else "no table expected"),
            file=sys.stderr,
            flush=True,
        )
    found = [t for t in tables if t["found"]]
    checked = [c for case in cases for c in cache[case.path][3]]
    return {
        "set": name,
        "files": len(cases),
        "pages": n_pages,
        "tables_expected": len(tables),
        "tables_found": len(found),
        "extra_tables": len(extras),
        "regions_checked": len(checked),
        "regions_read_as_tables": sum(1 for c in checked if c["table"]),
        "teds": mean([t["teds"] for t in tables]),
        "teds_struct": mean([t["teds_struct"] for t in tables]),
        "cell_recall": mean([t["cell_recall"] for t in tables]),
        "teds_found": mean([t["teds"] for t in found]),
        "teds_struct_found": mean([t["teds_struct"] for t in found]),
        "seconds": round(seconds, 2),
        "s_per_page": round(seconds / n_pages, 2) if n_pages else None,
        "tables": tables,
        "extras": extras,
        "files_detail": files,
    }


def structure_mode() -> str:
    from ingestflow.stages.partition.hires.tables.model import structure_mode as mode

    return mode()


def machine() -> dict[str, Any]:
    import os

    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--limit", type=int, default=0, help="at most N files per set (0: all)")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.add_argument("--languages", nargs="+", default=["eng"], help="ocr_languages")
    parser.add_argument(
        "--structure",
        choices=("model", "rules", "auto"),
        help="the table-structure builder (INGESTFLOW_TABLE_STRUCTURE; default: High Res's)",
    )
    args = parser.parse_args()
    if args.structure:
        import os

        os.environ["INGESTFLOW_TABLE_STRUCTURE"] = args.structure
    needs_corpus = {"docling", "corpus", "scanned", "figures"} & set(args.sets)
    if needs_corpus and not CORPUS.is_dir():
        sys.exit(f"the sets {sorted(needs_corpus)} need the corpus at {CORPUS}")
    builders = {
        "images": lambda: rendered("images"),
        "images_1x": lambda: rendered("images_1x"),
        "pdfs": lambda: rendered("pdf"),
        "pdfs_turned": turned_pdfs,
        "docling": docling,
        "corpus": corpus,
        "scanned": scanned,
        "figures": figures,
    }
    chosen = {name: builders[name]() for name in args.sets}
    if args.limit:
        chosen = {name: cases[: args.limit] for name, cases in chosen.items()}

    started = time.perf_counter()
    s = stage(args.languages)
    load = time.perf_counter() - started
    warm: set[str] = set()  # the library imports per file kind on its first call: untimed
    for cases in chosen.values():
        for case in cases:
            kind = "pdf" if case.path.suffix.lower() == ".pdf" else "image"
            if kind not in warm:
                partition(s, case.path)
                warm.add(kind)
    cache: dict[Path, tuple] = {}
    checks = Checks()
    results = [run_set(name, cases, s, cache, checks) for name, cases in chosen.items()]
    out = {
        "machine": machine(),
        "command": " ".join(["benchmarks/bench_fidelity.py", *sys.argv[1:]]),
        "model_load_s": round(load, 2),
        "structure": structure_mode(),
        "min_iou": MIN_IOU,
        "sets": results,
    }
    if args.json:
        print(json.dumps(out, indent=1, ensure_ascii=False))
        return
    print(
        f"High Res table fidelity, builder {out['structure']} "
        f"(models loaded in {out['model_load_s']} s)"
    )
    print(
        "| set | files | pages | tables found / expected | extra | TEDS | TEDS-struct |"
        " TEDS (found) | TEDS-struct (found) | cell recall | regions checked / read as tables"
        " | s/page |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['set']} | {r['files']} | {r['pages']} | {r['tables_found']} / "
            f"{r['tables_expected']} | {r['extra_tables']} | {r['teds']} | {r['teds_struct']} | "
            f"{r['teds_found']} | {r['teds_struct_found']} | {r['cell_recall']} | "
            f"{r['regions_checked']} / "
            f"{r['regions_read_as_tables']} | {r['s_per_page']} |"
        )


if __name__ == "__main__":
    main()
