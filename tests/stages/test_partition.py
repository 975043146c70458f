"""The partition stage (Fast strategy) on real documents: what each setting and each bad input does.

Documents are the project's own (`fixtures/docs/`), made here (PDF, DOCX, PPTX, XLSX, ODT, RTF,
EPUB, PNG, EML), or the third-party corpus beside the clone (tests marked `corpus`, skipped when
it is absent). `unstructured` is loaded once for the module.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from ingestflow.elements import Document
from ingestflow.errors import DocumentError, EnvironmentProblem, WorkflowInvalid
from ingestflow.offline import OFFLINE_ENV, SPACY_MODEL
from ingestflow.spec.settings import UnstructuredPartitionSettings, VLMPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage
from ingestflow.stages.partition.auto import VLMPartitionStage
from tests.conftest import CORPUS, FIXTURES

DOCS = FIXTURES / "docs"
MAX_CORPUS_BYTES = 1_000_000  # bigger corpus files are for benchmarks, not tests
TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAFElEQVR4nGM8ISfHgA0wYRUdtBIA0MoBFD5jqJkAAAAASUVO"
    "RK5CYII="
)
HARBOUR = (
    "The harbour opened in early spring, and the first ships arrived within a week of the thaw."
)
NOISE = random.Random(7)  # seeded: the "random" bytes are the same on every run
Make = Callable[..., UnstructuredPartitionStage]


# --- helpers --------------------------------------------------------------------------------------
def make_pdf(pages: list[str]) -> bytes:
    """A PDF with one Helvetica text line per line of each page; an empty page has only a box."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        lines = [line for line in text.split("\n") if line]
        ops = "".join(
            f"BT /F1 12 Tf 72 {720 - 40 * j} Td ({line}) Tj ET\n" for j, line in enumerate(lines)
        )
        stream = (ops or "0.5 g 72 600 200 100 re f\n").encode()
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i)
        )
        objects.append(b"<< /Length %d >>\nstream\n%sendstream" % (len(stream), stream))
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


TWO_PAGES = make_pdf(
    [f"Quarterly Report\n{HARBOUR}\n{HARBOUR}", "The second page tells how the season ended."]
)


def doc_of(source: Path | bytes, filename: str | None = None, **extra: Any) -> Document:
    """A Document from a file path or from bytes (then `filename` is required)."""
    if isinstance(source, Path):
        return Document("d", "r", filename or source.name, path=source, **extra)
    assert filename is not None
    return Document("d", "r", filename, data=source, **extra)


def pairs(doc: Document) -> list[tuple[str, str]]:
    return [(e["type"], e["text"]) for e in doc.elements]


def texts(doc: Document) -> str:
    return "\n".join(e["text"] for e in doc.elements)


@pytest.fixture(scope="module")
def make() -> Make:
    """Stage factory; the first stage opened loads `unstructured` for the whole module."""

    def build(**settings: Any) -> UnstructuredPartitionStage:
        st = UnstructuredPartitionSettings(strategy="fast", **settings)
        stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", st, RunContext())
        stage.open()
        return stage

    build()
    return build


