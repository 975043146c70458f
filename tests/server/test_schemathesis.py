"""Property-based: every operation of the server's OpenAPI document, with generated inputs (valid
and not), answers below 500. Real HTTP; no jobs are launched (`background=False`).

The schema comes from the app object (`create_app(...).openapi()`, which touches no workspace);
the cases go over loopback to a server started once for the module.
(`schemathesis.pytest.from_fixture` would be the other way, but schemathesis 4.32's lazy loader
reads `request.node._nodeid`, which pytest 9 no longer has.)
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from ingestflow.errors import NotFound
from ingestflow.server.app import create_app
from ingestflow.service import Service, Upload
from tests.server.conftest import WIKI_TOKEN, Server, local_workflow, running_server

schema = schemathesis.openapi.from_dict(create_app(Path("unused-workspace")).openapi())


MILVUS_PASSWORD = "milvus-pa55word-s3cr3t"


class Records:
    """A stored workflow, source, destination and (SCHEDULED) job whose ids replace generated
    path parameters, so generated bodies and queries also meet real records. A record that a
    generated request deleted is made again."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.made = 0
        self.current: dict[str, str] = {}

    def ids(self) -> dict[str, str]:
        """Path parameter name -> the id of an existing record."""
        with Service(self.workspace) as service:
            if not self._exists(lambda: service.workflows.row(self.current["workflow_id"])):
                self.current["workflow_id"] = service.workflows.create(
                    local_workflow(f"stored {self._next()}")
                ).id
            if not self._exists(lambda: service.ws.job_row(self.current["job_id"])):
                upload = Upload("notes.txt", io.BytesIO(b"A short note."))
                self.current["job_id"] = service.runs.submit(self.current["workflow_id"], [upload])[
                    "id"
                ]
            for role, config in (
                ("source", {"url": "http://127.0.0.1:9", "username": "u", "token": WIKI_TOKEN}),
                (
                    "destination",
                    {
                        "uri": str(self.workspace / "milvus.db"),
                        "user": "",
                        "password": MILVUS_PASSWORD,
                        "db_name": "",
                        "collection_name": "elements",
                    },
                ),
            ):
                key = f"{role}_connector_id"
                if not self._exists(lambda: service.connectors.row(self.current[key], role)):  # noqa: B023
                    body = {
                        "name": f"stored {role} {self._next()}",
                        "type": "wiki" if role == "source" else "vectordb",
                        "config": config,
                    }
                    self.current[key] = service.connectors.create(body, role).id
        return dict(self.current)

    def _next(self) -> int:
        self.made += 1
        return self.made

    @staticmethod
    def _exists(lookup: Any) -> bool:
        try:
            lookup()
        except (KeyError, NotFound):
            return False
        return True


@pytest.fixture(scope="module")
def quiet_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that launches nothing."""
    workspace = tmp_path_factory.mktemp("schemathesis") / "ws"
    with running_server(workspace, background=False) as served:
        yield served


@pytest.fixture(scope="module")
def records(quiet_server: Server) -> Records:
    return Records(quiet_server.workspace)


def assert_sound(case: Any, response: Any) -> None:
    where = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, f"{where}: {response.status_code} {response.text}"
    assert "Traceback" not in response.text, where
    assert WIKI_TOKEN not in response.text and MILVUS_PASSWORD not in response.text, where


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_operation_answers_5xx(case: Any, quiet_server: Server, records: Records) -> None:
    assert_sound(case, case.call(base_url=quiet_server.url, headers=quiet_server.headers))
    params = case.path_parameters or {}
    if not params:
        return
    # the same request again, on real records
    real = records.ids()
    role = "source" if "/sources/" in case.path else "destination"
    for name in list(params):
        if name == "connector_id":
            params[name] = real[f"{role}_connector_id"]
        elif name == "template_id":
            params[name] = "fast_partition"
        elif name in real:
            params[name] = real[name]
    assert_sound(case, case.call(base_url=quiet_server.url, headers=quiet_server.headers))
