"""A test session that is stopped leaves no Ray process behind: SIGTERM ends it as a normal
exit (the session cluster's teardown runs, `tests/conftest.py`), and a session killed outright
(SIGKILL, or a time limit's exit) has its cluster ended by the cluster's reaper
(`tests/runner/test_ray.py`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

HOLDING = """
import os
import time
from pathlib import Path

from tests.runner.test_ray import session_ray_cluster  # noqa: F401  (the fixture)


def test_holds_the_cluster(session_ray_cluster):
    Path(os.environ["RAY_HELD"]).write_text(session_ray_cluster)
    time.sleep(3600)
"""


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_stopped_session_leaves_no_ray_process(tmp_path: Path, how: signal.Signals) -> None:
    pytest.importorskip("ray")
    held = tmp_path / "held"
    (tmp_path / "test_holding.py").write_text(HOLDING)
    args = ["-q", "-p", "no:cacheprovider", "-c", "pyproject.toml", "--rootdir", str(REPO)]
    args += ["-n", "0", "-p", "tests.conftest", str(tmp_path / "test_holding.py")]
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", *args],
        cwd=REPO,
        env={**os.environ, "RAY_HELD": str(held)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300  # a deadline only: a loaded machine starts Ray slowly
        while not held.is_file():
            assert session.poll() is None, session.communicate()[0]
            assert time.monotonic() < deadline, "the session's Ray cluster did not start"
            time.sleep(0.2)
        cluster = psutil.Process(session.pid).children(recursive=True)
        assert any(p.name() in ("raylet", "gcs_server") for p in cluster), cluster
        session.send_signal(how)
        said, _ = session.communicate(timeout=300)
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
    if how == signal.SIGTERM:  # a normal exit, the teardown included
        assert session.returncode == 143, said
        assert "stopped by SIGTERM" in said, said
    _, left = psutil.wait_procs(cluster, timeout=60)
    assert not left, [" ".join(p.cmdline())[:120] for p in left if p.is_running()]