@pytest.fixture(scope="module")
def fast(make: Make) -> UnstructuredPartitionStage:
    return make()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Documents of the binary formats, made with their own libraries and pandoc."""
    import docx
    import openpyxl
    import pptx
    import pypandoc

    folder = tmp_path_factory.mktemp("made")
    out: dict[str, Path] = {"pdf": folder / "report.pdf"}
    out["pdf"].write_bytes(TWO_PAGES)
    document = docx.Document()
    document.add_heading("Harbour Handbook", level=1)
    document.add_paragraph(HARBOUR)
    document.add_paragraph("Berths are assigned at the start of every season.")
    out["docx"] = folder / "handbook.docx"
    document.save(str(out["docx"]))
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Season Review"
    slide.placeholders[1].text = "Cargo volumes rose by a fifth this season."
    out["pptx"] = folder / "review.pptx"
    deck.save(str(out["pptx"]))
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["vessel", "tonnage"])
    sheet.append(["Northern Star", 1200])
    out["xlsx"] = folder / "vessels.xlsx"
    book.save(str(out["xlsx"]))
    markdown = f"# Tide Tables\n\n{HARBOUR}\n\n- High tide at six.\n- Low tide at noon.\n"
    for fmt in ("odt", "rtf", "epub"):
        out[fmt] = folder / f"tides.{fmt}"
        extra = ["--standalone", "--metadata", "title=Tide Tables"]
        pypandoc.convert_text(
            markdown, fmt, format="md", outputfile=str(out[fmt]), extra_args=extra
        )
    out["htm"] = folder / "page.htm"
    out["htm"].write_bytes((DOCS / "page.html").read_bytes())
    return out


def email_with(*attachments: tuple[bytes, str, str, str]) -> bytes:
    """An .eml with a plain body and the given (data, maintype, subtype, filename) attachments."""
    message = EmailMessage()
    message["From"] = "office@harbour.example"
    message["To"] = "crew@harbour.example"
    message["Subject"] = "Season notes"
    message["Date"] = "Tue, 04 Mar 2025 09:30:00 +0000"
    message.set_content("The season meeting is on Friday at ten in the harbour office.\n")
    for data, maintype, subtype, filename in attachments:
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return bytes(message)


# --- 1. offline set-up ----------------------------------------------------------------------------
def test_open_sets_the_offline_environment_and_the_spacy_model(
    make: Make, monkeypatch: pytest.MonkeyPatch
):
    import unstructured.nlp.tokenize as tokenize

    # Undo what any earlier import set, then let a fresh stage's open() set it again.
    monkeypatch.setattr(tokenize, "_SPACY_MODEL_NAME", "en_core_web_sm")
    for key in OFFLINE_ENV:
        monkeypatch.delenv(key, raising=False)
    make()
    for key, value in OFFLINE_ENV.items():
        assert os.environ[key] == value
    assert tokenize._SPACY_MODEL_NAME == SPACY_MODEL


def test_a_text_pdf_yields_its_text_with_page_numbers(fast: UnstructuredPartitionStage):
    doc = fast.process(doc_of(TWO_PAGES, "report.pdf"))
    assert ("Title", "Quarterly Report") in pairs(doc)
    assert texts(doc).count(HARBOUR) == 2
    assert {e["metadata"]["page_number"] for e in doc.elements} == {1, 2}
    assert {e["metadata"]["filetype"] for e in doc.elements} == {"application/pdf"}
    assert doc.warnings == []


# --- 2. file types --------------------------------------------------------------------------------
FIXTURE_TYPES = [
    ("notes.txt", "text/plain", "Fishing boats left before dawn."),
    ("guide.md", "text/markdown", "Partition each document into elements."),
    ("page.html", "text/html", "Trim the wick and polish the lens."),
    ("prices.csv", "text/csv", "apples kg 2.40"),
    ("catalog.xml", "application/xml", "Charts and Soundings"),
    ("memo.eml", "message/rfc822", "The season meeting is on Friday at ten in the harbour office."),
]


@pytest.mark.parametrize(("name", "mime", "text"), FIXTURE_TYPES)
def test_project_documents_of_each_text_type(
    fast: UnstructuredPartitionStage, name: str, mime: str, text: str
):
    doc = fast.process(doc_of(DOCS / name))
    assert text in texts(doc)
    assert doc.elements[0]["metadata"]["filetype"] == mime
    assert {
        e["metadata"]["filename"]
        for e in doc.elements
        if "attached_to_filename" not in e["metadata"]
    } == {name}


MADE_TYPES = [
    ("pdf", "application/pdf", "The second page tells how the season ended."),
    ("docx", "vnd.openxmlformats-officedocument.wordprocessingml", "Berths are assigned"),
    ("pptx", "vnd.openxmlformats-officedocument.presentationml", "Cargo volumes rose"),
    ("xlsx", "vnd.openxmlformats-officedocument.spreadsheetml", "Northern Star"),
    ("odt", "application/vnd.oasis.opendocument.text", "High tide at six."),
    ("rtf", "text/rtf", "High tide at six."),
    ("epub", "application/epub", "High tide at six."),
    ("htm", "text/html", "Record the weather in the logbook."),
]


@pytest.mark.parametrize(("kind", "mime", "text"), MADE_TYPES, ids=[m[0] for m in MADE_TYPES])
def test_made_documents_of_each_binary_type(
    fast: UnstructuredPartitionStage, made: dict[str, Path], kind: str, mime: str, text: str
):
    doc = fast.process(doc_of(made[kind]))
    assert text in texts(doc)
    assert mime in doc.elements[0]["metadata"]["filetype"]


@pytest.mark.corpus
def test_outlook_msg_from_the_corpus(fast: UnstructuredPartitionStage, corpus: Path):
    doc = fast.process(doc_of(corpus / "docs" / "fake-email.msg"))
    assert "This is a test email to use for unit tests." in texts(doc)
    assert doc.elements[0]["metadata"]["filetype"] == "application/vnd.ms-outlook"


@pytest.mark.parametrize(
    ("data", "name", "mime"),
    [
        ((DOCS / "page.html").read_bytes(), "page", "text/html"),
        (TWO_PAGES, "report.bin", "application/pdf"),
        ((DOCS / "memo.eml").read_bytes(), "memo", "message/rfc822"),
    ],
    ids=["html-without-extension", "pdf-named-bin", "eml-without-extension"],
)
def test_the_type_is_read_from_the_content(
    fast: UnstructuredPartitionStage, data: bytes, name: str, mime: str
):
    doc = fast.process(doc_of(data, name))
    assert doc.elements
    assert doc.elements[0]["metadata"]["filetype"] == mime


# --- 3. settings ----------------------------------------------------------------------------------
def test_include_page_breaks_adds_page_breaks_between_pdf_pages(make: Make):
    without = make().process(doc_of(TWO_PAGES, "report.pdf"))
    with_breaks = make(include_page_breaks=True).process(doc_of(TWO_PAGES, "report.pdf"))
    assert "PageBreak" not in [t for t, _ in pairs(without)]
    assert [t for t, _ in pairs(with_breaks)][-3:] == ["PageBreak", "NarrativeText", "PageBreak"]
    assert [p for p in pairs(with_breaks) if p[0] != "PageBreak"] == pairs(without)


@pytest.mark.corpus
def test_include_page_breaks_false_removes_docx_page_breaks(make: Make, corpus: Path):
    path = corpus / "docs" / "handbook-1p.docx"  # the library's docx default keeps page breaks
    without = make().process(doc_of(path))
    with_breaks = make(include_page_breaks=True).process(doc_of(path))
    assert "PageBreak" not in [t for t, _ in pairs(without)]
    assert "PageBreak" in [t for t, _ in pairs(with_breaks)]


def test_exclude_elements_drops_exactly_those_types(make: Make):
    everything = make().process(doc_of(DOCS / "notes.txt"))
    kept = make(exclude_elements=["ListItem", "Title"]).process(doc_of(DOCS / "notes.txt"))
    assert {"ListItem", "Title", "NarrativeText"} <= {t for t, _ in pairs(everything)}
    assert pairs(kept) == [p for p in pairs(everything) if p[0] not in ("ListItem", "Title")]


def test_xml_keep_tags(make: Make):
    plain = make().process(doc_of(DOCS / "catalog.xml"))
    tagged = make(xml_keep_tags=True).process(doc_of(DOCS / "catalog.xml"))
    assert "<title>" not in texts(plain) and "The Tides of the North Sea" in texts(plain)
    assert "<title>The Tides of the North Sea</title>" in texts(tagged)


def test_encoding_decodes_text_in_the_named_encoding(make: Make):
    data = "Café menu\n\nThe crème brûlée costs 5 € at the harbour café.\n".encode("cp1252")
    with pytest.raises(DocumentError, match=r"does not decode as utf-8 .*encoding setting"):
        make(encoding="utf-8").process(doc_of(data, "menu.txt"))  # set: strict
    doc = make(encoding="cp1252").process(doc_of(data, "menu.txt"))
    assert "The crème brûlée costs 5 € at the harbour café." in texts(doc)
    assert not doc.warnings


def test_an_unset_encoding_is_detected_and_said(make: Make):
    data = "Café menu\n\nThe crème brûlée costs 5 € at the harbour café.\n".encode("cp1252")
    doc = make().process(doc_of(data, "menu.txt"))
    assert "The crème brûlée costs 5 € at the harbour café." in texts(doc)
    assert any("read as cp1252, detected from its bytes" in w for w in doc.warnings)
    czech = "Příliš žluťoučký kůň úpěl ďábelské ódy.\n".encode("cp1250")
    doc = make().process(doc_of(czech, "kun.txt"))
    assert "Příliš žluťoučký kůň úpěl ďábelské ódy." in texts(doc)


@pytest.mark.corpus
def test_encoding_cp1252_on_the_corpus_html(make: Make, corpus: Path):
    path = corpus / "docs" / "fake-html-cp1252.html"
    with pytest.raises(DocumentError, match="does not decode as utf-8"):
        make(encoding="utf-8").process(doc_of(path))
    detected = make().process(doc_of(path))
    assert "L'été était très chaud cette année." in texts(detected)
    doc = make(encoding="cp1252").process(doc_of(path))
    assert "L'été était très chaud cette année." in texts(doc)
    assert "Der Preis betrug 15,50 €." in texts(doc)


def test_coordinates_only_when_asked(make: Make):
    on = make(coordinates=True).process(doc_of(TWO_PAGES, "report.pdf"))
    off = make().process(doc_of(TWO_PAGES, "report.pdf"))
    assert pairs(on) == pairs(off)
    for element in on.elements:
        coordinates = element["metadata"]["coordinates"]
        assert len(coordinates["points"]) == 4 and coordinates["system"] == "PixelSpace"
        assert coordinates["layout_width"] == 612
    assert not any("coordinates" in e["metadata"] for e in off.elements)


def test_extract_image_block_types_stores_inline_html_images(make: Make):
    logo = base64.b64encode(TINY_PNG).decode()
    image = f'<img src="data:image/png;base64,{logo}" alt="logo">'
    html = f"<h1>Logo</h1><p>The new harbour logo.</p>{image}"
    plain = make().process(doc_of(html.encode(), "logo.html"))
    images = make(extract_image_block_types=["Image"]).process(doc_of(html.encode(), "logo.html"))
    assert pairs(plain) == pairs(images)
    (element,) = [e for e in images.elements if e["type"] == "Image"]
    assert element["metadata"]["image_mime_type"] == "image/png"
    assert base64.b64decode(element["metadata"]["image_base64"]) == TINY_PNG
    assert not any("image_base64" in e["metadata"] for e in plain.elements)


def test_extract_image_block_types_on_a_pdf_is_a_warning(make: Make):
    doc = make(extract_image_block_types=["Image"]).process(doc_of(TWO_PAGES, "report.pdf"))
    assert doc.elements
    assert doc.warnings == [
        "extract_image_block_types is not applied to PDFs by the Fast strategy (it needs hi_res)"
    ]


def test_unique_element_ids_true_gives_fresh_uuid4s(make: Make):
    first = make(unique_element_ids=True).process(doc_of(DOCS / "notes.txt"))
    second = make(unique_element_ids=True).process(doc_of(DOCS / "notes.txt"))
    ids = [e["element_id"] for e in first.elements]
    assert all(uuid.UUID(i).version == 4 for i in ids)
    assert len(set(ids)) == len(ids)
    assert not set(ids) & {e["element_id"] for e in second.elements}


def test_deterministic_ids_are_stable_and_unique_with_duplicate_paragraphs(make: Make):
    first = make(unique_element_ids=False).process(doc_of(DOCS / "notes.txt"))
    again = make(unique_element_ids=False).process(doc_of(DOCS / "notes.txt"))
    as_bytes = make(unique_element_ids=False).process(
        doc_of((DOCS / "notes.txt").read_bytes(), "notes.txt")
    )
    ids = [e["element_id"] for e in first.elements]
    assert [t for _, t in pairs(first)].count(HARBOUR) == 2  # the same paragraph twice
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert ids == [e["element_id"] for e in again.elements]
    assert ids == [e["element_id"] for e in as_bytes.elements]


@pytest.mark.corpus
def test_deterministic_ids_unique_over_duplicate_pdf_pages(make: Make, corpus: Path):
    doc = make(unique_element_ids=False).process(
        doc_of(corpus / "docs" / "pdf" / "DA-1p-with-duplicate-pages.pdf")
    )
    texts_seen = [t for _, t in pairs(doc)]
    ids = [e["element_id"] for e in doc.elements]
    assert len(set(texts_seen)) < len(texts_seen)  # the pages repeat
    assert len(set(ids)) == len(ids)


def test_metadata_filename_filetype_languages_and_data_source(fast: UnstructuredPartitionStage):
    source: dict[str, Any] = {
        "url": "file:///srv/docs/report.pdf",
        "record_locator": {"protocol": "file", "remote_file_path": "/srv/docs/report.pdf"},
        "permissions_data": [{"read": {"users": ["ana"], "groups": []}}],
    }
    doc = fast.process(doc_of(TWO_PAGES, "reports/report.pdf", data_source=source))
    for element in doc.elements:
        metadata = element["metadata"]
        assert metadata["filename"] == "report.pdf"
        assert metadata["file_directory"] == "reports"
        assert metadata["filetype"] == "application/pdf"
        assert metadata["languages"] == ["eng"]
        assert metadata["page_number"] in (1, 2)
        assert metadata["data_source"] == source
    doc.elements[0]["metadata"]["data_source"]["record_locator"]["protocol"] = "changed"
    assert doc.elements[1]["metadata"]["data_source"]["record_locator"]["protocol"] == "file"
    assert source["record_locator"]["protocol"] == "file"  # each element holds its own copy


def test_no_data_source_when_the_document_has_none(fast: UnstructuredPartitionStage):
    doc = fast.process(doc_of(DOCS / "guide.md"))
    assert not any("data_source" in e["metadata"] for e in doc.elements)


# --- 4. what needs OCR ----------------------------------------------------------------------------
def test_an_image_needs_ocr(fast: UnstructuredPartitionStage):
    with pytest.raises(DocumentError, match=r"^Partitioner: logo\.png: needs OCR: the Fast strat"):
        fast.process(doc_of(TINY_PNG, "logo.png"))


def test_a_pdf_without_a_text_layer_needs_ocr(fast: UnstructuredPartitionStage):
    with pytest.raises(DocumentError, match=r"needs OCR: .*1 page\(s\) and no text layer"):
        fast.process(doc_of(make_pdf([""]), "scan.pdf"))


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["loremipsum-flat.pdf", "single_table.pdf"])
def test_scanned_corpus_pdfs_need_ocr(fast: UnstructuredPartitionStage, corpus: Path, name: str):
    with pytest.raises(DocumentError, match="needs OCR: the Fast strategy reads only text layers"):
        fast.process(doc_of(corpus / "docs" / "pdf" / name))


def test_a_pdf_with_a_blank_page_warns_with_its_number(fast: UnstructuredPartitionStage):
    doc = fast.process(
        doc_of(make_pdf(["Opening page of the log.", "", "Closing remarks."]), "l.pdf")
    )
    assert texts(doc) == "Opening page of the log.\nClosing remarks."
    assert doc.warnings == [
        "1 of 3 PDF page(s) gave no text (2): blank, or scanned and needing OCR (strategy hi_res)"
    ]


# --- 5. bad input fails alone, in one line --------------------------------------------------------
BAD_CORPUS = {
    "failing-encrypted.pdf": r"encrypted PDF: it opens only with a password",
    "failing-invalid.pdf": r"not a PDF: the name ends in \.pdf but the content is text/plain",
    "failing-missing-pages.pdf": r"damaged PDF: PdfReadError: Invalid object in /Pages",
    "failing-missing-root.pdf": r"damaged PDF: no %PDF- header",
}


@pytest.mark.corpus
@pytest.mark.parametrize("breaks", [False, True], ids=["", "page-breaks"])
@pytest.mark.parametrize("name", sorted(BAD_CORPUS))
def test_bad_corpus_pdfs_fail_with_their_reason(make: Make, corpus: Path, name: str, breaks: bool):
    # With page breaks on, the library answers some broken PDFs with a lone PageBreak.
    with pytest.raises(DocumentError, match=BAD_CORPUS[name]) as caught:
        make(include_page_breaks=breaks).process(doc_of(corpus / "bad" / name))
    assert "\n" not in str(caught.value)


@pytest.mark.corpus
def test_password_protected_pdf(fast: UnstructuredPartitionStage, corpus: Path):
    with pytest.raises(DocumentError, match=r"^Partitioner: password\.pdf: encrypted PDF: "):
        fast.process(doc_of(corpus / "docs" / "pdf" / "password.pdf"))


@pytest.mark.parametrize(
    ("data", "name", "reason"),
    [
        (b"", "empty.txt", r"empty file \(0 bytes\)"),
        (
            bytes(range(256)) * 8,
            "notes.txt",
            r"binary content: .*\(\.txt\) but its bytes are not text",
        ),
        (
            NOISE.randbytes(4096),
            "blob.xyz",
            r"unknown or unsupported file type \(content: application/oc",
        ),
        (TWO_PAGES[: len(TWO_PAGES) // 2], "cut.pdf", r"truncated or damaged PDF: no %%EOF marker"),
        (b"%PDF-1.4\n" + NOISE.randbytes(2048) + b"\n%%EOF\n", "noise.pdf", r"damaged PDF: "),
    ],
    ids=["zero-bytes", "binary-txt", "unknown-type", "truncated-pdf", "garbage-pdf"],
)
def test_bad_bytes_fail_with_a_one_line_reason(
    fast: UnstructuredPartitionStage, data: bytes, name: str, reason: str
):
    with pytest.raises(DocumentError, match=reason) as caught:
        fast.process(doc_of(data, name))
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"Partitioner: {name}: ")


@pytest.mark.parametrize("text", ["x", "a", "7", "ab", "é", "€", "日", "x\n"])
def test_tiny_texts_are_read_as_text(fast: UnstructuredPartitionStage, text: str):
    """libmagic calls every 1-byte file application/octet-stream: it is text all the same."""
    out = fast.process(doc_of(text.encode(), "tiny.txt"))
    assert [e["text"] for e in out.elements] == [text.strip()]


@pytest.mark.parametrize("data", [b"\x00", b"\x01", b"\xff", b"\x1b\x02"])
def test_tiny_bytes_that_are_not_text_are_still_binary(
    fast: UnstructuredPartitionStage, data: bytes
):
    with pytest.raises(DocumentError, match=r"binary content: .*\(\.txt\) but its bytes are not"):
        fast.process(doc_of(data, "tiny.txt"))


def nested_html(depth: int, after: int = 1) -> bytes:
    """A page with a paragraph before, one `depth` levels deep, and `after` paragraphs after."""
    tail = "".join(f"<p>After the deep part, paragraph {i}.</p>" for i in range(after))
    return (
        "<html><body><p>Before the deep part.</p>"
        + "<div>" * depth
        + "<p>The deepest paragraph.</p>"
        + "</div>" * depth
        + tail
        + "</body></html>"
    ).encode()


@pytest.mark.parametrize("after", [1, 3000], ids=["small", "over-the-prefetch-size"])
def test_html_nested_300_levels_is_read_in_full(fast: UnstructuredPartitionStage, after: int):
    """lxml stops at 256 levels unless told otherwise: the deep text and all after it were lost,
    and the document succeeded."""
    out = fast.process(doc_of(nested_html(300, after), "deep.html"))
    expected = ["Before the deep part.", "The deepest paragraph."]
    expected += [f"After the deep part, paragraph {i}." for i in range(after)]
    assert [e["text"] for e in out.elements] == expected
    assert out.warnings == []


@pytest.mark.parametrize("depth", [600, 5000])
def test_html_nested_deeper_than_the_partitioner_reads_fails_naming_it(
    fast: UnstructuredPartitionStage, depth: int
):
    found = "more than 2\\d{3}" if depth > 2048 else "60\\d"  # libxml2 stops at 2048 even so
    with pytest.raises(
        DocumentError, match=rf"^Partitioner: deep\.html: the HTML is nested {found} "
    ):
        fast.process(doc_of(nested_html(depth), "deep.html"))


def test_an_email_whose_html_body_is_too_deep_fails_naming_it(fast: UnstructuredPartitionStage):
    message = EmailMessage()
    message["Subject"] = "Deep"
    message.set_content("The plain part.\n")
    message.add_alternative(nested_html(5000).decode(), subtype="html")
    with pytest.raises(DocumentError, match=r"^Partitioner: deep\.eml: the HTML is nested more"):
        fast.process(doc_of(bytes(message), "deep.eml"))


def test_a_directory_a_missing_path_no_content_and_a_pipe(
    fast: UnstructuredPartitionStage, tmp_path: Path
):
    with pytest.raises(DocumentError, match="not a file: the path is a directory"):
        fast.process(doc_of(tmp_path, "folder.txt"))
    with pytest.raises(DocumentError, match="file not found"):
        fast.process(doc_of(tmp_path / "gone.txt"))
    with pytest.raises(DocumentError, match="neither a path nor data"):
        fast.process(Document("d", "r", "nothing.txt"))
    os.mkfifo(tmp_path / "pipe.txt")  # opening it to read would block: it must not be opened
    with pytest.raises(DocumentError, match=r"not a regular file \(a device, socket or pipe\)"):
        fast.process(doc_of(tmp_path / "pipe.txt"))


_UNREADABLE = """
import os, sys
from pathlib import Path
from ingestflow.elements import Document
from ingestflow.errors import DocumentError
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage
stage = UnstructuredPartitionStage(
    "p", "unstructured_api", UnstructuredPartitionSettings(strategy="fast"), RunContext()
)
stage.open()
stage.process(Document("w", "w", "warm.txt", data=b"Warm up every lazy import."))
if os.geteuid() == 0:  # root reads a file whatever its mode: drop to nobody first
    os.setgid(65534)
    os.setuid(65534)
