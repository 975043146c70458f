"""`ingestflow providers list|check` against a real model server on loopback."""

from __future__ import annotations

import json

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
