"""Render the fidelity benchmark's table set: tables written in HTML (so their structure is known)
rendered by headless Chromium into PNG crops, and a few of them printed to PDF.

    .venv/bin/python benchmarks/fidelity/make_tables.py [--out benchmarks/fidelity/out]

Writes, under the output folder (git-ignored):
- `images/NAME.png`: the table alone, on white with a 16 px margin, at 2 device pixels per CSS
  pixel (a 15 px font is 11 pt at 192 dpi, close to High Res's 200 dpi page renders), and
  `images_1x/NAME.png`, the same at 1 (a 96 dpi screenshot);
- `pdfs/NAME.pdf`: a US Letter page with a heading, a caption, the table and a paragraph,
  printed by Chromium (born-digital: the text layer is the table's own text);
- `truth/NAME.html`: the table's HTML, the ground truth for both;
- `manifest.json`: per table its features, files and the table's box (pixels in each PNG, PDF
  points from the top left of the page in the PDF).

Deterministic: the tables are fixed text (the dense numbers come from a seeded generator), and
the PDFs are saved with their dates removed and a content-derived document id, so the same
Chromium and fonts give the same files.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHROMIUM = Path("/usr/bin/chromium")
#: The PNG crops: folder → device pixels per CSS pixel. 2 is about 192 dpi (a 15 px font is 11 pt,
#: close to High Res's 200 dpi page renders); 1 is a 96 dpi screenshot, as tables are often
#: cropped from screens and papers.
SCALES = {"images": 2, "images_1x": 1}
#: Version of the output's layout: the benchmark regenerates a set written by another version.
FORMAT = 2
#: CSS pixels around the table in a crop.
MARGIN = 16
#: US Letter in CSS pixels (96 per inch); Chromium prints with no margins of its own.
PAGE_W, PAGE_H = 816, 1056

Cell = str | tuple[str, dict[str, int]]


@dataclass
class Table:
    """One table of the set: its HTML, the style it is drawn in and what makes it hard."""

    name: str
    features: list[str]
    html: str
    style: str = "grid"
    font: str = "serif"
    size: int = 15
    width: int | None = None  # CSS px; None: as wide as its content
    pdf: bool = False
    extra_css: str = ""
    notes: list[str] = field(default_factory=list)


def cell(text: str, tag: str = "td", **spans: int) -> str:
    attrs = "".join(f' {k}="{v}"' for k, v in spans.items() if v > 1)
    return f"<{tag}{attrs}>{text}</{tag}>"


def row(cells: list[Cell], tag: str = "td") -> str:
    out = []
    for c in cells:
        if isinstance(c, tuple):
            out.append(cell(html.escape(c[0], quote=False), tag, **c[1]))
        else:
            out.append(cell(html.escape(c, quote=False), tag))
    return "<tr>" + "".join(out) + "</tr>"


def table(head: list[list[Cell]], body: list[list[Cell]]) -> str:
    parts = ["<table>"]
    if head:
        parts.append("<thead>" + "".join(row(r, "th") for r in head) + "</thead>")
    parts.append("<tbody>" + "".join(row(r) for r in body) + "</tbody>")
    parts.append("</table>")
    return "".join(parts)


def numbers(rng: random.Random, n: int, low: float, high: float, digits: int) -> list[str]:
    return [f"{rng.uniform(low, high):.{digits}f}" for _ in range(n)]


# --- the tables ----------------------------------------------------------------------------------
def tables() -> list[Table]:
    rng = random.Random(22)
    out: list[Table] = []

    out.append(
        Table(
            "simple_grid",
            ["ruled grid"],
            table(
                [["Country", "Capital", "Population (M)"]],
                [
                    ["France", "Paris", "68.2"],
                    ["Japan", "Tokyo", "124.5"],
                    ["Kenya", "Nairobi", "55.1"],
                    ["Chile", "Santiago", "19.6"],
                ],
            ),
            pdf=True,
        )
    )
    out.append(
        Table(
            "booktabs_results",
            ["rules at top, under the header and at the bottom only", "dense numbers"],
            table(
                [["Method", "Precision", "Recall", "F1", "Params"]],
                [
                    ["Baseline", "0.712", "0.655", "0.682", "11M"],
                    ["+ augmentation", "0.744", "0.690", "0.716", "11M"],
                    ["+ pretraining", "0.801", "0.752", "0.776", "23M"],
                    ["Ours (small)", "0.823", "0.779", "0.800", "8M"],
                    ["Ours (large)", "0.857", "0.812", "0.834", "41M"],
                ],
            ),
            style="booktabs",
            pdf=True,
        )
    )
    out.append(
        Table(
            "no_rules",
            ["no rules at all"],
            table(
                [["Item", "Quantity", "Unit price", "Total"]],
                [
                    ["Notebook", "12", "2.50", "30.00"],
                    ["Pencil", "40", "0.35", "14.00"],
                    ["Stapler", "2", "7.90", "15.80"],
                    ["Paper (ream)", "5", "4.20", "21.00"],
                    ["Ink cartridge", "3", "18.75", "56.25"],
                ],
            ),
            style="plain",
            font="sans",
            pdf=True,
        )
    )
    out.append(
        Table(
            "column_groups",
            ["column spans in a two-row header", "rules at top, under the header, bottom"],
            table(
                [
                    [
                        ("Model", {"rowspan": 2}),
                        ("Simple", {"colspan": 2}),
                        ("Complex", {"colspan": 2}),
                        ("All", {"rowspan": 2}),
                    ],
                    ["TEDS", "mAP", "TEDS", "mAP"],
                ],
                [
                    ["EDD", "0.912", "0.874", "0.855", "0.801", "0.883"],
                    ["TableFormer", "0.959", "0.921", "0.934", "0.887", "0.947"],
                    ["SLANet", "0.951", "0.913", "0.928", "0.879", "0.940"],
                    ["UniTable", "0.968", "0.935", "0.942", "0.902", "0.955"],
                ],
            ),
            style="booktabs",
            pdf=True,
        )
    )
    out.append(
        Table(
            "row_groups",
            ["row spans in the first column", "ruled grid"],
            table(
                [["Region", "Quarter", "Revenue", "Margin"]],
                [
                    [("North", {"rowspan": 3}), "Q1", "1,204", "12%"],
                    ["Q2", "1,388", "14%"],
                    ["Q3", "1,297", "13%"],
                    [("South", {"rowspan": 2}), "Q1", "874", "9%"],
                    ["Q2", "951", "10%"],
                    [("West", {"rowspan": 3}), "Q1", "2,015", "18%"],
                    ["Q2", "2,140", "19%"],
                    ["Q3", "2,233", "19%"],
                ],
            ),
        )
    )
    out.append(
        Table(
            "row_and_column_spans",
            ["row spans", "column spans", "ruled grid"],
            table(
                [
                    [
                        ("Dataset", {"rowspan": 2}),
                        ("Split", {"rowspan": 2}),
                        ("Size", {"colspan": 3}),
                    ],
                    ["Pages", "Tables", "Cells"],
                ],
                [
                    [("PubTabNet", {"rowspan": 2}), "train", "500,777", "500,777", "13.4M"],
                    ["val", "9,115", "9,115", "0.24M"],
                    [("FinTabNet", {"rowspan": 3}), "train", "61,801", "91,596", "2.9M"],
                    ["val", "7,191", "10,635", "0.33M"],
                    ["test", "7,085", "10,656", "0.34M"],
                    ["SynthTabNet", "all", ("600,000 (generated)", {"colspan": 2}), "19.2M"],
                ],
            ),
        )
    )
    out.append(
        Table(
            "wrapped_cells",
            ["wrapped multi-line cells", "ruled grid"],
            table(
                [["Setting", "What it does", "Default"]],
                [
                    [
                        "strategy",
                        "How pages are read: from the text layer only, or through the layout "
                        "model and OCR when the page has no text to read.",
                        "auto",
                    ],
                    [
                        "infer_table_structure",
                        "Recover rows, columns and merged cells of every table region and return "
                        "them as HTML in the element's metadata.",
                        "false",
                    ],
                    [
                        "ocr_languages",
                        "Languages the OCR engine reads, as a list of codes; every language must "
                        "be installed on the machine before the run starts.",
                        "eng",
                    ],
                    ["coordinates", "Keep each element's box on the page.", "false"],
                ],
            ),
            width=560,
            pdf=True,
        )
    )
    out.append(
        Table(
            "two_line_headers",
            ["column titles wrapped over two lines", "rules at top, under the header, bottom"],
            table(
                [
                    [
                        "Encoder layers",
                        "Decoder layers",
                        "Inference time (s)",
                        "Peak memory (MiB)",
                        "Tables per second",
                    ]
                ],
                [
                    ["6", "6", "2.73", "1,840", "0.37"],
                    ["4", "4", "1.97", "1,512", "0.51"],
                    ["2", "4", "1.91", "1,377", "0.52"],
                    ["4", "2", "1.22", "1,290", "0.82"],
                ],
            ),
            style="booktabs",
            width=520,
            extra_css="th { width: 20%; }",
        )
    )
    dense_head = ["Sample", *[f"T{i}" for i in range(1, 8)]]
    out.append(
        Table(
            "dense_numbers",
            ["dense numbers", "narrow columns", "horizontal rules between rows"],
            table(
                [dense_head],
                [[f"S-{i:02d}", *numbers(rng, 7, 0, 99.99, 2)] for i in range(1, 13)],
            ),
            style="hlines",
            font="sans",
            size=13,
            extra_css="td, th { padding: 2px 5px; text-align: right; }",
            pdf=True,
        )
    )
    out.append(
        Table(
            "small_print",
            ["small print (8 px font)", "ruled grid", "dense numbers"],
            table(
                [["Code", "Description", "Min", "Max", "Mean", "SD"]],
                [
                    [f"A{i:03d}", name, *numbers(rng, 4, 0, 9.99, 3)]
                    for i, name in enumerate(
                        [
                            "inlet temperature",
                            "outlet temperature",
                            "flow rate",
                            "pressure drop",
                            "pump speed",
                            "valve position",
                            "tank level",
                            "conductivity",
                        ],
                        start=1,
                    )
                ],
            ),
            size=8,
            font="sans",
            extra_css="td, th { padding: 1px 4px; }",
            pdf=True,
        )
    )
    months = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec"
    wide_head = ["Station", *months.split(" ")]
    out.append(
        Table(
            "wide_table",
            ["wide table (13 columns)", "dense numbers", "horizontal rules between rows"],
            table(
                [wide_head],
                [
                    [name, *numbers(rng, 12, -5, 30, 1)]
                    for name in ["Oslo", "Lyon", "Porto", "Graz", "Turku", "Split"]
                ],
            ),
            style="hlines",
            font="sans",
            size=13,
            extra_css="td, th { padding: 3px 6px; }",
        )
    )
    out.append(
        Table(
            "financial_statement",
            ["no vertical rules", "negative numbers in parentheses", "empty cells"],
            table(
                [["", "Note", "2023", "2022"]],
                [
                    ["Revenue", "4", "12,480", "11,215"],
                    ["Cost of sales", "", "(7,904)", "(7,330)"],
                    ["Gross profit", "", "4,576", "3,885"],
                    ["Administrative expenses", "5", "(1,212)", "(1,104)"],
                    ["Other income", "", "87", "—"],
                    ["Operating profit", "", "3,451", "2,781"],
                    ["Finance costs", "6", "(240)", "(265)"],
                    ["Profit before tax", "", "3,211", "2,516"],
                ],
            ),
            style="hlines",
            extra_css="td:nth-child(n+2), th:nth-child(n+2) { text-align: right; }",
        )
    )
    out.append(
        Table(
            "zebra_no_rules",
            ["no rules, shaded alternate rows"],
            table(
                [["Package", "Version", "License", "Size"]],
                [
                    ["numpy", "2.4.6", "BSD-3-Clause", "16 MB"],
                    ["lxml", "6.1.3", "BSD-3-Clause", "5.1 MB"],
                    ["apted", "1.0.3", "MIT", "25 kB"],
                    ["rapidfuzz", "3.14.6", "MIT", "3.2 MB"],
                    ["onnxruntime", "1.32.0", "MIT", "13 MB"],
                    ["pypdfium2", "4.30.0", "Apache-2.0", "2.9 MB"],
                ],
            ),
            style="zebra",
            font="sans",
        )
    )
    out.append(
        Table(
            "dark_header",
            ["header in white on dark", "ruled grid"],
            table(
                [["ID", "Name", "Role", "Started"]],
                [
                    ["101", "Ada Lovelace", "Analyst", "2019-03-04"],
                    ["102", "Alan Turing", "Engineer", "2020-11-16"],
                    ["103", "Grace Hopper", "Architect", "2018-07-01"],
                    ["104", "Edsger Dijkstra", "Reviewer", "2021-01-11"],
                ],
            ),
            style="darkhead",
            font="sans",
        )
    )
    out.append(
        Table(
            "sparse_matrix",
            ["many empty cells", "row headers", "ruled grid"],
            table(
                [["Privilege", "Admin", "Editor", "Author", "Viewer", "Guest"]],
                [
                    ["Create users", "X", "", "", "", ""],
                    ["Delete users", "X", "", "", "", ""],
                    ["Edit any page", "X", "X", "", "", ""],
                    ["Edit own page", "X", "X", "X", "", ""],
                    ["Publish", "X", "X", "", "", ""],
                    ["Comment", "X", "X", "X", "X", ""],
                    ["Read", "X", "X", "X", "X", "X"],
                ],
            ),
            extra_css="td:nth-child(n+2) { text-align: center; }",
        )
    )
    out.append(
        Table(
            "section_rows",
            ["section rows spanning every column", "rules at top, under the header, bottom"],
            table(
                [["Measure", "Unit", "Target", "Actual"]],
                [
                    [("Availability", {"colspan": 4})],
                    ["Uptime", "%", "99.9", "99.95"],
                    ["Incidents", "count", "≤ 2", "1"],
                    [("Performance", {"colspan": 4})],
                    ["Median latency", "ms", "120", "97"],
                    ["95th percentile", "ms", "400", "388"],
                    [("Cost", {"colspan": 4})],
                    ["Per request", "µ$", "15", "13.2"],
                ],
            ),
            style="booktabs",
            extra_css="tbody td[colspan] { font-style: italic; padding-top: 8px; }",
        )
    )
    out.append(
        Table(
            "long_table",
            ["many rows (24)", "horizontal rules between rows"],
            table(
                [["Year", "Event", "Attendance"]],
                [
                    [str(1999 + i), f"Conference {i + 1}", f"{rng.randint(180, 2400):,}"]
                    for i in range(24)
                ],
            ),
            style="hlines",
            size=13,
            extra_css="td, th { padding: 2px 10px; }",
        )
    )
    out.append(
        Table(
            "three_level_header",
            ["three header rows", "row and column spans in the header", "ruled grid"],
            table(
                [
                    [("Model", {"rowspan": 3}), ("Accuracy", {"colspan": 4})],
                    [("English", {"colspan": 2}), ("German", {"colspan": 2})],
                    ["dev", "test", "dev", "test"],
                ],
                [
                    ["A", "81.2", "80.7", "76.4", "75.9"],
                    ["B", "83.5", "82.9", "78.8", "78.1"],
                    ["C", "85.0", "84.6", "80.3", "79.7"],
                ],
            ),
            font="sans",
            extra_css="th { text-align: center; }",
        )
    )
    out.append(
        Table(
            "key_value",
            ["two columns, wrapped values", "no vertical rules"],
            table(
                [],
                [
                    ["Title", "Image-based table recognition: data, model, and evaluation"],
                    ["Authors", "Xu Zhong, Elaheh ShafieiBavani, Antonio Jimeno Yepes"],
                    ["Venue", "European Conference on Computer Vision (ECCV), 2020"],
                    ["Pages", "564–580"],
                    ["Dataset", "PubTabNet: 568k table images with HTML annotations"],
                ],
            ),
            style="hlines",
            width=440,
            extra_css="td:first-child { font-weight: bold; vertical-align: top; }",
        )
    )
    out.append(
        Table(
            "plus_minus",
            ["values with ± errors", "rules at top, under the header, bottom", "bold best"],
            table(
                [["Method", "Dev", "Test", "Δ"]],
                [
                    ["CRF", "88.1 ± 0.4", "87.2 ± 0.5", "−0.9"],
                    ["BiLSTM", "90.3 ± 0.3", "89.8 ± 0.3", "−0.5"],
                    ["Transformer", "92.7 ± 0.2", "92.1 ± 0.2", "−0.6"],
                    ["Ours", "93.4 ± 0.2", "93.0 ± 0.1", "−0.4"],
                ],
            ),
            style="booktabs",
            extra_css="tbody tr:last-child td { font-weight: bold; }",
        )
    )
    out.append(
        Table(
            "small_print_spans",
            ["small print (8 px font)", "column spans", "ruled grid"],
            table(
                [
                    [
                        ("Lot", {"rowspan": 2}),
                        ("Inspection", {"colspan": 3}),
                        ("Result", {"rowspan": 2}),
                    ],
                    ["Date", "Inspector", "Defects"],
                ],
                [
                    ["L-2291", "2024-02-01", "M. Ortiz", "0", "pass"],
                    ["L-2292", "2024-02-01", "M. Ortiz", "3", "rework"],
                    ["L-2293", "2024-02-02", "K. Ng", "1", "pass"],
                    ["L-2294", "2024-02-03", "K. Ng", "7", "reject"],
                    ["L-2295", "2024-02-03", "P. Weiss", "0", "pass"],
                ],
            ),
            size=8,
            font="sans",
            extra_css="td, th { padding: 1px 4px; }",
        )
    )
    out.append(
        Table(
            "indented_no_rules",
            ["no rules", "indented sub-rows", "right-aligned numbers"],
            table(
                [["Component", "Hours", "Share"]],
                [
                    ["Parsing", "41.5", "38%"],
                    ["\u2003Layout", "22.0", "20%"],
                    ["\u2003OCR", "19.5", "18%"],
                    ["Chunking", "8.0", "7%"],
                    ["Embedding", "35.0", "32%"],
                    ["Writing", "5.0", "5%"],
                ],
            ),
            style="plain",
            extra_css="td:nth-child(n+2), th:nth-child(n+2) { text-align: right; }"
            " th { border-bottom: 1px solid #000; }",
        )
    )
    out.append(
        Table(
            "mixed_wrapped_spans",
            ["wrapped multi-line cells", "row spans", "column spans", "ruled grid"],
            table(
                [[("Requirement", {"colspan": 2}), "Status", "Comment"]],
                [
                    [
                        ("Input", {"rowspan": 2}),
                        "PDF with a text layer",
                        "done",
                        "Words come from the text layer; no OCR of born-digital pages.",
                    ],
                    ["Scanned page", "partial", "Small print is often misread."],
                    [
                        ("Output", {"rowspan": 2}),
                        "Table as HTML",
                        "done",
                        "Spans are kept as rowspan and colspan.",
                    ],
                    ["Merged table across pages", "open", ""],
                ],
            ),
            width=600,
            font="sans",
        )
    )
    return out


# --- rendering -----------------------------------------------------------------------------------
FONTS = {
    "serif": '"Liberation Serif", "DejaVu Serif", serif',
    "sans": '"Liberation Sans", sans-serif',
}
STYLES = {
    "grid": "table { border-collapse: collapse; } td, th { border: 1px solid #000; }",
    "booktabs": (
        "table { border-collapse: collapse; border-top: 2px solid #000;"
        " border-bottom: 2px solid #000; }"
        " thead tr:last-child th { border-bottom: 1px solid #000; }"
    ),
    "plain": "table { border-collapse: collapse; }",
    "hlines": "table { border-collapse: collapse; } tr { border-bottom: 1px solid #555; }"
    " thead tr { border-top: 1px solid #555; }",
    "zebra": "table { border-collapse: collapse; } tbody tr:nth-child(odd) { background: #e4e4e4; }"
    " th { background: #c8c8c8; }",
    "darkhead": "table { border-collapse: collapse; } td, th { border: 1px solid #333; }"
    " th { background: #20304a; color: #fff; }",
}


def page_css(t: Table) -> str:
    width = f"table {{ width: {t.width}px; }}" if t.width else ""
    return (
        f"body {{ margin: 0; background: #fff; color: #000; font-family: {FONTS[t.font]};"
        f" font-size: {t.size}px; line-height: 1.25; }}"
        " td, th { padding: 4px 8px; vertical-align: top; text-align: left; }"
        " th { font-weight: bold; }"
        f" {STYLES[t.style]} {width} {t.extra_css}"
    )


def image_page(t: Table) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{page_css(t)}"
        f" #crop {{ display: inline-block; padding: {MARGIN}px; background: #fff; }}</style>"
        f"</head><body><div id='crop'>{t.html}</div></body></html>"
    )


PARAGRAPH = (
    "The table below was written in HTML, so its rows, columns and merged cells are known "
    "exactly. It is printed here inside an ordinary page, with a heading above it and running "
    "text after it, as tables are found in reports and papers. The text layer of this page holds "
    "every word of the table, so no OCR is needed to read it."
)


def pdf_page(t: Table, number: int) -> str:
    caption = "; ".join(t.features)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{page_css(t)}"
        " @page { size: 8.5in 11in; margin: 0; }"
        " #page { padding: 72px 96px; }"
        " h1 { font-size: 22px; margin: 0 0 12px; } p { font-size: 15px; margin: 0 0 14px; }"
        " .caption { font-size: 14px; margin: 18px 0 8px; }"
        "</style></head><body><div id='page'>"
        f"<h1>Section {number}: {html.escape(t.name.replace('_', ' ').capitalize())}</h1>"
        f"<p>{PARAGRAPH}</p>"
        f"<p class='caption'>Table {number}. {html.escape(caption.capitalize())}.</p>"
        f"{t.html}<p style='margin-top: 14px'>{PARAGRAPH}</p></div></body></html>"
    )


def render(out: Path) -> dict:
    """Render every table into `out` and return the manifest."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise SystemExit(f"no chromium at {CHROMIUM} (Debian package `chromium`)")
    for sub in (*SCALES, "pdfs", "truth"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    items = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            shots = {
                folder: browser.new_page(
                    viewport={"width": 1400, "height": 900}, device_scale_factor=scale
                )
                for folder, scale in SCALES.items()
            }
            printer = browser.new_page(viewport={"width": PAGE_W, "height": PAGE_H})
            printer.emulate_media(media="print")
            number = 0
            for t in tables():
                (out / "truth" / f"{t.name}.html").write_text(t.html + "\n", encoding="utf-8")
                item: dict = {
                    "name": t.name,
                    "features": t.features,
                    "truth": f"truth/{t.name}.html",
                }
                for folder, scale in SCALES.items():
                    item[folder] = _shot(shots[folder], t, out / folder / f"{t.name}.png", scale)
                if t.pdf:
                    number += 1
                    printer.set_content(pdf_page(t, number), wait_until="load")
                    where = printer.locator("table").bounding_box()
                    pdf = out / "pdfs" / f"{t.name}.pdf"
                    printer.pdf(
                        path=str(pdf),
                        width=f"{PAGE_W}px",
                        height=f"{PAGE_H}px",
                        print_background=True,
                        margin={"top": "0", "right": "0", "bottom": "0", "left": "0"},
                    )
                    _strip_dates(pdf)
                    pt = 72 / 96
                    item["pdf"] = {
                        "file": f"pdfs/{t.name}.pdf",
                        "page": 1,
                        "size": [PAGE_W * pt, PAGE_H * pt],
                        "table_box": [
                            round(v * pt, 2)
                            for v in (
                                where["x"],
                                where["y"],
                                where["x"] + where["width"],
                                where["y"] + where["height"],
                            )
                        ],
                    }
                items.append(item)
        finally:
            browser.close()
    manifest = {"format": FORMAT, "scales": SCALES, "margin_css_px": MARGIN, "tables": items}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _shot(page: Any, t: Table, path: Path, scale: int) -> dict:
    """Screenshot the table's crop to `path`: the file, its size and the table's box in it."""
    page.set_content(image_page(t), wait_until="load")
    crop = page.locator("#crop")
    crop.screenshot(path=str(path), animations="disabled")
    box, inner = crop.bounding_box(), page.locator("table").bounding_box()
    x0, y0 = inner["x"] - box["x"], inner["y"] - box["y"]
    return {
        "file": f"{path.parent.name}/{path.name}",
        "size": [round(box["width"] * scale), round(box["height"] * scale)],
        "table_box": [
            round(v * scale, 1) for v in (x0, y0, x0 + inner["width"], y0 + inner["height"])
        ],
    }


def _strip_dates(pdf: Path) -> None:
    """Drop the creation and modification dates and derive the document id from the content, so
    that two runs write the same bytes."""
    import pikepdf

    with pikepdf.open(pdf, allow_overwriting_input=True) as doc:
        for key in ("/CreationDate", "/ModDate"):
            if key in doc.docinfo:
                del doc.docinfo[key]
        doc.save(pdf, deterministic_id=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args()
    manifest = render(args.out)
    n_pdf = sum(1 for t in manifest["tables"] if "pdf" in t)
    n = len(manifest["tables"])
    print(
        f"{n} tables: {n * len(SCALES)} PNG crops ({', '.join(SCALES)}), {n_pdf} PDFs in {args.out}"
    )


if __name__ == "__main__":
    main()