try:
    stage.process(Document("d", "r", "secret.txt", path=Path(sys.argv[1])))
except DocumentError as exc:
    print("ERROR", exc)
"""


@pytest.mark.slow
def test_an_unreadable_file():
    folder = Path(tempfile.mkdtemp(prefix="ingestflow-unreadable-"))
    try:
        folder.chmod(0o755)
        path = folder / "secret.txt"
        path.write_text("hidden")
        path.chmod(0)
        env = {**os.environ, "HOME": str(folder)}
        out = subprocess.run(
            [sys.executable, "-c", _UNREADABLE, str(path)],
            capture_output=True,
            text=True,
            env=env,
            cwd=folder,
            timeout=120,
        )
        assert "ERROR" in out.stdout, out.stdout + out.stderr
        assert "cannot read the file: Permission denied" in out.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_text_file_with_no_text_succeeds_empty_with_a_warning(fast: UnstructuredPartitionStage):
    doc = fast.process(doc_of(b"   \n\n  \n", "blank.txt"))
    assert doc.elements == []
    assert doc.warnings == ["no text: the document yielded no element with text"]


def test_one_bad_document_does_not_disturb_the_next(fast: UnstructuredPartitionStage):
    with pytest.raises(DocumentError, match="empty file"):
        fast.process(doc_of(b"", "empty.md"))
    assert "Getting Started with Ingestion" in texts(fast.process(doc_of(DOCS / "guide.md")))


# --- 6. email attachments -------------------------------------------------------------------------
def test_email_keeps_its_body_and_readable_attachments_and_reports_the_rest(
    fast: UnstructuredPartitionStage,
):
    doc = fast.process(doc_of(DOCS / "memo.eml"))
    body = [e for e in doc.elements if "attached_to_filename" not in e["metadata"]]
    attached = [e for e in doc.elements if "attached_to_filename" in e["metadata"]]
    assert "The season meeting is on Friday at ten in the harbour office." in [
        e["text"] for e in body
    ]
    assert {e["metadata"]["filename"] for e in body} == {"memo.eml"}
    assert "Review of the tide tables for the coming season." in [e["text"] for e in attached]
    for element in attached:
        assert element["metadata"]["filename"] == "agenda.txt"
        assert element["metadata"]["attached_to_filename"] == "memo.eml"
        assert element["metadata"]["filetype"] == "text/plain"
    assert len(doc.warnings) == 1
    assert re.fullmatch(r"attachment 'logo\.png' skipped: needs OCR: .*", doc.warnings[0])


def test_email_attachment_failures_each_get_a_line_and_ids_stay_unique(make: Make):
    agenda = b"Review of the tide tables for the coming season.\n"
    data = email_with(
        (agenda, "text", "plain", "agenda.txt"),
        (agenda, "text", "plain", "agenda.txt"),
        (TINY_PNG, "image", "png", "chart.png"),
        (NOISE.randbytes(2048), "application", "octet-stream", "blob.bin"),
        (b"", "application", "pdf", "empty.pdf"),
    )
    doc = make(unique_element_ids=False).process(doc_of(data, "notes.eml"))
    ids = [e["element_id"] for e in doc.elements]
    assert len(set(ids)) == len(ids)
    assert [e["text"] for e in doc.elements].count(agenda.decode().strip()) == 2
    assert len(doc.warnings) == 3
    assert doc.warnings[0].startswith("attachment 'chart.png' skipped: needs OCR")
    assert doc.warnings[1].startswith("attachment 'blob.bin' skipped: unknown or unsupported")
    assert doc.warnings[2] == "attachment 'empty.pdf' skipped: empty file (0 bytes)"


@pytest.mark.corpus
def test_corpus_email_with_an_image_attachment(fast: UnstructuredPartitionStage, corpus: Path):
    from unstructured.partition.auto import partition

    path = corpus / "docs" / "eml" / "fake-email-image-embedded.eml"
    body = partition(filename=str(path), strategy="fast", process_attachments=False)
    doc = fast.process(doc_of(path))
    assert pairs(doc) == [(e.category, e.text) for e in body]
    assert doc.warnings == [
        "attachment 'unstructured_logo.png' skipped: needs OCR: the Fast strategy reads only text "
        "layers; use strategy hi_res (the file is an image, image/png)"
    ]


# --- 7. path or bytes -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["notes.txt", "memo.eml", "page.html"])
def test_bytes_and_path_give_the_same_elements_and_no_temporary_path(make: Make, name: str):
    stage = make(unique_element_ids=False)
    from_path = stage.process(doc_of(DOCS / name))
    from_bytes = stage.process(doc_of((DOCS / name).read_bytes(), name))
    assert from_bytes.elements

    def timeless(element: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in element["metadata"].items() if k != "last_modified"}
        return {**element, "metadata": meta}

    assert [timeless(e) for e in from_path.elements] == [timeless(e) for e in from_bytes.elements]
    dumped = json.dumps(from_bytes.elements)
    assert "ingestflow-partition-" not in dumped and tempfile.gettempdir() not in dumped
    if name != "memo.eml":  # an email's last_modified is its Date header, a file's its mtime
        assert not any("last_modified" in e["metadata"] for e in from_bytes.elements)


@pytest.mark.parametrize("name", ["..", "../../escape.txt", "x" * 300 + ".txt"])
def test_odd_names_of_bytes_stay_inside_a_private_temporary_folder(
    fast: UnstructuredPartitionStage, name: str
):
    doc = fast.process(doc_of(b"Plain words in a file with an odd name.\n", name))
    assert texts(doc) == "Plain words in a file with an odd name."
    assert not Path(tempfile.gettempdir(), "escape.txt").exists()


# --- 8. conformance with the library --------------------------------------------------------------
CONFORMANCE = [
    {"unique_element_ids": False},
    {
        "unique_element_ids": False,
        "include_page_breaks": True,
        "coordinates": True,
        "xml_keep_tags": True,
        "exclude_elements": ["Header", "Footer", "UncategorizedText"],
        "extract_image_block_types": ["Image", "Table"],
    },
]


def corpus_documents() -> list[Path]:
    """Corpus documents up to 1 MB, less those MANIFEST.tsv marks as benchmarks (872 pages...)."""
    if not CORPUS.is_dir():
        return []
    benchmarks = {
        row.split("\t")[1]
        for row in (CORPUS / "MANIFEST.tsv").read_text().splitlines()
        if "benchmark" in row.split("\t")[-1]
    }
    return sorted(
        p
        for p in (CORPUS / "docs").rglob("*")
        if p.is_file()
        and p.stat().st_size <= MAX_CORPUS_BYTES
        and p.relative_to(CORPUS).as_posix() not in benchmarks
    )


def _pdfium_reads_text(path: Path) -> bool:
    """True when pdfium finds text in the PDF's text layer (the Fast stage's documented fallback
    where the library's pdfminer reads none); False for a PDF it cannot open (encrypted)."""
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(str(path))
    except pypdfium2.PdfiumError:
        return False
    try:
        return any(page.get_textpage().get_text_range().strip() for page in pdf)
    finally:
        pdf.close()


