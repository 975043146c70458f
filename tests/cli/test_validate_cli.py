"""`ingestflow validate`: exit codes, human and JSON output, and a light start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from ingestflow.cli import app
from tests.conftest import FIXTURES

runner = CliRunner()
VALID = FIXTURES / "workflows" / "valid" / "02-fast-by-title-embed.json"
INVALID = FIXTURES / "workflows" / "invalid"


def invalid(name: str) -> str:
    """The invalid fixture whose name (after its number) is `name`."""
    (path,) = INVALID.glob(f"[0-9][0-9]-{name}.json")
    return str(path)


def test_valid_exits_zero() -> None:
    result = runner.invoke(app, ["validate", str(VALID)])
    assert result.exit_code == 0, result.output
    assert "valid workflow (custom: Partitioner → Chunker → Embedder)" in result.output


def test_invalid_exits_two_with_path_found_allowed_hint() -> None:
    result = runner.invoke(app, ["validate", invalid("chunk-too-large-for-model")])
    assert result.exit_code == 2
    out = result.output
    assert "workflow_nodes[1].settings.max_characters" in out
    assert "found: 2000" in out and 'allowed: {"le": 896}' in out and "hint:" in out


def test_json_output_shape() -> None:
    result = runner.invoke(app, ["validate", "--json", invalid("strategy-unknown")])
    assert result.exit_code == 2
    body = json.loads(result.output)
    assert body["valid"] is False
    (problem,) = body["problems"]
    assert set(problem) == {"path", "message", "found", "allowed", "hint"}
    assert problem["path"] == "workflow_nodes[0].settings.strategy"
    assert problem["found"] == "ocr_only" and problem["allowed"] == ["hi_res", "fast"]


def test_json_valid() -> None:
    result = runner.invoke(app, ["validate", "--json", str(VALID)])
    assert result.exit_code == 0
    assert json.loads(result.output)["valid"] is True


def test_malformed_json_is_a_problem_not_a_traceback() -> None:
    result = runner.invoke(app, ["validate", invalid("malformed-json")])
    assert result.exit_code == 2
    assert "malformed JSON at line 4, column 3" in result.output
    assert "Traceback" not in result.output


def test_missing_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "file not found" in result.output


def test_as_of_moves_retirement() -> None:
    path = invalid("retired-model-provider-a")
    assert runner.invoke(app, ["validate", path, "--as-of", "2025-10-21"]).exit_code == 0
    assert runner.invoke(app, ["validate", path, "--as-of", "2025-10-22"]).exit_code == 2


def test_connector_file_is_checked_as_connector() -> None:
    result = runner.invoke(app, ["validate", invalid("wiki-pat-cloud")])
    assert result.exit_code == 2
    assert "connector is invalid" in result.output and "config.cloud" in result.output
    assert "T0KEN-VALUE" not in result.output


def test_validate_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from ingestflow.cli import main\n"
        f"sys.argv = ['ingestflow', 'validate', {str(VALID)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('unstructured', 'torch', 'pymilvus', 'sentence_transformers',"
        " 'atlassian', 'numpy') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


def test_console_script_runs() -> None:
    exe = Path(sys.executable).parent / "ingestflow"
    out = subprocess.run([str(exe), "validate", str(VALID)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_malformed_connector_json_masks_the_secret_on_the_quoted_line(tmp_path: Path) -> None:
    path = tmp_path / "milvus.json"
    path.write_text(
        '{"name": "m", "type": "milvus", "config": {"password": "hunter2SECRET" "uri": "./m.db"}}'
    )
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "malformed JSON" in result.output
    assert "hunter2SECRET" not in result.output
    assert '\\"password\\": \\"********\\"' in result.output  # the excerpt, JSON-quoted


def test_bad_as_of_date_is_exit_two() -> None:
    result = runner.invoke(app, ["validate", str(VALID), "--as-of", "2025-13-01"])
    assert result.exit_code == 2 and "not a date" in result.output


def test_version_and_short_help() -> None:
    from importlib.metadata import version

    from typer.testing import CliRunner

    from ingestflow.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"ingestflow {version('ingestflow')}"
    short = CliRunner().invoke(app, ["run", "-h"])
    assert short.exit_code == 0 and "Usage: ingestflow run" in short.stdout
