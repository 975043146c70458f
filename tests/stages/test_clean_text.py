"""Clean text under High Res and Auto (`hires.clean_text`, `hires.glyphs`): ligatures, accents,
line-end hyphenation and the text layer's unmapped glyphs, on PDFs made here and on the
corpus's `embedded-images-tables.pdf` (its Ecorr column's minus signs have no Unicode mapping).
Fast keeps the library's text.

The PDFs made here draw text in Helvetica with glyph names for the ligatures and accents (as
a TeX PDF's text layer has them) and, for unmapped glyphs, a Type 3 font whose glyphs are named
`C0`, `C1`, `C2` (no Unicode by name, and no ToUnicode map): a minus bar, a square bullet and a
tall mark, each drawn with its outline's box.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest

from ingestflow.elements import Document
from ingestflow.spec.settings import UnstructuredPartitionSettings, VLMPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage
from ingestflow.stages.partition.auto import VLMPartitionStage
from ingestflow.stages.partition.hires import glyphs
from ingestflow.stages.partition.hires.clean_text import clean, clean_html
from ingestflow.stages.partition.hires.page_words import pdf_words

#: Helvetica with glyph names past WinAnsi: 1 fi, 2 fl, 3 caron, 4 ff.
LATEX_LINES = [
    b"The \001eld study of the harbour records the e\004ect of the new in-",
    b"formation system on the \002ow of cargo through the port during the year.",
    b"The authors J\264an Min\264a\003c and Ren\264e thank the sta\004 for their",
    b"work. The pre- and post-war \002eets were counted by the harbour o\004ice.",
]
#: Type 3 glyphs (code: name, box, drawing): a minus bar at the digits' middle, a square
#: bullet, a tall mark that is neither.
TYPE3 = {
    1: (b"C0", (50, 300, 550, 350)),
    2: (b"C1", (100, 200, 450, 550)),
    3: (b"C2", (100, 0, 250, 700)),
}
SIGNED_LINES = [
    (72, 600, b"\001", b"0.9393 was the mean potential of the first electrode in the series."),
    (72, 584, b"\001", b"0.8276 was the mean potential of the second electrode, measured later."),
    (72, 540, b"\002", b" Security fundamentals of the harbour's computer systems"),
    (72, 524, b"\002", b" Current state of the security of the harbour's systems"),
    (72, 480, b"\003", b"7 marks a glyph nobody can read from its shape alone here."),
]


def _pdf(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def make_pdf(ops: bytes) -> bytes:
    """One page drawing `ops` with /F1 (Helvetica, the glyph names above) and /F2 (`TYPE3`)."""
    procs = b" ".join(b"/%s %d 0 R" % (name, 7 + i) for i, (name, _) in enumerate(TYPE3.values()))
    widths = b" ".join(b"600" for _ in TYPE3)
    names = b" ".join(b"/" + name for name, _ in TYPE3.values())
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Type /Encoding "
        b"/BaseEncoding /WinAnsiEncoding /Differences [1 /fi /fl /caron /ff] >> >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R /F2 6 0 R >> >> /Contents 5 0 R >>",
        b"<< /Length %d >>\nstream\n%sendstream" % (len(ops), ops),
        b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 600 700] "
        b"/FontMatrix [0.001 0 0 0.001 0 0] /CharProcs << %s >> /Encoding << /Type /Encoding "
        b"/Differences [1 %s] >> /FirstChar 1 /LastChar %d /Widths [%s] >>"
        % (procs, names, len(TYPE3), widths),
    ]
    for _, (x0, y0, x1, y1) in TYPE3.values():
        glyph = b"600 0 %d %d %d %d d1 %d %d %d %d re f" % (
            x0,
            y0,
            x1,
            y1,
            x0,
            y0,
            x1 - x0,
            y1 - y0,
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(glyph), glyph))
    return _pdf(objects)


def latex_pdf() -> bytes:
    ops = b"BT /F1 18 Tf 72 720 Td (Harbour Report) Tj ET\n" + b"".join(
        b"BT /F1 11 Tf 72 %d Td (%s) Tj ET\n" % (680 - 16 * i, line)
        for i, line in enumerate(LATEX_LINES)
    )
    return make_pdf(ops)


def signed_pdf() -> bytes:
    ops = b"BT /F1 18 Tf 72 720 Td (Electrode Report) Tj ET\n" + b"".join(
        b"BT /F2 11 Tf %d %d Td (%s) Tj /F1 11 Tf (%s) Tj ET\n" % (x, y, glyph, rest)
        for x, y, glyph, rest in SIGNED_LINES
    )
    return make_pdf(ops)


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("clean")
    paths = {"latex": folder / "latex.pdf", "signed": folder / "signed.pdf"}
    paths["latex"].write_bytes(latex_pdf())
    paths["signed"].write_bytes(signed_pdf())
    return paths


def run(path: Path, strategy: Literal["hi_res", "fast"] = "hi_res", **settings: Any) -> Document:
    st = UnstructuredPartitionSettings(strategy=strategy, **settings)
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", st, RunContext())
    return stage.process(Document(path.name, path.name, path.name, path=path))


def text_of(doc: Document) -> str:
    return "\n".join(e["text"] for e in doc.elements)


# --- the text rules -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        (
            "the ﬁeld and the ﬂow of eﬀort, eﬃcient, baﬄe, ﬅop, ﬆar",
            "the field and the flow of effort, efficient, baffle, stop, star",
        ),
        ("J´an Min´aˇc and Ren´e", "Ján Mináč and René"),
        (
            "G¨odel, na¨ıve, ˇSkoda, cr`eme, ˆetre, ma˜nana",
            "Gödel, naïve, Škoda, crème, être, mañana",
        ),
        ("Franc¸ois, gar¸con", "François, garçon"),  # a cedilla after a capital, before c
        ("cafe´ au lait", "café au lait"),  # an accent after the word's last letter
        ("J\u0301an", "Ján"),  # a combining acute before its letter
        ("Jose\u0301", "José"),  # NFC
        ("don´t `echo` x^2 ~/home", "don´t `echo` x^2 ~/home"),  # no letter to compose with
        ("the new informa- tion system", "the new information system"),
        ("the new informa-\ntion system", "the new information system"),
        ("the new in\ufffe formation", "the new information"),  # pdfium's line-end hyphen
        ("pre- and post-war, short- or long-term", "pre- and post-war, short- or long-term"),
        ("state-of-the- art", "state-of-the-art"),
        ("Its well- Known authors", "Its well- Known authors"),  # a capital: not one word
        ("COVID- 19 and −0.9393 and -3", "COVID- 19 and −0.9393 and -3"),  # numbers untouched
    ],
)
def test_clean_text(raw: str, cleaned: str):
    assert clean(raw) == cleaned


def test_table_html_cells_are_cleaned_and_its_markup_kept():
    html = "<table><tr><td>e\ufb03cient &amp; in- formation</td><td>Min´aˇc</td></tr></table>"
    assert clean_html(html) == (
        "<table><tr><td>efficient &amp; information</td><td>Mináč</td></tr></table>"
    )


# --- unmapped glyphs, read from their shape by pdfium ---------------------------------------------
def test_unmapped_glyphs_read_as_minus_bullet_or_a_visible_mark(pdfs: dict[str, Path]):
    words = [w.text for w in pdf_words(pdfs["signed"], 0, 1700)]
    assert "−0.9393" in words and "−0.8276" in words  # the bar before a number: its sign
    assert words.count(glyphs.BULLET) == 2  # the squares that start lines: bullets
    assert "\ufffd7" in words  # the tall mark: unreadable, visible
    codes = {1: glyphs.MINUS, 2: glyphs.BULLET, 3: glyphs.UNKNOWN}  # pdfminer's (cid:N)
    assert glyphs.page_codes(pdfs["signed"], {0}) == {0: codes}


@pytest.mark.slow
def test_high_res_reads_unmapped_glyphs_and_warns_of_those_it_cannot(pdfs: dict[str, Path]):
    doc = run(pdfs["signed"])
    text = text_of(doc)
    assert "(cid:" not in text
    assert "−0.9393" in text and "−0.8276" in text
    items = {e["text"] for e in doc.elements if e["type"] == "ListItem"}
    assert "Security fundamentals of the harbour's computer systems" in items
    assert "\ufffd7 marks a glyph" in text
    assert len(doc.warnings) == 1
    assert (
        "1 character(s) of the PDF's text layer on page(s) 1 have no Unicode mapping"
        in (doc.warnings[0])
    )
    fast = text_of(run(pdfs["signed"], "fast"))
    assert "(cid:1)0.9393" in fast  # Fast: the library's text


@pytest.mark.slow
def test_high_res_and_auto_clean_a_latex_text_layer_and_fast_keeps_it(pdfs: dict[str, Path]):
    expected = [
        "The field study",
        "the effect of the new information system on the flow of cargo",
        "The authors Ján Mináč and René thank the staff for their work.",
        "The pre- and post-war fleets were counted by the harbour office.",
    ]
    hi_res = text_of(run(pdfs["latex"]))
    assert all(part in hi_res for part in expected), hi_res
    fast = text_of(run(pdfs["latex"], "fast"))
    assert "ﬁeld" in fast and "J´an Min´aˇc" in fast and "in-" in fast  # the library's text
    settings = VLMPartitionSettings(is_dynamic=True, allow_fast=True)
    stage = VLMPartitionStage("Partitioner", "vlm", settings, RunContext())
    path = pdfs["latex"]
    auto = stage.process(Document(path.name, path.name, path.name, path=path))
    assert {e["metadata"]["partition_strategy"] for e in auto.elements} == {"fast"}
    assert all(part in text_of(auto) for part in expected), text_of(auto)


# --- the corpus: Elsevier's minus signs -----------------------------------------------------------
@pytest.mark.slow
@pytest.mark.corpus
def test_the_corpus_ecorr_column_keeps_its_minus_signs(corpus: Path):
    path = corpus / "docs" / "pdf" / "embedded-images-tables.pdf"
    doc = run(path, infer_table_structure=True)
    tables = [e for e in doc.elements if e["type"] == "Table"]
    assert len(tables) == 1
    values = ["0.9393", "0.8276", "0.8825", "0.8027", "0.5896", "0.5356"]
    html = tables[0]["metadata"]["text_as_html"]
    for value in values:
        assert f"−{value}" in tables[0]["text"]
        assert f"<td>−{value}</td>" in html
    assert "(cid:" not in text_of(doc)
    assert doc.warnings == []


def test_a_line_feed_typed_into_the_text_layer_is_a_space_not_an_unknown_glyph(tmp_path: Path):
    """pdfminer writes a line feed inside a PDF string as `(cid:10)`; pdfium says it has no
    mapping, and its box draws nothing: a space, with no warning (it read `�` and warned)."""
    from ingestflow.stages.partition.hires import clean_text
    from tests.stages.test_partition import make_pdf as text_pdf

    pdf = tmp_path / "lines.pdf"
    pdf.write_bytes(text_pdf(["Harbour report\\nThe harbour opened in spring."]))
    elements = [
        {
            "text": "Harbour report(cid:10)The harbour opened in spring.",
            "metadata": {"page_number": 1},
        }
    ]
    assert clean_text.clean_elements(elements, pdf) == []
    assert elements[0]["text"] == "Harbour report The harbour opened in spring."
