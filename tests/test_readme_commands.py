"""The README's first commands run as written: "A first run" and the Milvus Lite walkthrough,
block by block, in a scratch folder that sees the repository's `examples/`, `fixtures/` and
`.venv/` (a `<job id>` placeholder takes the newest job's id, as a reader would paste it).

The other blocks need something the suite cannot give them as written (a server left running, a
Confluence, a model server, a Ray cluster); their commands are covered by their own tests, and
`tests/test_readme_paths.py` checks that every file the README names exists."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

FENCE = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
SECTIONS = ("## A first run", "## Walkthrough: local files → Milvus Lite → search")


def section_block(readme: str, heading: str) -> str:
    """The first bash block under a heading of the README."""
    start = readme.index(heading + "\n")
    end = readme.find("\n## ", start + len(heading))
    found = FENCE.search(readme[start : end if end != -1 else None])
    assert found is not None, f"no bash block under {heading!r}"
    return found.group(1)


def commands(block: str) -> list[str]:
    """A block's commands: comments dropped, a here-document kept whole with its command."""
    out: list[str] = []
    lines = iter(block.splitlines())
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        here = re.search(r"<<'?(\w+)'?", line)
        if here:
            body = [line]
            for rest in lines:
                body.append(rest)
                if rest.strip() == here.group(1):
                    break
            out.append("\n".join(body))
        else:
            out.append(line)
    return out


def test_the_reader_keeps_here_documents_whole() -> None:
    block = "# a comment\ncat > a.json <<'JSON'\n{\"a\": 1}\nJSON\nls a.json   # see\n"
    assert commands(block) == ["cat > a.json <<'JSON'\n{\"a\": 1}\nJSON", "ls a.json   # see"]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A folder laid out as the repository's root for the commands (links to what they read)."""
    venv = Path(sys.executable).parent.parent
    (tmp_path / ".venv").symlink_to(
        venv if (venv / "bin" / "ingestflow").exists() else REPO / ".venv"
    )
    for name in ("examples", "fixtures"):
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


def _newest_job(folder: Path, env: dict[str, str]) -> str:
    listed = subprocess.run(
        [".venv/bin/ingestflow", "jobs", "list", "--json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    jobs = json.loads(listed.stdout)
    assert jobs, "the README's run recorded no job"
    return jobs[0]["id"]


@pytest.mark.slow
def test_the_first_run_and_the_walkthrough_run_as_written(scratch: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    ran: list[str] = []
    for heading in SECTIONS:
        for command in commands(section_block(readme, heading)):
            if "<job id>" in command:
                command = command.replace("<job id>", _newest_job(scratch, env))
            done = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", command],
                cwd=scratch,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, f"{command!r} failed:\n{done.stdout}\n{done.stderr}"
            ran.append(done.stdout)
    assert any(".json" in out for out in ran)  # `ls output/` listed the documents' outputs
    assert (scratch / "output" / "notes.txt.json").exists()
    assert "harbour" in ran[-1].lower()  # the search found the harbour meeting
