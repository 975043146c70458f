"""A finished job's per-node timings and counts as OpenTelemetry spans.

Only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: the
OpenTelemetry SDK's own OTLP/HTTP exporter sends them, configured by the standard `OTEL_*`
variables (headers, timeout, service name). Unset, nothing is imported and nothing is sent.

One trace per job: a `ingestflow.job` span over the job's wall time, and a child
`ingestflow.node` span per node. Nodes run interleaved over documents, in several worker
processes, so a node span starts with the job and lasts the node's summed worker time; its
counts are attributes. An exporter that cannot reach its collector never fails the job: the job
records a note instead.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

log = logging.getLogger(__name__)

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_NODE_COUNTS = ("ready", "in_progress", "success", "failure", "elements_in", "elements_out")


def enabled() -> bool:
    """Whether a collector is configured (and the SDK not disabled)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(os.environ.get(name, "").strip() for name in ENDPOINT_VARS)


def export_job(record: dict[str, Any], runtime_s: float) -> str | None:
    """Send the job's spans when a collector is configured; a note when that failed."""
    if not enabled():
        return None
    try:
        _export(record, runtime_s)
    except Exception as exc:  # telemetry is never worth a job
        from ingestflow.errors import one_line

        note = f"the job's OpenTelemetry spans were not sent: {one_line(exc)}"
        log.warning(note)
        return note
    return None


def _export(record: dict[str, Any], runtime_s: float) -> None:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    failed: list[str] = []
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "ingestflow")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(_Reporting(OTLPSpanExporter(), failed)))
    tracer = provider.get_tracer("ingestflow")
    end = time.time_ns()
    start = end - int(runtime_s * 1e9)
    files = record.get("files") or []
    job = tracer.start_span(
        "ingestflow.job",
        start_time=start,
        attributes={
            "ingestflow.job.id": record["id"],
            "ingestflow.job.status": record["status"],
            "ingestflow.job.type": record.get("job_type") or "",
            "ingestflow.workflow.id": record.get("workflow_id") or "",
            "ingestflow.workflow.name": record.get("workflow_name") or "",
            "ingestflow.documents": len(files),
            "ingestflow.documents.succeeded": sum(f["status"] == "SUCCESS" for f in files),
            "ingestflow.documents.failed": sum(f["status"] == "FAILED" for f in files),
            "ingestflow.documents.skipped": sum(f["status"] == "SKIPPED" for f in files),
        },
    )
    context = trace.set_span_in_context(job)
    for node in record.get("node_stats") or []:
        attributes: dict[str, Any] = {
            "ingestflow.node.id": node.get("node_id", ""),
            "ingestflow.node.name": node["node_name"],
            "ingestflow.node.type": node["node_type"],
            "ingestflow.node.subtype": node["node_subtype"],
            "ingestflow.node.seconds": float(node.get("seconds", 0.0)),
            "ingestflow.node.reused": int(node.get("reused", 0)),
        }
        attributes |= {f"ingestflow.node.{k}": int(node[k]) for k in _NODE_COUNTS if k in node}
        for strategy, pages in (node.get("pages_by_strategy") or {}).items():
            attributes[f"ingestflow.node.pages.{strategy}"] = int(pages)
        span = tracer.start_span(
            f"ingestflow.node {node['node_name']}",
            context=context,
            start_time=start,
            attributes=attributes,
        )
        span.end(end_time=min(end, start + int(float(node.get("seconds", 0.0)) * 1e9)))
    if record["status"] == "FAILED":
        job.set_status(Status(StatusCode.ERROR, record.get("message") or "the job failed"))
    job.end(end_time=end)
    provider.shutdown()  # sends what is left, then closes the exporter
    if failed:
        raise RuntimeError(failed[0])


class _Reporting:
    """An exporter that remembers a failed export (the SDK only logs one)."""

    def __init__(self, inner: Any, failed: list[str]) -> None:
        self.inner, self.failed = inner, failed

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS and not self.failed:
            self.failed.append(
                "the collector named by OTEL_EXPORTER_OTLP_ENDPOINT did not take them "
                "(is it running, and does it speak OTLP over HTTP?)"
            )
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