@pytest.mark.corpus
@pytest.mark.parametrize("options", CONFORMANCE, ids=["defaults", "breaks-coordinates-exclude"])
@pytest.mark.slow
def test_corpus_conformance_with_the_library(make: Make, corpus: Path, options: dict[str, Any]):
    """Types, text, ids and metadata equal the library's own call, except the documented changes."""
    from unstructured.partition.auto import partition

    stage = make(**options)
    st = stage.settings
    excluded = set(st.exclude_elements or ())
    checked = 0
    for path in corpus_documents():
        kwargs = {
            "strategy": "fast",
            "encoding": st.encoding,
            "include_page_breaks": st.include_page_breaks,
            "xml_keep_tags": st.xml_keep_tags,
            "unique_element_ids": st.unique_element_ids,
            "extract_image_block_types": st.extract_image_block_types,
            "extract_image_block_to_payload": bool(st.extract_image_block_types),
        }
        try:
            expected = [e.to_dict() for e in partition(filename=str(path), **kwargs)]
        except UnicodeDecodeError:  # not utf-8: detected when the workflow set no encoding
            if "encoding" in st.model_fields_set:
                with pytest.raises(DocumentError, match="does not decode as"):
                    stage.process(doc_of(path))
            else:
                detected = stage.process(doc_of(path))
                assert any("detected from its bytes" in w for w in detected.warnings)
            continue
        except Exception:  # the library cannot read it under Fast: the stage must say why
            if path.suffix == ".eml":  # ... except an email, whose body is kept
                expected = [
                    e.to_dict()
                    for e in partition(filename=str(path), process_attachments=False, **kwargs)
                ]
            else:
                with pytest.raises(DocumentError, match=rf"^Partitioner: {re.escape(path.name)}: "):
                    stage.process(doc_of(path))
                continue
        if path.suffix == ".pdf" and not any(e["text"].strip() for e in expected):
            if _pdfium_reads_text(path):  # pdfminer reads nothing, pdfium reads the text layer
                read = stage.process(doc_of(path))
                assert any(e["text"].strip() for e in read.elements), path.name
                assert any("taken from pdfium" in w for w in read.warnings), path.name
            else:
                with pytest.raises(DocumentError, match=r"encrypted PDF|needs OCR"):
                    stage.process(doc_of(path))
            continue
        doc = stage.process(doc_of(path, data_source={"url": f"file://{path}"}))
        expected = [e for e in expected if e["type"] not in excluded]
        assert [(e["type"], e["text"]) for e in doc.elements] == [
            (e["type"], e["text"]) for e in expected
        ], path.name
        for got, want in zip(doc.elements, expected, strict=True):
            got_meta = dict(got["metadata"])
            assert got_meta.pop("data_source") == {"url": f"file://{path}"}
            want_meta = dict(want["metadata"])
            want_meta.pop("file_directory", None)  # the stage names files by doc.filename
            if not st.coordinates:
                want_meta.pop("coordinates", None)
            if "attached_to_filename" in want_meta:  # attachments are partitioned one by one
                assert got_meta["filename"] == want_meta["filename"]
                continue
            assert got["element_id"] == want["element_id"], path.name
            assert got_meta == want_meta, path.name
        checked += 1
    assert checked >= 20


