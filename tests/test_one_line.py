"""`errors.one_line`, the one helper that turns an exception into the line a user or the log
sees (job records, document failures, the server's log)."""

from __future__ import annotations

import re

from ingestflow.errors import OUT_OF_MEMORY, DocumentError, one_line


def _raised(exc: Exception) -> Exception:
    try:
        raise exc
    except Exception as caught:
        return caught


def test_an_ingestflow_error_is_its_message_alone() -> None:
    assert one_line(_raised(DocumentError("file not found"))) == "file not found"


def test_another_error_names_its_class_and_where_it_was_raised_on_one_line() -> None:
    text = one_line(_raised(ValueError("bad value\n  on the second line")))
    assert re.fullmatch(
        r"ValueError: bad value on the second line \(in test_one_line\.py:\d+\)", text
    )
    assert one_line(_raised(ValueError("bad")), where=False) == "ValueError: bad"
    assert "Traceback" not in text and "/" not in text  # a file's name, never its path


def test_a_long_message_is_cut_with_an_ellipsis() -> None:
    text = one_line(_raised(DocumentError("x" * 1000)), limit=300)
    assert len(text) == 300 and text.endswith("…")
    assert len(one_line(_raised(DocumentError("y" * 1000)))) == 500


def test_running_out_of_memory_says_what_to_do() -> None:
    assert one_line(_raised(MemoryError())) == OUT_OF_MEMORY
