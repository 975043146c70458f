"""TEDS and TEDS-struct (PubTabNet's tree-edit-distance similarity) on hand-worked tables, and
docling's JSON tables as HTML.

Each expected figure is worked out by hand: a tree counts the table node, one node per row and
one per cell; TEDS = 1 − distance / the larger tree's node count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingestflow.quality.teds import canonical_html, docling_table_html, teds, teds_struct

#: 2 × 2: table + 2 rows + 4 cells = 7 nodes
GRID = "<table><tr><td>A</td><td>B</td></tr><tr><td>1</td><td>2</td></tr></table>"


def test_identical_tables_score_one() -> None:
    assert teds(GRID, GRID) == 1.0
    assert teds_struct(GRID, GRID) == 1.0


def test_markup_style_does_not_count() -> None:
    """th is a cell, thead/tbody are dropped, whitespace and inner tags do not count, and a bare
    table scores like one inside a page (implementations that look up body/table score it 0)."""
    styled = (
        "<html><body><p>before</p><table>\n<thead><tr><th> A </th><th><b>B</b></th></tr></thead>"
        "<tbody><tr><td>1</td>\n<td>\n 2</td></tr></tbody></table></body></html>"
    )
    assert teds(styled, GRID) == 1.0
    assert teds(GRID, styled) == 1.0
    assert canonical_html(styled) == GRID
    broken = GRID.replace(">A<", ">Inference<br>time<").replace(">B<", "><b>4</b>.5<")
    assert canonical_html(broken) == GRID.replace(">A<", ">Inference time<").replace(">B<", ">4.5<")


def test_one_cell_text_changed() -> None:
    """One cell renamed: its cost is the normalised Levenshtein distance of the two texts."""
    whole = GRID.replace(">2<", ">3<")  # 1 edit / 1 character: cost 1
    assert teds(whole, GRID) == pytest.approx(1 - 1 / 7)
    part = GRID.replace(">2<", ">abcd<")
    assert teds(part.replace("abcd", "abce"), part) == pytest.approx(1 - 0.25 / 7)
    assert teds_struct(whole, GRID) == 1.0


def test_dropped_column() -> None:
    """2 × 3 (9 nodes) read as 2 × 2: two cells deleted."""
    three = (
        "<table><tr><td>A</td><td>B</td><td>C</td></tr>"
        "<tr><td>1</td><td>2</td><td>3</td></tr></table>"
    )
    assert teds(GRID, three) == pytest.approx(1 - 2 / 9)
    assert teds_struct(GRID, three) == pytest.approx(1 - 2 / 9)


def test_colspan_against_two_cells() -> None:
    """A header over two columns (6 nodes) read as two cells (7 nodes): the spanning cell is
    renamed to a plain one (cost 1: its colspan differs) and an empty cell inserted (1)."""
    spanned = '<table><tr><td colspan="2">H</td></tr><tr><td>a</td><td>b</td></tr></table>'
    split = "<table><tr><td>H</td><td></td></tr><tr><td>a</td><td>b</td></tr></table>"
    assert teds(split, spanned) == pytest.approx(1 - 2 / 7)
    assert teds_struct(split, spanned) == pytest.approx(1 - 2 / 7)
    rowspan = GRID.replace("<td>A</td>", '<td rowspan="2">A</td>').replace("<td>1</td>", "")
    assert teds_struct(rowspan, GRID) == pytest.approx(1 - 2 / 7)  # 6 nodes against 7


def test_struct_ignores_text() -> None:
    """Every text different, same grid: each of the 4 cells costs 1 for TEDS, 0 for the struct."""
    other = "<table><tr><td>w</td><td>x</td></tr><tr><td>y</td><td>z</td></tr></table>"
    assert teds(other, GRID) == pytest.approx(1 - 4 / 7)
    assert teds_struct(other, GRID) == 1.0


def test_empty_against_non_empty() -> None:
    assert teds("", GRID) == 0.0
    assert teds(None, GRID) == 0.0
    assert teds(GRID, "") == 0.0
    assert teds("<p>no table here</p>", GRID) == 0.0
    assert teds_struct("", GRID) == 0.0
    assert teds("", "") == 1.0  # nothing expected, nothing found
    # a table with no rows is one node: six insertions against 7 nodes
    assert teds("<table></table>", GRID) == pytest.approx(1 / 7)


def test_docling_table_with_spans_and_a_missing_cell() -> None:
    """Spans come from the start/end offsets; a grid position no cell covers is an empty td."""
    table = {
        "data": {
            "num_rows": 3,
            "num_cols": 3,
            "table_cells": [
                {
                    "start_row_offset_idx": 0,
                    "end_row_offset_idx": 2,
                    "start_col_offset_idx": 0,
                    "end_col_offset_idx": 1,
                    "text": "Model",
                    "column_header": True,
                },
                {
                    "start_row_offset_idx": 0,
                    "end_row_offset_idx": 1,
                    "start_col_offset_idx": 1,
                    "end_col_offset_idx": 3,
                    "text": "TEDS",
                    "column_header": True,
                },
                {
                    "start_row_offset_idx": 1,
                    "end_row_offset_idx": 2,
                    "start_col_offset_idx": 1,
                    "end_col_offset_idx": 2,
                    "text": "simple",
                    "column_header": True,
                },
                {
                    "start_row_offset_idx": 1,
                    "end_row_offset_idx": 2,
                    "start_col_offset_idx": 2,
                    "end_col_offset_idx": 3,
                    "text": "complex",
                    "column_header": True,
                },
                {
                    "start_row_offset_idx": 2,
                    "end_row_offset_idx": 3,
                    "start_col_offset_idx": 0,
                    "end_col_offset_idx": 1,
                    "text": " OTSL\n",
                },
                {
                    "start_row_offset_idx": 2,
                    "end_row_offset_idx": 3,
                    "start_col_offset_idx": 2,
                    "end_col_offset_idx": 3,
                    "text": "0.9 & more",
                },
            ],
        }
    }
    assert docling_table_html(table) == (
        '<table><tr><th rowspan="2">Model</th><th colspan="2">TEDS</th></tr>'
        "<tr><th>simple</th><th>complex</th></tr>"
        "<tr><td>OTSL</td><td></td><td>0.9 &amp; more</td></tr></table>"
    )


@pytest.mark.corpus
def test_docling_json_table_from_the_corpus(corpus: Path) -> None:
    """redp5110_sampled's SQL snippet that docling typed as a table: 3 × 2 with one position
    empty (`bbox: null` in its grid, no table cell)."""
    document = json.loads((corpus / "expected/docling/redp5110_sampled.json").read_text())
    html = docling_table_html(document["tables"][2])
    assert html == (
        "<table><tr><td>SELECT</td><td>function_id, user_name, usage, user_type</td></tr>"
        "<tr><td>FROM ORDER</td><td>function_usage function_id='QIBM_DB_SECADM' user_name;</td>"
        "</tr><tr><td>WHERE</td><td></td></tr></table>"
    )
    paper = json.loads((corpus / "expected/docling/2305.03393v1-pg9.json").read_text())
    header = docling_table_html(paper["tables"][0])
    assert header.startswith(
        '<table><tr><th rowspan="2"># enc-layers</th><th rowspan="2"># dec-layers</th>'
        '<th rowspan="2">Language</th><th colspan="3">TEDs</th>'
    )
    # 6 rows of 8 columns, 41 cells: the table against itself, and its structure against the
    # same grid without any spans, which must cost something
    assert teds(header, header) == 1.0
    assert teds_struct(header.replace('rowspan="2"', "").replace('colspan="3"', ""), header) < 1
