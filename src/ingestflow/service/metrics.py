"""The workspace's jobs as Prometheus metrics (what `serve` exposes at `/metrics`).

Read from the store at each scrape, so every server on a workspace reports the same figures and
a restart loses nothing. Counters cover every job the workspace still keeps (`jobs prune` and
`serve --keep-jobs-days` remove old ones, so a counter may fall: Prometheus' `rate()` treats
that as a reset). Per-second figures are `rate()` of the counters; the running jobs' own
throughput since they began is a gauge.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ingestflow.store import Workspace

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
JOB_STATUSES = ("SCHEDULED", "IN_PROGRESS", "COMPLETED", "STOPPED", "FAILED")
FILE_STATUSES = ("SUCCESS", "FAILED", "SKIPPED")


def metrics_text(ws: Workspace) -> bytes:
    """The exposition text of the workspace's metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_JobsCollector(ws))
    return generate_latest(registry)


class _JobsCollector(Collector):
    """Jobs by status, documents, elements, pages and node time, from the store."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def collect(self) -> Iterator[Metric]:
        db = self.ws.db
        jobs = GaugeMetricFamily("ingestflow_jobs", "Jobs kept, by status.", labels=["status"])
        by_status = dict.fromkeys(JOB_STATUSES, 0)
        for status, count in db.execute("SELECT status, count(*) FROM jobs GROUP BY status"):
            by_status[status] = count
        for status, count in by_status.items():
            jobs.add_metric([status], count)
        yield jobs

        docs = CounterMetricFamily(
            "ingestflow_documents", "Documents the kept jobs ended, by outcome.", labels=["status"]
        )
        elements = CounterMetricFamily(
            "ingestflow_elements", "Elements written by the kept jobs' documents."
        )
        by_file = dict.fromkeys(FILE_STATUSES, 0)
        written = 0
        for status, count, total in db.execute(
            "SELECT status, count(*), coalesce(sum(elements), 0) FROM job_files GROUP BY status"
        ):
            by_file[status] = count
            written += total if status == "SUCCESS" else 0
        for status, count in by_file.items():
            docs.add_metric([status], count)
        elements.add_metric([], written)
        yield docs
        yield elements
        yield from self._nodes(db.execute("SELECT node_stats FROM jobs").fetchall())
        yield self._running(db)

    def _nodes(self, rows: list[Any]) -> Iterator[Metric]:
        pages = CounterMetricFamily(
            "ingestflow_pages",
            "Pages partitioned, by strategy (recorded by partitioners that count pages: Auto).",
            labels=["strategy"],
        )
        seconds = CounterMetricFamily(
            "ingestflow_node_seconds",
            "Worker time spent in nodes, by node type and subtype.",
            labels=["type", "subtype"],
        )
        failures = CounterMetricFamily(
            "ingestflow_node_failures",
            "Documents a node failed, by node type and subtype.",
            labels=["type", "subtype"],
        )
        page_counts: dict[str, int] = {}
        node_seconds: dict[tuple[str, str], float] = {}
        node_failures: dict[tuple[str, str], int] = {}
        for (raw,) in rows:
            for node in json.loads(raw or "[]"):
                key = (node.get("node_type", ""), node.get("node_subtype", ""))
                node_seconds[key] = node_seconds.get(key, 0.0) + float(node.get("seconds", 0.0))
                node_failures[key] = node_failures.get(key, 0) + int(node.get("failure", 0))
                for strategy, count in (node.get("pages_by_strategy") or {}).items():
                    page_counts[strategy] = page_counts.get(strategy, 0) + int(count)
        for strategy, count in sorted(page_counts.items()):
            pages.add_metric([strategy], count)
        for key in sorted(node_seconds):
            seconds.add_metric(list(key), node_seconds[key])
            failures.add_metric(list(key), node_failures[key])
        yield pages
        yield seconds
        yield failures

    def _running(self, db: Any) -> Metric:
        rate = GaugeMetricFamily(
            "ingestflow_running_job_documents_per_second",
            "Documents a running job has ended per second since it was created.",
            labels=["job_id", "workflow"],
        )
        now = datetime.now(UTC)
        for job_id, workflow, created, ended in db.execute(
            "SELECT j.id, coalesce(j.workflow_name, ''), j.created_at, "
            "(SELECT count(*) FROM job_files f WHERE f.job_id = j.id) "
            "FROM jobs j WHERE j.status = 'IN_PROGRESS'"
        ):
            try:
                elapsed = (now - datetime.fromisoformat(created)).total_seconds()
            except (TypeError, ValueError):  # a record with no usable time
                continue
            rate.add_metric([job_id, workflow], ended / elapsed if elapsed > 0 else 0.0)
        return rate
