"""TEDS and TEDS-struct: tree-edit-distance similarity of two HTML tables (PubTabNet's metric).

Zhong, ShafieiBavani and Jimeno Yepes, "Image-based table recognition: data, model, and
evaluation" (ECCV 2020): each table is a tree (table → tr → td); TEDS = 1 − EditDistance(T_a,
T_b) / max(|T_a|, |T_b|), where inserting or deleting a node costs 1, renaming a node to one of
another tag, colspan or rowspan costs 1, and renaming a cell to a cell of the same shape costs the
normalised Levenshtein distance of their texts (characters). TEDS-struct ignores the texts.

Both sides are canonicalised first, so that only structure and text count, not markup style:
`th` is a `td` (a header cell is a cell), `thead`/`tbody`/`tfoot` are dropped (their rows are the
table's rows), a cell's text is its text content with whitespace collapsed (inline tags such as
`<b>` do not count; `<br>` separates words), and the table may come bare (`<table>…</table>`),
inside a page, or with `<html><body>` around it. Implementations that look the table up as
`body/table` score a bare table 0; this one does not.

`docling_table_html` turns a table of a DoclingDocument (docling's JSON output) into HTML with
its spans, so that docling's tables can be scored with the same measure.

Scoring needs `apted` and `rapidfuzz` (both MIT; the `dev` extra installs them), imported on
first use only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Tags that hold a table's rows and are dropped: their rows become the table's own.
_SECTIONS = ("thead", "tbody", "tfoot")


@dataclass
class Node:
    """One node of a canonical table tree: `table`, `tr` or `td` (a cell has spans and text)."""

    tag: str
    colspan: int = 1
    rowspan: int = 1
    text: str = ""
    children: list[Node] = field(default_factory=list)

    def size(self) -> int:
        """Nodes in this subtree, this one included."""
        return 1 + sum(child.size() for child in self.children)


def table_tree(html: str | None) -> Node | None:
    """The first table of `html` as a canonical tree; None when there is no table (or no html)."""
    if not html or not html.strip():
        return None
    import lxml.html

    try:
        root = lxml.html.fromstring(html)
    except Exception:  # lxml raises ParserError and others on markup it cannot read at all
        return None
    table = root if root.tag == "table" else next(root.iter("table"), None)
    if table is None:
        return None
    tree = Node("table")
    for row in _rows(table):
        tr = Node("tr")
        for cell in row:
            if not isinstance(cell.tag, str) or cell.tag not in ("td", "th"):
                continue
            tr.children.append(
                Node(
                    "td",
                    colspan=_span(cell.get("colspan")),
                    rowspan=_span(cell.get("rowspan")),
                    text=_text(cell),
                )
            )
        tree.children.append(tr)
    return tree


def _rows(table: Any) -> list[Any]:
    """The table's `tr` elements in order, those inside thead/tbody/tfoot included (not those of
    a table nested in a cell)."""
    rows = []
    for child in table:
        if not isinstance(child.tag, str):
            continue  # a comment or a processing instruction
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in _SECTIONS:
            rows.extend(r for r in child if r.tag == "tr")
    return rows


def _text(cell: Any) -> str:
    """A cell's text with whitespace collapsed; a line break or a block inside the cell
    separates words (`Inference<br>time` is "Inference time")."""
    for inner in cell.iter("br", "p", "div", "li"):
        if inner is not cell:
            inner.tail = " " + (inner.tail or "")
            if inner.tag != "br":
                inner.text = " " + (inner.text or "")
    return " ".join(cell.text_content().split())


def _span(value: str | None) -> int:
    """A colspan/rowspan attribute as a number ≥ 1 (missing or unreadable: 1)."""
    try:
        return max(1, int(str(value).strip()))
    except (TypeError, ValueError):
        return 1


def canonical_html(html: str | None) -> str:
    """The first table of `html` in canonical form (`<table><tr><td>…`, th as td, no sections,
    whitespace collapsed); empty string when there is no table."""
    import html as html_module

    tree = table_tree(html)
    if tree is None:
        return ""
    out = ["<table>"]
    for tr in tree.children:
        out.append("<tr>")
        for td in tr.children:
            spans = "".join(
                f' {name}="{value}"'
                for name, value in (("colspan", td.colspan), ("rowspan", td.rowspan))
                if value > 1
            )
            out.append(f"<td{spans}>{html_module.escape(td.text, quote=False)}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def teds(found: str | None, expected: str | None, structure_only: bool = False) -> float:
    """TEDS of the table in `found` against the one in `expected`, from 0.0 to 1.0.

    When neither holds a table the result is 1.0 (nothing expected, nothing found); when only
    one does, 0.0. `structure_only` gives TEDS-struct: the cells' texts do not count."""
    a, b = table_tree(found), table_tree(expected)
    if a is None or b is None:
        return 1.0 if a is None and b is None else 0.0
    from apted import APTED

    distance = APTED(a, b, _costs(structure_only)).compute_edit_distance()
    return max(0.0, 1.0 - float(distance) / max(a.size(), b.size()))


