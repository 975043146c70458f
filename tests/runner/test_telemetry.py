"""A job's spans reach an OpenTelemetry collector (a loopback HTTP server speaking OTLP's
protobuf protocol) when OTEL_EXPORTER_OTLP_ENDPOINT is set; nothing is sent when it is not."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.runner.test_run import WITH_CHUNKS, run, sample, write


class Collector:
    """An OTLP/HTTP trace collector on loopback: keeps every export request it gets."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                outer.requests.append(request)
                outer.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def spans(self) -> list[Any]:
        return [
            span
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]


@pytest.fixture
def collector() -> Iterator[Collector]:
    made = Collector()
    try:
        yield made
    finally:
        made.http.shutdown()
        made.http.server_close()


def _attributes(span: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        values[kv.key] = getattr(kv.value, kind)
    return values


def test_a_job_sends_its_node_spans_to_the_collector(
    tmp_path: Path, collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    code, record = run(tmp_path, write(tmp_path, WITH_CHUNKS), sample(tmp_path))
    assert code == 0, record
    assert collector.paths and set(collector.paths) == {"/v1/traces"}
    spans = collector.spans()
    jobs = [s for s in spans if s.name == "ingestflow.job"]
    assert len(jobs) == 1
    job = _attributes(jobs[0])
    assert job["ingestflow.job.id"] == record["id"]
    assert job["ingestflow.job.status"] == "COMPLETED"
    assert job["ingestflow.documents.succeeded"] == 2
    nodes = {s.name: s for s in spans if s.name.startswith("ingestflow.node ")}
    assert set(nodes) == {"ingestflow.node Partitioner", "ingestflow.node Chunker"}
    for span in nodes.values():
        assert span.parent_span_id == jobs[0].span_id and span.trace_id == jobs[0].trace_id
        assert jobs[0].start_time_unix_nano <= span.start_time_unix_nano
        assert span.end_time_unix_nano <= jobs[0].end_time_unix_nano
    partition = _attributes(nodes["ingestflow.node Partitioner"])
    assert partition["ingestflow.node.success"] == 2
    recorded = next(n for n in record["node_stats"] if n["node_name"] == "Partitioner")
    assert partition["ingestflow.node.elements_out"] == recorded["elements_out"] > 0
    assert partition["ingestflow.node.seconds"] > 0
    assert "OpenTelemetry" not in (record.get("message") or "")


def test_no_endpoint_sends_nothing_and_a_dead_collector_fails_nothing(
    tmp_path: Path, collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    folder = sample(tmp_path)
    code, record = run(tmp_path / "a", write(tmp_path, WITH_CHUNKS), folder)
    assert code == 0 and record["status"] == "COMPLETED"
    assert not collector.requests

    with socket.socket() as closed:  # a port nobody listens on once the socket is closed
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", dead)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    (tmp_path / "b").mkdir()
    code, record = run(tmp_path / "b", write(tmp_path, WITH_CHUNKS), folder)
    assert code == 0 and record["status"] == "COMPLETED", record
    assert "the job's OpenTelemetry spans were not sent" in record["message"]
