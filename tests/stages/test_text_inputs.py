"""Text inputs a new user tripped on: a CSV row with more fields than its header fails with one
clear line (issue 37, 24); UTF-16 text without a byte-order mark is read (issue 37, 16)."""

from __future__ import annotations

import pytest

from ingestflow.errors import DocumentError
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage
from tests.stages.test_partition import doc_of, texts


@pytest.fixture(scope="module")
def fast() -> UnstructuredPartitionStage:
    st = UnstructuredPartitionSettings(strategy="fast")
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", st, RunContext())
    stage.open()
    return stage


def test_a_csv_row_longer_than_its_header_is_said_in_one_line(fast: UnstructuredPartitionStage):
    data = b"name,port,year\nAlma,Bergen,1901\nBrisk,Oslo,Kiel,1902,extra\n"
    with pytest.raises(
        DocumentError,
        match=r"^Partitioner: ships\.csv: the CSV file's line 3 has 5 fields where its header "
        r"has 3: quote the values that hold the delimiter",
    ) as caught:
        fast.process(doc_of(data, "ships.csv"))
    assert "ParserError" not in str(caught.value) and "\n" not in str(caught.value)


TEXT = "Harbour notes\n\nThe ships came in early spring, and the harbour opened.\n"
MAIL = (
    "From: a@example.com\nTo: b@example.com\nSubject: Harbour\n"
    "Date: Mon, 1 Jan 2024 10:00:00 +0000\nContent-Type: text/plain; charset=utf-8\n\n"
    "The ships came in early spring.\n"
)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_text_without_a_byte_order_mark_is_read(
    fast: UnstructuredPartitionStage, encoding: str
):
    doc = fast.process(doc_of(TEXT.encode(encoding), "notes.txt"))
    assert texts(doc) == "Harbour notes\nThe ships came in early spring, and the harbour opened."
    assert any(f"read as {encoding}, detected from its bytes" in w for w in doc.warnings)
    mail = fast.process(doc_of(MAIL.encode(encoding), "mail.eml"))
    assert texts(mail) == "The ships came in early spring."
    assert mail.elements[0]["metadata"]["subject"] == "Harbour"


@pytest.mark.parametrize(
    "data",
    [b"ab\0\0cd\0\0" * 8 + b"\0a\0b" * 8, b"x" * 10 + b"\0" + b"y" * 9],
    ids=["both-sides", "a-stray-nul"],
)
def test_nuls_that_are_not_utf16_are_still_binary(fast: UnstructuredPartitionStage, data: bytes):
    with pytest.raises(DocumentError, match=r"binary content: .*\(\.txt\) but its bytes are not"):
        fast.process(doc_of(data, "data.txt"))
