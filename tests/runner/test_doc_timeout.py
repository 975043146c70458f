"""`--doc-timeout` bounds a document's time in a node, the page ranges of a long PDF spread over
the workers together, not each range alone."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from ingestflow.runner.events import PagesPartitioned
from tests.runner.test_split import long_pdf, run, workflow

#: Loaded by every Python process started with its folder first on PYTHONPATH (the run's
#: workers): each page range takes at least RANGE_FLOOR seconds, however fast the machine, so
#: that the ranges of a document together surely take longer than the timeout.
_SLOW_RANGES = """
import time
from ingestflow.stages.partition import UnstructuredPartitionStage

_process_part = UnstructuredPartitionStage.process_part


def process_part(self, doc, pages):
    time.sleep({floor})
    return _process_part(self, doc, pages)


UnstructuredPartitionStage.process_part = process_part
"""
RANGE_FLOOR = 3
TIMEOUT = 10  # over one range (its floor, its work, a worker's imports); under five floors


def test_the_budget_is_what_the_documents_finished_ranges_left() -> None:
    from ingestflow.runner.budget import DocBudget

    budget = DocBudget(4.0, "Partitioner: log.pdf", "pages")
    assert budget.remaining() == 4.0 and not budget.exceeded()
    budget.charge(1.5)
    budget.charge(1.5)
    assert budget.remaining() == 1.0 and not budget.exceeded()
    budget.charge(1.5)
    assert budget.remaining() == 0.0 and budget.exceeded()
    unbounded = DocBudget(None)
    unbounded.charge(1e9)
    assert unbounded.remaining() is None and not unbounded.exceeded()
    assert budget.over() == (
        "Partitioner: log.pdf took longer than 4 s, its page ranges together, and was stopped "
        "(--doc-timeout; raise it to give long documents more time)"
    )


@pytest.mark.slow
def test_a_long_pdfs_page_ranges_together_are_bound_by_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_SLOW_RANGES.format(floor=RANGE_FLOOR))
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hooks), path])))
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "log.pdf").write_bytes(long_pdf(120))  # five ranges of 24 pages on two workers
    (folder / "notes.txt").write_text("A short note beside the long log.\n")
    record, events, _ = run(tmp_path, workflow(), folder, 2, "two", doc_timeout=TIMEOUT)
    pages = [event for event in events if isinstance(event, PagesPartitioned)]
    assert pages and pages[0].parts * RANGE_FLOOR > TIMEOUT  # split, and over it together
    status = {f["filename"]: (f["status"], f["error"]) for f in record["files"]}
    assert status["notes.txt"] == ("SUCCESS", None), status
    state, error = status["log.pdf"]
    assert state == "FAILED"
    assert error.startswith(
        f"Partitioner: log.pdf took longer than {TIMEOUT} s, its page ranges together, and was "
        "stopped (--doc-timeout"
    ), error


def test_a_timeout_during_an_import_waits_for_the_import_to_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module cut off half-way through its import fails every later document of the worker
    (e.g. "partially initialized module 'pandas' has no attribute 'core'")."""
    import sys

    from ingestflow.runner import worker

    (tmp_path / "slow_to_import.py").write_text("import time\ntime.sleep(1)\nDONE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_to_import", raising=False)
    with (
        pytest.raises(worker.DocumentTimeout, match=r"took longer than 0.1 s"),
        worker._deadline(0.1, "importing"),
    ):
        import slow_to_import  # noqa: F401 - the alarm fires during its sleep
    assert sys.modules["slow_to_import"].DONE  # imported whole, then stopped


def test_a_timeout_is_not_taken_for_the_works_own_failure() -> None:
    """Code inside that catches every Exception (a library's per-page handler, a reader that
    falls back to another reader) neither swallows the timeout nor goes on after it."""
    import time

    from ingestflow.runner import worker

    went_on: list[str] = []

    def reader_with_a_fallback() -> None:
        try:
            time.sleep(5)  # the alarm fires here
        except Exception:
            went_on.append("the fallback reader")

    with (
        pytest.raises(worker.DocumentTimeout, match=r"reading took longer than 0.1 s"),
        worker._deadline(0.1, "reading"),
    ):
        reader_with_a_fallback()
    assert went_on == []


def test_an_alarm_swallowed_where_python_only_prints_it_fires_again() -> None:
    """The alarm can land where Python prints an exception and goes on (a weakref callback, a
    __del__: CI saw it land in WeakSet's callback, and a 600-page PDF ran on unbounded). It
    fires again until the work stops, and work that ends after a lost alarm is over the limit."""
    import time

    from ingestflow.runner import worker

    def swallow(seconds: float) -> None:  # stands for the callback: takes what is raised in it
        with contextlib.suppress(BaseException):
            time.sleep(seconds)

    began = time.perf_counter()
    with pytest.raises(worker.DocumentTimeout), worker._deadline(0.1, "reading"):
        swallow(5)  # the first alarm is lost here
        time.sleep(5)  # the next one lands here
    assert time.perf_counter() - began < 2
    with pytest.raises(worker.DocumentTimeout), worker._deadline(0.1, "reading"):
        swallow(0.3)  # lost, and the work then ends at once


def test_a_fast_pdf_past_the_timeout_fails_with_it_and_switches_no_reader(tmp_path: Path) -> None:
    """A 600-page text PDF under Fast, one worker, a limit a tenth of its time: the timeout used
    to fire inside pdfminer, which then read "no text", and pdfium's text came out instead
    (7,649 elements and a false warning, after twice the time)."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "log.pdf").write_bytes(long_pdf(600))
    record, _, out = run(tmp_path, workflow(), folder, 1, "one", doc_timeout=0.5)
    [entry] = record["files"]
    assert entry["status"] == "FAILED", entry
    assert entry["error"].startswith("Partitioner: log.pdf took longer than 0.5 s and was stopped")
    assert not (out / "log.pdf.json").exists()