def teds_struct(found: str | None, expected: str | None) -> float:
    """TEDS-struct: TEDS with the cells' texts ignored (tags and spans only)."""
    return teds(found, expected, structure_only=True)


def _costs(structure_only: bool) -> Any:
    """apted's cost model for table trees (see the module docstring); built on first use so that
    importing this module imports neither apted nor rapidfuzz."""
    from apted import Config
    from rapidfuzz.distance import Levenshtein

    class Costs(Config):
        valuecls = float

        def rename(self, a: Node, b: Node) -> float:
            if a.tag != b.tag or a.colspan != b.colspan or a.rowspan != b.rowspan:
                return 1.0
            if a.tag != "td" or structure_only:
                return 0.0
            return float(Levenshtein.normalized_distance(a.text, b.text))

        def children(self, node: Node) -> list[Node]:
            return node.children

    return Costs()


# --- docling ---------------------------------------------------------------------------------
def docling_table_html(table: dict[str, Any]) -> str:
    """A DoclingDocument table item (`document["tables"][i]`) as HTML: one cell per table cell at
    its start row and column with its rowspan/colspan, column headers as `th`, and an empty `td`
    for each grid position no cell covers (docling leaves those out of `table_cells`)."""
    import html as html_module

    data = table.get("data") or {}
    rows, cols = int(data.get("num_rows") or 0), int(data.get("num_cols") or 0)
    starts: dict[tuple[int, int], dict[str, Any]] = {}
    covered: set[tuple[int, int]] = set()
    for cell in data.get("table_cells") or []:
        r0, c0 = int(cell["start_row_offset_idx"]), int(cell["start_col_offset_idx"])
        r1 = max(r0 + 1, int(cell.get("end_row_offset_idx", r0 + 1)))
        c1 = max(c0 + 1, int(cell.get("end_col_offset_idx", c0 + 1)))
        if (r0, c0) in covered:
            continue  # a cell docling placed where another one already is: the first one wins
        starts[(r0, c0)] = {**cell, "_rows": r1 - r0, "_cols": c1 - c0}
        covered.update((r, c) for r in range(r0, r1) for c in range(c0, c1))
        rows, cols = max(rows, r1), max(cols, c1)
    out = ["<table>"]
    for r in range(rows):
        out.append("<tr>")
        for c in range(cols):
            cell = starts.get((r, c))
            if cell is None:
                if (r, c) not in covered:
                    out.append("<td></td>")
                continue
            tag = "th" if cell.get("column_header") else "td"
            spans = "".join(
                f' {name}="{value}"'
                for name, value in (("rowspan", cell["_rows"]), ("colspan", cell["_cols"]))
                if value > 1
            )
            text = html_module.escape(" ".join(str(cell.get("text") or "").split()), quote=False)
            out.append(f"<{tag}{spans}>{text}</{tag}>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)
