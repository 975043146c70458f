"""Reusing earlier steps: a run starts each document from the deepest node whose output is
already known, from the node-output cache or from an earlier job's stored outputs.

A node's output is reusable when the document is the same (content hash, identity, file name,
source metadata) and every node up to it has the same type, subtype and settings, under the same
run context (strategy, image blocks, OCR languages, enrichment tasks, model endpoints) and the
same ingestflow version. The cache is content-addressed by exactly that, so a hit is the output
a full run would make; it is bounded in size (least recently used files go first).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingestflow.elements import Document, Element
from ingestflow.errors import WorkflowInvalid
from ingestflow.files import write_json_atomic
from ingestflow.spec.problems import Problem

DEFAULT_CACHE_MB = 1024


@dataclass
class Resume:
    """Where a document starts: the index of its first stage to run, and the outputs of the
    nodes before it (node id → elements), reused."""

    start: int
    outputs: dict[str, list[Element]]
    origin: str  # "cache" or "job <id>"
    # node id -> the document's warnings and stats once that node was done
    node_notes: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def elements(self) -> list[Element]:
        """The input of the first stage to run."""
        return list(self.outputs[list(self.outputs)[-1]]) if self.outputs else []

    @property
    def notes(self) -> dict[str, Any]:
        """The document's warnings and stats where it starts again."""
        return self.node_notes.get(list(self.outputs)[-1], {}) if self.outputs else {}


def chain_hashes(plan: Any) -> list[str]:
    """For each node, a fingerprint of it and every node before it, under the run's context."""
    import importlib.metadata

    from ingestflow.spec.catalog import ENRICHMENT_SUBTYPES
    from ingestflow.spec.settings import PartitionSettings

    ctx = plan.context
    try:
        version = importlib.metadata.version("ingestflow")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree
        version = "0"
    first = plan.nodes[0]
    partitioner = first.settings if isinstance(first.settings, PartitionSettings) else None
    base = {
        "version": version,
        "unique_element_ids": ctx.unique_element_ids,
        "strategy": partitioner.partition_strategy.name if partitioner else "fast",
        "image_block_types": list(partitioner.image_blocks() if partitioner else ()),
        "ocr_languages": list(first.inputs.languages),
        "enrichment_tasks": [
            ENRICHMENT_SUBTYPES.get(n.subtype, n.subtype)
            for n in plan.nodes
            if n.type == "prompter"
        ],
        "context_provider": ctx.context_provider,
        "endpoints": {
            name: [e.base_url, e.protocol, e.model] for name, e in sorted(ctx.endpoints.items())
        },
    }
    crops = first.inputs.crops_for_later
    if crops:  # the partitioner crops these too (absent: hashes as before)
        base["enrichment_crops"] = list(crops)
    digest = hashlib.sha256(json.dumps(base, sort_keys=True, default=str).encode())
    out = []
    for node in plan.nodes:
        settings = node.settings.model_dump(mode="json")
        digest.update(json.dumps([node.type, node.subtype, settings], sort_keys=True).encode())
        out.append(digest.copy().hexdigest())
    return out


