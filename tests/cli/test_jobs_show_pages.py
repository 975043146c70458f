"""`jobs show` prints an Auto partitioner's pages per strategy (not only under --json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from tests.stages.test_partition import make_pdf

pytestmark = pytest.mark.slow
runner = CliRunner()


def test_jobs_show_prints_pages_per_strategy(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.pdf").write_bytes(
        make_pdf(
            [
                "Harbour report\\nThe harbour opened in early spring, and the ships came.",
                "Second page\\nThe ships left again before the autumn storms began.",
            ]
        )
    )
    ws = tmp_path / "ws"
    ran = runner.invoke(
        app,
        [
            *("run", "examples/auto.json", "-i", str(docs), "-o", str(tmp_path / "out")),
            *("--workspace", str(ws), "--workers", "1", "--json"),
        ],
    )
    assert ran.exit_code == 0, ran.output
    job = json.loads(ran.stdout)
    (node,) = job["node_stats"]
    assert node["pages_by_strategy"] == {"fast": 2}
    shown = runner.invoke(app, ["jobs", "show", job["id"], "--workspace", str(ws)])
    assert shown.exit_code == 0, shown.output
    assert "Partitioner: pages by strategy: fast 2" in shown.output