# --- strategies that are not available offline ----------------------------------------------------
def test_an_unknown_encoding_is_invalid_at_precheck():
    st = UnstructuredPartitionSettings(strategy="fast", encoding="klingon-8")
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", st, RunContext())
    with pytest.raises(WorkflowInvalid, match=r"Partitioner\.settings\.encoding: unknown text enc"):
        stage.precheck()


def test_vlm_needs_a_model_server():
    st = VLMPartitionSettings(is_dynamic=False, allow_fast=True)
    stage = VLMPartitionStage("Partitioner", "vlm", st, RunContext())
    with pytest.raises(EnvironmentProblem, match=r"set INGESTFLOW_PROVIDER_A_BASE_URL"):
        stage.precheck()


def test_a_pdf_pdfminer_cannot_read_falls_back_to_pdfium_with_a_warning(make: Make):
    import re

    good = make_pdf([f"Quarterly Report\n{HARBOUR}", "The second page tells how the season ended."])
    broken = re.sub(rb"/Length (\d+)", b"/Length 3", good)  # pdfminer reads nothing of it
    doc = make(unique_element_ids=False).process(doc_of(broken, "report.pdf"))
    assert HARBOUR in texts(doc) and "how the season ended" in texts(doc)
    assert [e["metadata"]["page_number"] for e in doc.elements][-1] == 2
    assert {e["metadata"]["filetype"] for e in doc.elements} == {"application/pdf"}
    assert any("pdfium reads" in w for w in doc.warnings)
    again = make(unique_element_ids=False).process(doc_of(broken, "report.pdf"))
    assert [e["element_id"] for e in again.elements] == [e["element_id"] for e in doc.elements]
