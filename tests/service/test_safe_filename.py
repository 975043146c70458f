"""Upload names as stored: only a name, at most 255 bytes of UTF-8 (the filesystems' NAME_MAX),
cut before the extension and never inside a character."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestflow.service.uploads import safe_filename

MAX_NAME_BYTES = 255  # NAME_MAX of ext4, xfs, btrfs, tmpfs


@pytest.mark.parametrize(
    ("name", "suffix"),
    [
        ("a" * 300 + ".pdf", ".pdf"),
        ("é" * 200 + ".txt", ".txt"),
        ("🙂" * 100 + ".md", ".md"),
        ("名" * 90 + "x.tar.gz", ".gz"),
        ("b" * 250 + ".docx", ".docx"),
    ],
)
def test_a_long_name_is_cut_to_255_bytes_keeping_its_extension(name: str, suffix: str) -> None:
    cut = safe_filename(name, 0)
    assert len(cut.encode()) <= MAX_NAME_BYTES
    assert len(cut.encode()) > MAX_NAME_BYTES - 4  # cut at the limit, not far before it
    assert cut.endswith(suffix) and name.startswith(cut.removesuffix(suffix))


def test_a_name_of_exactly_255_bytes_is_kept_whole() -> None:
    name = "é" * 125 + "x.txt"  # 250 + 5 bytes
    assert len(name.encode()) == 255
    assert safe_filename(name, 0) == name


def test_a_suffix_too_long_to_be_an_extension_is_cut_with_the_rest() -> None:
    name = "report." + "z" * 300
    cut = safe_filename(name, 0)
    assert cut == name.encode()[:MAX_NAME_BYTES].decode()


def test_a_lone_surrogate_in_a_name_is_replaced() -> None:
    assert safe_filename("notes\udc80.txt", 0) == "notes?.txt"


@settings(max_examples=300, deadline=None)
@given(
    st.text(min_size=1, max_size=400)
    | st.text(st.characters(min_codepoint=0x80), min_size=100, max_size=400),
    st.sampled_from(["", ".txt", ".pdf", ".日本"]),
)
def test_any_name_fits_and_stays_a_name(stem: str, suffix: str) -> None:
    cut = safe_filename(stem + suffix, 3)
    raw = cut.encode("utf-8")  # valid UTF-8: no split character, no lone surrogate
    assert 0 < len(raw) <= MAX_NAME_BYTES
    assert "/" not in cut and "\\" not in cut and "\0" not in cut
    assert cut not in (".", "..") and not cut.startswith(".")
