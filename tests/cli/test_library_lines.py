"""Honest messages: a run's output holds only what ingestflow says (progress, summary, errors),
never the libraries' own log lines ("Cannot set non-stroke color…", "No languages specified…"),
on every partition strategy, unless --verbose asks for them. Each case is a real `ingestflow run`
in a subprocess with its output piped, on a real third-party page with images and tables."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_polish_cli import EXE
from tests.fakes.models import FakeModelServer
from tests.stages.test_vlm import PAGE_HTML

pytestmark = [pytest.mark.slow, pytest.mark.corpus]
STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")  # a progress line
# what the libraries say on this page and on the scan when they are let through
LIBRARY_LINES = ("Cannot set", "No languages specified", "WARNING")
STRATEGIES: dict[str, dict[str, Any]] = {
    "fast": {"subtype": "unstructured_api", "settings": {"strategy": "fast"}},
    "hi_res": {"subtype": "unstructured_api", "settings": {"strategy": "hi_res"}},
    "auto": {
        "subtype": "vlm",
        "settings": {"is_dynamic": True, "allow_fast": True, "provider": "anthropic"},
    },
    "vlm": {"subtype": "vlm", "settings": {"is_dynamic": False, "provider": "anthropic"}},
}


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeModelServer]:
    with FakeModelServer(key="vlm-key") as server:
        server.reply(lambda request: PAGE_HTML.format(page="1"))
        yield server


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_no_library_log_line_reaches_the_output_unless_verbose(
    strategy: str, corpus: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    # the page that makes pdfminer warn about colours (High Res let those through before)
    shutil.copy(corpus / "docs/pdf/embedded-images-tables.pdf", folder)
    if strategy == "hi_res":  # a scan: the page is read by OCR
        shutil.copy(corpus / "docs/pdf/pdf-with-ocr-text.pdf", folder)
    node = {"name": "Partitioner", "type": "partition", **STRATEGIES[strategy]}
    wf = tmp_path / "wf.json"
    wf.write_text(
        json.dumps({"name": strategy, "workflow_type": "custom", "workflow_nodes": [node]})
    )
    env = {**os.environ, "INGESTFLOW_PROGRESS_INTERVAL": "30"}
    if strategy == "vlm":  # Auto runs without one: its table pages go to High Res, as said
        env["INGESTFLOW_PROVIDER_A_BASE_URL"] = model_server.anthropic_url
        env["INGESTFLOW_PROVIDER_A_API_KEY"] = "vlm-key"
    else:
        env.pop("INGESTFLOW_PROVIDER_A_BASE_URL", None)
    args = [*EXE, "run", str(wf), "-i", str(folder), "-o", str(tmp_path / "out")]
    args += ["--workspace", str(tmp_path / "ws"), "-w", "1"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    stray = [
        line
        for line in done.stderr.splitlines()
        if line.strip() and not STAMP.match(line) and not line.startswith(("! ", "✗ "))
    ]
    assert not stray, stray  # every stderr line is ours: a progress line, a warning, an error
    for said in LIBRARY_LINES:
        assert said not in done.stdout + done.stderr, (said, done.stdout, done.stderr)
    assert re.search(r"(\d) of \1 documents written", done.stdout), done.stdout
