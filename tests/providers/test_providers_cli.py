"""`ingestflow providers list|check` against a real model server on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.providers import client as client_module
from tests.fakes.models import FakeModelServer, Fault

runner = CliRunner()
KEY = "sk-never-shown-42"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("INGESTFLOW_") and name != "INGESTFLOW_WORKSPACE":
            monkeypatch.delenv(name)
    monkeypatch.setattr(client_module, "BACKOFF", 0.01)


def test_check_reports_what_answers_and_what_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeModelServer(key=KEY, dimension=512) as good, FakeModelServer() as bad:
        bad.fault(Fault(500, times=None))
        monkeypatch.setenv("INGESTFLOW_PROVIDER_C_BASE_URL", good.openai_url)
        monkeypatch.setenv("INGESTFLOW_PROVIDER_C_API_KEY", KEY)
        monkeypatch.setenv("INGESTFLOW_VOYAGEAI_BASE_URL", good.openai_url)
        monkeypatch.setenv("INGESTFLOW_VOYAGEAI_API_KEY", KEY)
        monkeypatch.setenv("INGESTFLOW_VOYAGEAI_MODEL", "voyage-3-lite")
        monkeypatch.setenv("INGESTFLOW_PROVIDER_A_BASE_URL", bad.anthropic_url)
        good.reply(lambda r: "OK")
        result = runner.invoke(app, ["providers", "check"])
        assert result.exit_code == 3, result.output
        lines = result.output.splitlines()
        assert any(line.startswith("✓ provider_c (openai at") and "'OK'" in line for line in lines)
        assert any(line.startswith("✓ voyageai") and "512-dimension" in line for line in lines)
        assert any(
            line.startswith("✗ provider_a (anthropic at") and "HTTP 500" in line for line in lines
        )
        as_json = runner.invoke(app, ["providers", "check", "--json"])
        rows = {r["name"]: r for r in json.loads(as_json.stdout)}
        assert rows["provider_c"]["ok"] and not rows["provider_a"]["ok"]
        listed = runner.invoke(app, ["providers", "list"])
        assert listed.exit_code == 0 and "key set" in listed.output
        assert KEY not in listed.output + result.output + as_json.output


def test_nothing_configured_says_what_to_set() -> None:
    result = runner.invoke(app, ["providers", "check"])
    assert result.exit_code == 0
    assert "INGESTFLOW_PROVIDER_C_BASE_URL" in result.output


def test_a_malformed_variable_is_exit_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INGESTFLOW_PROVIDER_C_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("INGESTFLOW_PROVIDER_C_TIMEOUT", "soon")
    result = runner.invoke(app, ["providers", "list"])
    assert result.exit_code == 2
    assert "INGESTFLOW_PROVIDER_C_TIMEOUT='soon' is not a number" in result.output


# --- INGESTFLOW_<P>_TIMEOUT bounds the whole request --------------------------------------------
#: The fake's answer trickled one byte every 0.5 s: ~20 minutes to send it all.
TRICKLED = "x" * 2400
#: The outer deadline: 4 tries of 2 s, their backoff and a process start take ~15 s.
OUTER = 120


def ingestflow(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The console script in a subprocess, failing the test loudly if it runs past OUTER (it is
    killed then, with the worker processes it started)."""
    exe = Path(sys.executable).parent / "ingestflow"
    with subprocess.Popen(
        [str(exe), *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=OUTER)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"`ingestflow {' '.join(args)}` still ran after {OUTER} s (killed)")
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def trickle_env(server: FakeModelServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INGESTFLOW_")}
    return {
        **env,
        "INGESTFLOW_PROVIDER_C_BASE_URL": server.openai_url,
        "INGESTFLOW_PROVIDER_C_API_KEY": KEY,
        "INGESTFLOW_PROVIDER_C_TIMEOUT": "2",
        **extra,
    }


@pytest.mark.slow
def test_check_of_a_trickling_server_ends_at_the_timeout(tmp_path: Path) -> None:
    with FakeModelServer(key=KEY) as server:
        server.reply(lambda r: TRICKLED)
        server.trickle(0.5)
        done = ingestflow("providers", "check", env=trickle_env(server), cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("✗ provider_c")]
    assert "no complete answer within 2 s (4 tries)" in line
    assert "raise INGESTFLOW_PROVIDER_C_TIMEOUT" in line and KEY not in done.stdout


@pytest.mark.slow
def test_a_runs_prompter_node_fails_its_document_at_the_timeout(tmp_path: Path) -> None:
    workflow = {
        "name": "ner",
        "workflow_type": "custom",
        "workflow_nodes": [
            {
                "name": "Partitioner",
                "type": "partition",
                "subtype": "unstructured_api",
                "settings": {"strategy": "fast"},
            },
            {"name": "Entities", "type": "prompter", "subtype": "openai_ner", "settings": {}},
            {"name": "Chunker", "type": "chunk", "subtype": "chunk_by_title", "settings": {}},
        ],
    }
    (tmp_path / "wf.json").write_text(json.dumps(workflow))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "notes.txt").write_text("Ada Lovelace wrote the first program.\n")
    with FakeModelServer(key=KEY) as server:
        server.reply(lambda r: TRICKLED)
        server.trickle(0.5, headers=True)
        done = ingestflow(
            "run", "wf.json", "-i", "in", "-o", "out", "--workers", "1", "--json",
            env=trickle_env(server), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    (entry,) = json.loads(done.stdout)["files"]
    assert entry["status"] == "FAILED"
    assert "no complete answer within 2 s (4 tries)" in entry["error"]
    assert "INGESTFLOW_PROVIDER_C_TIMEOUT" in entry["error"] and KEY not in done.stdout