def document_key(doc: Document) -> str:
    """What identifies a document's input: content, identity, name, source metadata."""
    blob = json.dumps(
        [doc.version, doc.id, doc.record_id, doc.filename, doc.data_source],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class NodeCache:
    """Node outputs by fingerprint, as JSON files under `root` (`<workspace>/cache/nodes`)."""

    def __init__(self, root: Path, budget_mb: int | None = None) -> None:
        self.root = Path(root)
        env = os.environ.get("INGESTFLOW_CACHE_MB", "")
        if budget_mb is None:
            budget_mb = int(env) if env.isdigit() else DEFAULT_CACHE_MB
        self.budget = budget_mb << 20

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> tuple[list[Element], dict[str, Any]] | None:
        """A stored output and the document's notes (warnings, stats) with it, or None (a
        damaged file counts as absent)."""
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            os.utime(path)  # recently used: kept longest
        except (OSError, ValueError):
            return None
        if isinstance(entry, dict) and isinstance(entry.get("elements"), list):
            return entry["elements"], dict(entry.get("notes") or {})
        return None

    def has(self, key: str) -> bool:
        """True when an output is stored under `key`."""
        return self._path(key).exists()

    def put(self, key: str, elements: list[Element], notes: dict[str, Any] | None = None) -> None:
        """Store an output and the document's notes (written whole or not at all)."""
        entry = {"elements": elements, "notes": notes or {}}
        write_json_atomic(self._path(key), entry, private=True)  # in the workspace: owner only

    def files(self) -> Iterator[Path]:
        """Every stored output file."""
        yield from self.root.glob("*/*.json") if self.root.exists() else ()

    def usage(self) -> tuple[int, int]:
        """(files, bytes) stored."""
        sizes = [p.stat().st_size for p in self.files()]
        return len(sizes), sum(sizes)

    def prune(self) -> int:
        """Remove the least recently used outputs until the cache fits its budget; returns how
        many were removed."""
        entries = sorted((p.stat().st_mtime, p.stat().st_size, p) for p in self.files())
        total = sum(size for _, size, _ in entries)
        removed = 0
        for _, size, path in entries:
            if total <= self.budget:
                break
            path.unlink(missing_ok=True)
            total -= size
            removed += 1
        return removed

    def clear(self) -> tuple[int, int]:
        """Remove everything; returns the (files, bytes) removed."""
        files, size = self.usage()
        for path in list(self.files()):
            path.unlink(missing_ok=True)
        return files, size


@dataclass
class JobOutputs:
    """An earlier job's stored node outputs, to start a run from."""

    job_id: str
    start: int  # index of the first node to run again
    outputs: dict[str, dict[str, Path]]  # file id -> {node id of this plan -> stored output}
    versions: dict[str, str | None]  # file id -> content hash the job saw


@dataclass
class Reuse:
    """Finds, per document, the deepest reusable node output; stores new outputs in the cache."""

    plan: Any
    cache: NodeCache | None = None
    job: JobOutputs | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.chain = chain_hashes(self.plan)
        self.node_ids = [n.id for n in self.plan.nodes]

    def lookup(self, doc: Document) -> Resume | None:
        """How far this document's earlier outputs go, or None."""
        if doc.version is None:
            try:
                doc.version = doc.content_hash()
            except OSError:
                return None
        resume = self._from_job(doc) if self.job is not None else self._from_cache(doc)
        if resume is not None:
            self.counts[resume.origin] = self.counts.get(resume.origin, 0) + 1
        return resume

    def _from_cache(self, doc: Document) -> Resume | None:
        if self.cache is None:
            return None
        base = document_key(doc)
        depth = 0
        while depth < len(self.chain) and self.cache.has(_key(base, self.chain[depth])):
            depth += 1
        outputs: dict[str, list[Element]] = {}
        notes: dict[str, dict[str, Any]] = {}
        for index in range(depth):
            entry = self.cache.get(_key(base, self.chain[index]))
            if entry is None:
                break
            node_id = self.node_ids[index]
            outputs[node_id], notes[node_id] = entry
        return Resume(len(outputs), outputs, "cache", notes) if outputs else None

    def _from_job(self, doc: Document) -> Resume | None:
        job = self.job
        assert job is not None
        stored = job.outputs.get(doc.id)
        if not stored or job.versions.get(doc.id) != doc.version:
            return None  # a new or changed document: processed in full
        outputs: dict[str, list[Element]] = {}
        notes: dict[str, dict[str, Any]] = {}
        for node_id in self.node_ids[: job.start]:
            try:
                path = stored[node_id]
                outputs[node_id] = json.loads(path.read_text(encoding="utf-8"))
            except (KeyError, OSError, ValueError):
                return None
            notes[node_id] = read_notes(path)
        return Resume(job.start, outputs, f"job {job.job_id}", notes)

    def store(
        self,
        doc: Document,
        node_outputs: dict[str, list[Element]],
        node_notes: dict[str, dict[str, Any]],
    ) -> None:
        """Keep a document's fresh node outputs (and its notes after each) in the cache; a
        cache that cannot be written costs reuse later, never this run."""
        if self.cache is None or doc.version is None:
            return
        base = document_key(doc)
        for index, node_id in enumerate(self.node_ids):
            if node_id in node_outputs:
                key = _key(base, self.chain[index])
                try:
                    if not self.cache.has(key):
                        self.cache.put(key, node_outputs[node_id], node_notes.get(node_id))
                except OSError:
                    return

    def summary(self) -> str | None:
        """A line for the job's message: how many documents started from stored outputs."""
        if not self.counts:
            return None
        parts = [f"{n} from {origin}" for origin, n in sorted(self.counts.items())]
        return "reused earlier node outputs: " + ", ".join(parts)


def notes_path(output: Path) -> Path:
    """Where a job keeps a document's notes beside one node's output."""
    return output.with_name(output.name.removesuffix(".json") + ".notes.json")


def read_notes(output: Path) -> dict[str, Any]:
    """The notes (warnings, stats) kept beside a node output; none when there are none."""
    try:
        notes = json.loads(notes_path(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return notes if isinstance(notes, dict) else {}


def _key(document: str, chain: str) -> str:
    return hashlib.sha256(f"{document}:{chain}".encode()).hexdigest()


def from_job(plan: Any, record: dict[str, Any], ws: Any, start_at: str | None) -> JobOutputs:
    """The outputs of job `record` this plan can start from: nodes are matched by position; the
    run starts at the first node whose type, subtype or settings differ (or at `start_at`, which
    may not lie after it)."""
    from ingestflow.spec.record import mask_secrets

    old_nodes = (record.get("workflow") or {}).get("workflow_nodes") or []
    node_ids = [n.get("node_id") for n in record["node_stats"]]
    differ = len(plan.nodes)
    for index, node in enumerate(plan.nodes):
        old = old_nodes[index] if index < len(old_nodes) else None
        raw = plan.workflow.workflow_nodes[index] if plan.workflow.workflow_nodes else None
        same = (
            old is not None
            and raw is not None
            and (old.get("type"), old.get("subtype")) == (node.type, node.subtype)
            and mask_secrets(raw.settings) == (old.get("settings") or {})
        )
        if not same:
            differ = index
            break
    names = [n.name for n in plan.nodes]
    start = differ
    if start_at is not None:
        matches = [i for i, n in enumerate(plan.nodes) if start_at in (n.name, n.id)]
        if not matches:
            raise _invalid("start_at", f"no node is called {start_at!r}", names)
        if matches[0] > differ:
            raise _invalid(
                "start_at",
                f"the {names[differ]} node's settings differ from job {record['id']}'s, so its "
                f"stored output is not what this workflow makes: start at {names[differ]} or "
                "earlier",
                names[: differ + 1],
            )
        start = matches[0]
    if start == 0:
        why = (
            f"`start_at` {names[0]} starts at the first node: nothing is reused (run without "
            "`from_job`)"
            if start_at is not None and differ > 0
            else f"nothing to reuse: the first node ({names[0]}) differs from job {record['id']}'s"
        )
        raise _invalid("start_at" if start_at is not None and differ > 0 else "from_job", why, None)
    if not record.get("trace"):
        raise _invalid(
            "from_job",
            f"job {record['id']} kept no node outputs; run it with `trace` to reuse them",
            None,
        )
    outputs: dict[str, dict[str, Path]] = {}
    versions: dict[str, str | None] = {}
    for entry in record["files"]:
        if entry["status"] != "SUCCESS":
            continue
        paths = {
            plan.nodes[i].id: ws.node_output_path(record["id"], node_ids[i], entry["file_id"])
            for i in range(start)
            if i < len(node_ids) and node_ids[i]
        }
        outputs[entry["file_id"]] = paths
        versions[entry["file_id"]] = entry.get("version")
    return JobOutputs(record["id"], start, outputs, versions)


def _invalid(path: str, message: str, allowed: Any) -> WorkflowInvalid:
    return WorkflowInvalid([Problem(path, message, allowed=allowed)], what="run request")
