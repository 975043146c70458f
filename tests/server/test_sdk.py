"""The official SDK (`unstructured-client`) drives the local server unchanged, over real HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from unstructured_client import UnstructuredClient
from unstructured_client.models import errors
from unstructured_client.models.operations import (
    CreateDestinationRequest,
    CreateSourceRequest,
    CreateWorkflowRequest,
    GetConnectionCheckSourcesResponse,
    ListSourcesRequest,
)
from unstructured_client.models.shared import DagNodeConnectionCheck
from unstructured_client.types.basemodel import Unset
from unstructured_client.utils import BackoffStrategy, RetryConfig

from ingestflow.service import Service
from tests.fakes.confluence import FakeConfluence
from tests.server.conftest import (
    DOC_A,
    DOC_B,
    NODES,
    SECRETS,
    WIKI_TOKEN,
    WRONG_TOKEN,
    RecordingClient,
    Server,
    wiki_source,
)

# Request bodies built from plain dicts (NODES, wiki_source) or naming types the SDK's open enums
# do not list (`wiki`, `vectordb`) go through the SDK's request models, as the SDK does with a dict:
# its TypedDicts admit neither.
# the SDK's open enums warn when they serialize a type they do not list (`wiki`, `vectordb`)
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
MASK = "********"
MILVUS_PASSWORD = "milvus-pa55word-s3cr3t"


@pytest.fixture
def sdk(server: Server) -> Iterator[UnstructuredClient]:
    """The official client pointed at the server, with a short retry policy; its HTTP client
    keeps every body so the test can look for leaked secrets."""
    http = RecordingClient(timeout=30.0)
    server.clients.append(http)
    yield UnstructuredClient(
        api_key_auth=server.key,
        server_url=server.url,
        client=http,
        retry_config=RetryConfig("backoff", BackoffStrategy(100, 500, 1.5, 2000), False),
    )


T = TypeVar("T")


def some(value: T | Unset | None) -> T:
    """A response field the SDK types as optional, which this answer must carry."""
    assert value is not None and not isinstance(value, Unset)
    return value


def leaks(server: Server) -> list[str]:
    """Response bodies that carry a stored secret or a traceback."""
    assert server.bodies(), "no response body was recorded"
    return [
        b for b in server.bodies() if "Traceback" in b or any(secret in b for secret in SECRETS)
    ]


def wait_check(
    call: Callable[[], GetConnectionCheckSourcesResponse], deadline_s: float = 30.0
) -> DagNodeConnectionCheck:
    """Poll a connection check until it is no longer SCHEDULED."""
    end = time.monotonic() + deadline_s
    while True:
        check = some(call().dag_node_connection_check)
        if check.status != "SCHEDULED":
            return check
        assert time.monotonic() < end, "the connection check stayed SCHEDULED"
        time.sleep(0.1)


@pytest.mark.slow
def test_local_workflow_from_create_to_delete(server: Server, sdk: UnstructuredClient) -> None:
    created = some(
        sdk.workflows.create_workflow(
            request=CreateWorkflowRequest.model_validate(
                {
                    "create_workflow": {
                        "name": "sdk local",
                        "workflow_type": "custom",
                        "workflow_nodes": NODES,
                    }
                }
            )
        ).workflow_information
    )
    assert created.name == "sdk local"
    assert created.sources == [] and created.destinations == []
    assert [n.name for n in created.workflow_nodes] == ["Partitioner", "Chunker"]
    assert all(n.id for n in created.workflow_nodes)

    started = sdk.workflows.run_workflow(
        request={
            "workflow_id": created.id,
            "body_run_workflow": {
                "input_files": [
                    {"content": DOC_A, "file_name": "plan.txt", "content_type": "text/plain"},
                    {"content": DOC_B, "file_name": "notes.md", "content_type": "text/markdown"},
                ]
            },
        }
    )
    assert started.status_code == 202
    job_id = some(started.job_information).id
    assert some(started.job_information).workflow_id == created.id

    end = time.monotonic() + 90
    while True:
        job = some(sdk.jobs.get_job(request={"job_id": job_id}).job_information)
        if job.status not in ("SCHEDULED", "IN_PROGRESS"):
            break
        assert time.monotonic() < end, f"job still {job.status}"
        time.sleep(0.2)
    assert job.status == "COMPLETED"
    assert job.job_type == "persistent"
    inputs, outputs = some(job.input_file_ids), some(job.output_node_files)
    assert len(inputs) == 2

    details = some(sdk.jobs.get_job_details(request={"job_id": job_id}).job_details)
    assert details.processing_status == "SUCCESS"
    assert [(s.node_name, s.success, s.failure) for s in details.node_stats] == [
        ("Partitioner", 2, 0),
        ("Chunker", 2, 0),
    ]
    failed = some(sdk.jobs.get_job_failed_files(request={"job_id": job_id}).job_failed_files)
    assert failed.failed_files == []

    # every node's output of every file, as listed in output_node_files
    assert len(outputs) == 4
    assert {(o.file_id, o.node_type) for o in outputs} == {
        (f, t) for f in inputs for t in ("partition", "chunk")
    }
    texts: dict[str, list[str]] = {"partition": [], "chunk": []}
    for entry in outputs:
        elements = sdk.jobs.download_job_output(
            request={"job_id": job_id, "file_id": entry.file_id, "node_id": entry.node_id}
        ).any
        assert isinstance(elements, list) and elements
        assert all(e["text"].strip() for e in elements)
        if entry.node_type == "chunk":
            assert {e["type"] for e in elements} == {"CompositeElement"}
        texts[entry.node_type].extend(e["text"] for e in elements)
    assert any("Ship the beta in March" in t for t in texts["chunk"])
    assert any("Book the big room early" in t for t in texts["partition"])

    listed = some(sdk.workflows.list_workflows(request={}).response_list_workflows)
    assert [w.id for w in listed] == [created.id]
    jobs = some(sdk.jobs.list_jobs(request={"workflow_id": created.id}).response_list_jobs)
    assert [j.id for j in jobs] == [job_id]

    deleted = sdk.workflows.delete_workflow(request={"workflow_id": created.id})
    assert deleted.status_code == 200 and isinstance(deleted.any, dict)
    with pytest.raises(errors.SDKError, match="Status 404") as missing:
        sdk.workflows.get_workflow(request={"workflow_id": created.id})
    assert missing.value.status_code == 404
    assert sdk.workflows.list_workflows(request={}).response_list_workflows == []
    assert leaks(server) == []


def test_templates(server: Server, sdk: UnstructuredClient) -> None:
    items = some(sdk.templates.list_templates(request={}).response_list_templates)
    ids = [t.id for t in items]
    assert {"hi_res_partition", "hi_res_and_enrichment", "fast_partition"} <= set(ids)
    assert all(t.name and t.description and t.version for t in items)
    detail = some(
        sdk.templates.get_template(request={"template_id": "fast_partition"}).template_detail
    )
    assert detail.id == "fast_partition"
    assert [(n.type, n.subtype) for n in detail.nodes] == [("partition", "unstructured_api")]
    assert all(n.id for n in detail.nodes)
    with pytest.raises(errors.SDKError, match="Status 404"):
        sdk.templates.get_template(request={"template_id": "no_such_template"})


def test_sources_keep_secrets_masked_and_stored(
    server: Server, sdk: UnstructuredClient, wiki: FakeConfluence
) -> None:
    created = some(
        sdk.sources.create_source(
            request=CreateSourceRequest.model_validate(
                {"create_source_connector": wiki_source(wiki)}
            )
        ).source_connector_information
    )
    assert created.type == "wiki"
    assert created.config["token"] == MASK
    assert created.config["username"] and created.config["url"] == wiki.url

    def check() -> DagNodeConnectionCheck:
        started = sdk.sources.create_connection_check_sources(request={"source_id": created.id})
        assert started.status_code == 202
        return wait_check(
            lambda: sdk.sources.get_connection_check_sources(request={"source_id": created.id})
        )

    assert check().status == "SUCCESS"

    # an update that sends the masked token back keeps the stored one
    masked = {**created.config, "spaces": ["DEV"], "max_num_of_docs_from_each_space": 10}
    updated = some(
        sdk.sources.update_source(
            request={"source_id": created.id, "update_source_connector": {"config": masked}}
        ).source_connector_information
    )
    assert updated.config["token"] == MASK
    assert updated.config["max_num_of_docs_from_each_space"] == 10
    assert check().status == "SUCCESS"
    with Service(server.workspace) as service:
        assert service.connectors.body(created.id)["config"]["token"] == WIKI_TOKEN

    # a real new value replaces it (and the check then fails), and masked keeps that one
    wrong = {**masked, "token": WRONG_TOKEN}
    sdk.sources.update_source(
        request={"source_id": created.id, "update_source_connector": {"config": wrong}}
    )
    failed = check()
    assert failed.status == "FAILURE" and failed.reason
    sdk.sources.update_source(
        request={"source_id": created.id, "update_source_connector": {"config": masked}}
    )
    assert check().status == "FAILURE"

    fetched = sdk.sources.get_source(request={"source_id": created.id})
    listed = some(sdk.sources.list_sources(request={}).response_list_sources)
    assert [s.id for s in listed] == [created.id]
    for record in (some(fetched.source_connector_information), *listed):
        assert record.config["token"] == MASK
    wikis = ListSourcesRequest.model_validate({"source_type": "wiki"})
    assert sdk.sources.list_sources(request=wikis).response_list_sources
    deleted = sdk.sources.delete_source(request={"source_id": created.id})
    assert deleted.status_code == 200 and isinstance(deleted.any, dict)
    with pytest.raises(errors.SDKError, match="Status 404"):
        sdk.sources.get_source(request={"source_id": created.id})
    assert leaks(server) == []


def test_destinations_keep_secrets_masked_and_stored(
    server: Server, sdk: UnstructuredClient
) -> None:
    config = {
        "uri": str(server.workspace / "milvus.db"),
        "user": "",
        "password": MILVUS_PASSWORD,
        "db_name": "",
        "collection_name": "elements",
    }
    created = some(
        sdk.destinations.create_destination(
            request=CreateDestinationRequest.model_validate(
                {
                    "create_destination_connector": {
                        "name": "lite",
                        "type": "vectordb",
                        "config": config,
                    }
                }
            )
        ).destination_connector_information
    )
    assert created.type == "vectordb"
    assert created.config["password"] == MASK

    updated = some(
        sdk.destinations.update_destination(
            request={
                "destination_id": created.id,
                "update_destination_connector": {
                    "config": {**created.config, "collection_name": "chunks"}
                },
            }
        ).destination_connector_information
    )
    assert updated.config == {**config, "password": MASK, "collection_name": "chunks"}
    with Service(server.workspace) as service:
        stored = service.connectors.body(created.id)["config"]
    assert stored["password"] == MILVUS_PASSWORD and stored["collection_name"] == "chunks"

    got = sdk.destinations.get_destination(request={"destination_id": created.id})
    listed = some(sdk.destinations.list_destinations(request={}).response_list_destinations)
    for record in (some(got.destination_connector_information), *listed):
        assert record.config["password"] == MASK
    assert [d.id for d in listed] == [created.id]
    deleted = sdk.destinations.delete_destination(request={"destination_id": created.id})
    assert deleted.status_code == 200 and isinstance(deleted.any, dict)
    assert sdk.destinations.list_destinations(request={}).response_list_destinations == []
    assert leaks(server) == []


def test_a_workflow_with_a_stored_source_lists_it(
    server: Server, sdk: UnstructuredClient, wiki: FakeConfluence
) -> None:
    source = some(
        sdk.sources.create_source(
            request=CreateSourceRequest.model_validate(
                {"create_source_connector": wiki_source(wiki)}
            )
        ).source_connector_information
    )
    body: dict[str, Any] = {
        "name": "from wiki",
        "workflow_type": "custom",
        "source_id": source.id,
        "workflow_nodes": NODES,
    }
    created = some(
        sdk.workflows.create_workflow(
            request=CreateWorkflowRequest.model_validate({"create_workflow": body})
        ).workflow_information
    )
    assert created.sources == [source.id] and created.destinations == []
    by_source = sdk.workflows.list_workflows(request={"source_id": source.id})
    assert [w.id for w in some(by_source.response_list_workflows)] == [created.id]
    # a connector in use cannot be deleted
    with pytest.raises(errors.SDKError, match="Status 409"):
        sdk.sources.delete_source(request={"source_id": source.id})
    assert WIKI_TOKEN not in str(created)
    assert leaks(server) == []
