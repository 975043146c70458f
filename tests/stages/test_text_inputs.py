"""Text inputs a new user tripped on: a CSV row with more fields than its header fails with one
clear line (issue 37, 24); UTF-16 text without a byte-order mark is read (issue 37, 16)."""

from __future__ import annotations

import pytest

from ingestflow.errors import DocumentError
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage
from tests.stages.test_partition import doc_of


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
