"""The job record of one run: its creation, each document's result (written to the destination
here, unless a worker wrote it: Ray), the node figures and counts, the live progress, and its
outcome."""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ingestflow.connectors.base import Destination
from ingestflow.elements import Document
from ingestflow.errors import NotFound
from ingestflow.runner import events, resume, telemetry, worker
from ingestflow.runner.enrichment import EnrichmentTally
from ingestflow.runner.plan import Plan
from ingestflow.stages.base import Stage
from ingestflow.store.job_rows import FileResult, NodeStats
from ingestflow.store.jobs import Workspace

if TYPE_CHECKING:
    from ingestflow.runner.options import RunOptions
    from ingestflow.runner.reuse import Resume
    from ingestflow.runner.tasks import Split


class Job:
    """One run's job: what it recorded so far, and the recording of what comes."""

    def __init__(
        self,
        plan: Plan,
        stages: list[Stage],
        destination: Destination,
        workspace: Workspace,
        options: RunOptions,
        progress: events.Listener,
    ) -> None:
        self.plan = plan
        self.destination = destination
        self.ws = workspace
        self.opts = options
        self.progress = progress
        self.stats = [NodeStats(n.id, n.name, n.type, n.subtype) for n in plan.nodes]
        self.settings_hash = plan.settings_hash(options.destination_key)
        self.workflow_key = f"{options.workflow_id}:{plan.workflow.name}"
        self.seq = 0
        self.counts = {"SUCCESS": 0, "FAILED": 0, "SKIPPED": 0, "elements": 0}
        self.found = 0  # documents the source listed so far
        self.paged: set[str] = set()  # long documents whose pages were counted range by range
        self.job_id = ""
        self.notes: list[str] = []  # what the stages and the run say about the whole job
        self.enrichment = EnrichmentTally(stages)
        self.resumed: dict[str, Resume] = {}  # document id -> where it starts (reused outputs)
        self.earlier: resume.Earlier | None = None  # what the job did before a resume

    def open(self, info: dict[str, Any]) -> float:
        """Create the job (or take up the one recorded for this run); seconds it ran before."""
        if not self.opts.job_id:
            self.job_id = self.ws.create_job(
                self.opts.workflow_id, self.plan.workflow.name, self.opts.job_type, self.stats, info
            )
            return 0.0
        from ingestflow.store.owners import process_owner

        self.job_id = self.opts.job_id
        self.ws.set_owner(self.job_id, process_owner())
        ran_before = 0.0
        if self.opts.resume:  # a resumed job's runtime goes on from where it ended
            self.earlier, ran_before = resume.restore(self)
        self.ws.update_job(self.job_id, nodes=self.stats)
        return ran_before

    def cancelled(self) -> bool:
        """True when the job's row says STOPPED while this run has not ended it: a cancel that
        could not signal this process recorded it there."""
        if not self.job_id:
            return False
        try:
            return bool(self.ws.job_row(self.job_id)["status"] == "STOPPED")
        except NotFound:  # pruned meanwhile: nothing to stop for
            return False

    def finish(self, status: str, processing: str, started: float, message: str | None) -> None:
        """Record the job's end (and export its spans when a collector is configured). A job
        cancelled meanwhile stays STOPPED: what the run did is added to the cancel's message."""
        runtime = time.perf_counter() - started
        if status != "STOPPED" and self.cancelled():
            cancel = self.ws.job_row(self.job_id)["message"]
            status, processing = "STOPPED", "STOPPED"
            message = "; ".join(
                filter(None, [cancel, "the run had ended before it heard", message])
            )
        self.ws.update_job(
            self.job_id,
            status=status,
            processing_status=processing,
            runtime_s=runtime,
            message=message,
            nodes=self.stats,
        )
        if telemetry.enabled():  # spans only when a collector is configured
            note = telemetry.export_job(self.ws.job_record(self.job_id), runtime)
            if note:
                self.ws.update_job(self.job_id, message="; ".join(filter(None, [message, note])))

    def conclude(
        self, status: str, message: str | None, started: float, said: list[str]
    ) -> dict[str, Any]:
        """Record the job's outcome, with what the run (and the source: `said`) has to say
        about it; the job record."""
        if status == "COMPLETED":
            self.notes.extend(self.enrichment.notes())
        reuse = self.opts.reuse
        if reuse is not None:
            summary = reuse.summary()
            if summary:
                self.notes.append(summary)
            if reuse.cache is not None:
                with suppress(OSError):  # a cache that cannot be pruned now is pruned next time
                    reuse.cache.prune()
        notes = [*self.notes, *said]
        if notes:
            message = "; ".join(filter(None, [message, *notes]))
        processing = self._processing_status(status)
        if status == "COMPLETED" and processing == "FAILED":
            status = "FAILED"
        if status == "STOPPED":  # what was found, done and left, not only what was written
            message = f"{self.tally().stopped()}; {message}"
        self.finish(status, processing, started, message)
        self.publish()
        self.progress(events.JobFinished(self.job_id, status, self.tally(), self.node_counts()))
        return self.ws.job_record(self.job_id)

    # --- documents ------------------------------------------------------------------------
    def submitted(self, docs: tuple[Document, ...]) -> None:
        """Documents handed to the workers."""
        for stat in self.stats:
            stat.ready += len(docs)
        self.stats[0].in_progress += len(docs)

    def ranged(self, split: Split, index: int | None) -> None:
        """Tell the progress display how far a long document spread over the workers is
        (`index`: the range that just finished, if one did)."""
        part = split.parts[index] if index is not None else None
        if index is not None and part is not None and part.error is None and split.unit == "pages":
            first, last = split.ranges[index]
            self.stats[0].pages += last - first + 1  # live: the record shows ranges as they end
            self.paged.add(split.doc.id)
            self.publish()
        pages = split.ranges[-1][1]
        self.progress(
            events.PagesPartitioned(
                split.doc.filename, split.units_done(), pages, split.unit, len(split.ranges)
            )
        )

    def collect(self, results: list[worker.DocResult]) -> None:
        """Write finished documents to the destination (those a worker has not written) and
        record each one's result."""
        for r in results:
            self._collect_one(r)
        self.ws.update_job(self.job_id, nodes=self.stats)
        self.publish()
        self.progress(events.NodeProgress(self.node_counts(), self.tally()))

    def _collect_one(self, r: worker.DocResult) -> None:
        doc = r.doc
        self.stats[0].in_progress -= 1
        resumed = self.resumed.pop(doc.id, None)
        if r.ok and self.opts.reuse is not None:
            self.opts.reuse.store(doc, r.node_outputs, r.node_notes)
        if resumed is not None:  # the reused nodes' outputs, as if they had run
            r.node_outputs = {**resumed.outputs, **r.node_outputs} if self.opts.trace else {}
            count_in = 0
            for stat in self.stats[: resumed.start]:
                stat.reused += 1
                count_out = len(resumed.outputs.get(stat.node_id, []))
                r.node_metrics[stat.node_id] = [count_in, count_out, 0.0]
                count_in = count_out
        warnings = list(doc.warnings)
        error = r.error
        written = len(doc.elements)
        if r.ok and r.written is not None:  # the worker wrote it (Ray: `Destination.for_workers`)
            warnings += r.written.warnings
            error, written = r.written.error, r.written.elements
        elif r.ok:
            try:
                warnings += self.destination.write(doc)
            except Exception as exc:  # a destination failure fails this document alone
                error = f"destination: {worker.reason(exc)}"
        ok = error is None
        self._count_nodes(r, ok)
        for stat in self.stats:
            metrics = r.node_metrics.get(stat.node_id)
            if metrics is not None:
                stat.elements_in += int(metrics[0])
                stat.elements_out += int(metrics[1])
                stat.seconds += metrics[2]
        if doc.id not in self.paged:  # a long document's ranges were counted as they ended
            self.stats[0].pages += int(doc.stats.get("pages", 0))
        self.paged.discard(doc.id)
        if ok:
            self.enrichment.add(doc)
            for stat in self.stats:
                stat.enriched = self.enrichment.acted_on.get(stat.node_name, 0)
            pages = self.stats[0].pages_by_strategy
            for strategy, count in doc.stats.get("pages_by_strategy", {}).items():
                pages[strategy] = pages.get(strategy, 0) + count
        if self.opts.trace:
            notes = {**(resumed.node_notes if resumed else {}), **r.node_notes}
            for node_id, elements in r.node_outputs.items():
                self.ws.save_node_output(self.job_id, node_id, doc.id, elements, notes.get(node_id))
        output = None
        if ok and hasattr(self.destination, "target"):
            output = str(self.destination.target(doc))
        self.record(
            FileResult(
                doc.id,
                doc.filename,
                "SUCCESS" if ok else "FAILED",
                error=error,
                elements=written if ok else 0,
                output=output,
                warnings=warnings,
                version=doc.version,
            )
        )
        if ok and doc.version is not None:
            where = (doc.filename, self.opts.source_key, self.opts.destination_key or None)
            self.ws.mark_processed(
                self.workflow_key,
                doc.record_id,
                doc.version,
                self.settings_hash,
                self.job_id,
                where,
                self._stamp(doc),
            )

    def _stamp(self, doc: Document) -> str | None:
        try:
            return self.destination.stamp(doc)
        except Exception:  # a fingerprint is a check for later runs: never fails the document
            return None

    def record(self, result: FileResult) -> None:
        """Record one document's result in the job."""
        if self.earlier is not None:  # a document retried on resume replaces its earlier result
            self.earlier.replaced(result.file_id, self.counts)
        self.seq += 1
        self.counts[result.status] += 1
        self.counts["elements"] += result.elements
        self.ws.record_file(self.job_id, result, self.seq)
        tally = self.tally()
        if result.status == "SUCCESS":
            self.progress(events.DocumentWritten(result, tally))
        elif result.status == "FAILED":
            self.progress(events.DocumentFailed(result, tally))
        else:
            self.progress(events.DocumentSkipped(result, tally))

    # --- figures --------------------------------------------------------------------------
    def tally(self) -> events.Tally:
        """The job's documents so far."""
        c = self.counts
        found = max(self.found, self.opts.expected or 0, c["SUCCESS"] + c["FAILED"] + c["SKIPPED"])
        pages = self.stats[0].pages if self.stats else 0
        return events.Tally(found, c["SUCCESS"], c["FAILED"], c["SKIPPED"], c["elements"], pages)

    def node_counts(self) -> tuple[events.NodeCount, ...]:
        """Every node's counts so far."""
        return events.node_counts(self.stats)

    def publish(self) -> None:
        """The live progress into the job record (the server's job details, the web UI)."""
        tally = self.tally()
        self.ws.set_progress(self.job_id, {**asdict(tally), "left": tally.left})

    def _count_nodes(self, r: worker.DocResult, ok: bool) -> None:
        failed_at = r.failed_node
        for stat in self.stats:
            stat.ready -= 1
            if failed_at == stat.node_id:
                stat.failure += 1
                failed_at = "after"
            elif failed_at == "after":
                continue
            else:
                stat.success += 1

    def _processing_status(self, status: str) -> str:
        if status == "STOPPED":
            return "STOPPED"
        done, failed = self.counts["SUCCESS"], self.counts["FAILED"]
        if failed == 0:
            return "SUCCESS"
        # The service counts 90-99% processed as finished with errors, below 90% as failed.
        return "COMPLETED_WITH_ERRORS" if done / (done + failed) >= 0.9 else "FAILED"
