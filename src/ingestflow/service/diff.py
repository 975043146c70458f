"""Comparing two jobs: per node and per file, what changed in the elements and in the settings."""

from __future__ import annotations

import difflib
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from ingestflow.errors import NotFound, WorkflowInvalid
from ingestflow.spec.problems import Problem
from ingestflow.store import Workspace

MAX_CHANGES = 200  # element changes listed per node and file (the counts are always whole)


def elements_of(ws: Workspace, record: dict[str, Any], index: int, file: dict[str, Any]):
    """A file's elements after node `index` of a job, or None when the job did not keep them
    (an untraced job's output file counts only while no later run has rewritten it)."""
    node_id = record["node_stats"][index].get("node_id")
    if node_id:
        path = ws.node_output_path(record["id"], node_id, file["file_id"])
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
    last = index == len(record["node_stats"]) - 1
    if last and output_is_the_jobs(record, file):
        return json.loads(Path(file["output"]).read_text(encoding="utf-8"))
    return None


def output_is_the_jobs(record: dict[str, Any], file: dict[str, Any]) -> bool:
    """True when a file's output is still what this job wrote: it exists and was not modified
    after the job ended (a later run into the same folder rewrites it)."""
    from datetime import datetime

    path = Path(file["output"]) if file.get("output") else None
    if path is None or not path.exists():
        return False
    if not record.get("finished_at"):
        return True  # still running (or from before jobs recorded their end)
    ended = datetime.fromisoformat(record["finished_at"]).timestamp()
    return path.stat().st_mtime <= ended + 0.01


def summary(elements: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """Counts, types and the text length distribution of some elements."""
    if elements is None:
        return None
    lengths = [len(e.get("text") or "") for e in elements]
    return {
        "elements": len(elements),
        "types": dict(sorted(Counter(e.get("type", "?") for e in elements).items())),
        "text_length": {
            "min": min(lengths, default=0),
            "median": statistics.median(lengths) if lengths else 0,
            "max": max(lengths, default=0),
        },
    }


def changes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """The elements that differ (by type and text), in order: (how many, the first ones)."""
    left = [f"{e.get('type')}: {e.get('text') or ''}" for e in a]
    right = [f"{e.get('type')}: {e.get('text') or ''}" for e in b]
    listed: list[dict[str, Any]] = []
    count = 0
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        count += max(i2 - i1, j2 - j1)
        if len(listed) < MAX_CHANGES:
            listed.append(
                {
                    "op": op,
                    "a_index": i1,
                    "b_index": j1,
                    "a": [_short(e) for e in a[i1:i2]],
                    "b": [_short(e) for e in b[j1:j2]],
                }
            )
    return count, listed


def settings_diff(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    """{setting: [value in A, value in B]} for the settings that differ (and type/subtype)."""
    a, b = a or {}, b or {}
    out: dict[str, Any] = {}
    for key in ("type", "subtype"):
        if a.get(key) != b.get(key):
            out[key] = [a.get(key), b.get(key)]
    sa, sb = a.get("settings") or {}, b.get("settings") or {}
    for key in sorted(set(sa) | set(sb)):
        if sa.get(key) != sb.get(key):
            out[f"settings.{key}"] = [sa.get(key), sb.get(key)]
    return out


def diff_jobs(
    ws: Workspace, job_a: str, job_b: str, node: str | None = None, file: str | None = None
) -> dict[str, Any]:
    """Compare two jobs node by node (matched by position) and file by file (by name)."""
    ra, rb = ws.job_record(job_a), ws.job_record(job_b)
    if ra["id"] == rb["id"]:
        raise WorkflowInvalid(
            [Problem("JOB_B", "give two different jobs", found=rb["id"])], what="diff request"
        )
    nodes_a = (ra.get("workflow") or {}).get("workflow_nodes") or []
    nodes_b = (rb.get("workflow") or {}).get("workflow_nodes") or []
    count = max(len(ra["node_stats"]), len(rb["node_stats"]))
    indices = list(range(count))
    if node is not None:
        indices = [
            i for i in indices if node in _names(ra, i) | _names(rb, i) or node == str(i + 1)
        ]
        if not indices:
            known = sorted({n["node_name"] for r in (ra, rb) for n in r["node_stats"]})
            raise NotFound(f"no node {node!r} in either job; nodes: {', '.join(known)}")
    files_a = {f["filename"]: f for f in ra["files"]}
    files_b = {f["filename"]: f for f in rb["files"]}
    names = sorted(set(files_a) | set(files_b))
    if file is not None:
        names = [n for n in names if file in (n, Path(n).name)]
        if not names:
            raise NotFound(f"no file {file!r} in either job")
    out_nodes = []
    for i in indices:
        entry: dict[str, Any] = {
            "position": i + 1,
            "name": _label(ra, rb, i),
            "settings": settings_diff(
                nodes_a[i] if i < len(nodes_a) else None, nodes_b[i] if i < len(nodes_b) else None
            ),
            "files": [],
        }
        for name in names:
            fa, fb = files_a.get(name), files_b.get(name)
            ea = elements_of(ws, ra, i, fa) if fa and i < len(ra["node_stats"]) else None
            eb = elements_of(ws, rb, i, fb) if fb and i < len(rb["node_stats"]) else None
            row: dict[str, Any] = {"file": name, "a": summary(ea), "b": summary(eb)}
            if ea is not None and eb is not None:
                row["changed"], row["changes"] = changes(ea, eb)
            else:
                row["changed"], row["changes"] = None, []
                row["note"] = _missing(fa, fb, ea, eb, ra, rb, i)
            entry["files"].append(row)
        out_nodes.append(entry)
    return {
        "a": {"id": ra["id"], "workflow": ra["workflow_name"], "created_at": ra["created_at"]},
        "b": {"id": rb["id"], "workflow": rb["workflow_name"], "created_at": rb["created_at"]},
        "nodes": out_nodes,
    }


def _names(record: dict[str, Any], index: int) -> set[str]:
    if index >= len(record["node_stats"]):
        return set()
    stat = record["node_stats"][index]
    return {stat["node_name"], str(stat.get("node_id"))}


def _label(ra: dict[str, Any], rb: dict[str, Any], index: int) -> str:
    names = [r["node_stats"][index]["node_name"] for r in (ra, rb) if index < len(r["node_stats"])]
    return names[0] if len(set(names)) == 1 else " / ".join(names)


def _missing(fa: Any, fb: Any, ea: Any, eb: Any, ra: dict, rb: dict, index: int) -> str:
    if fa is None or fb is None:
        return f"only in job {(ra if fb is None else rb)['id'][:8]}"
    for entry, elements, record in ((fa, ea, ra), (fb, eb, rb)):
        if elements is None:
            if index >= len(record["node_stats"]):
                count = len(record["node_stats"])
                return f"job {record['id'][:8]} has no such node (its workflow has {count})"
            if entry["status"] != "SUCCESS":
                return f"{entry['status'].lower()} in job {record['id'][:8]}"
            if record["trace"]:
                return f"job {record['id'][:8]}'s output of this node is gone"
            return (
                f"job {record['id'][:8]} kept no output of this node (run with --trace), or a "
                "later run rewrote its output file"
            )
    return ""


def _short(element: dict[str, Any], limit: int = 2000) -> dict[str, str]:
    text = element.get("text") or ""
    return {
        "type": str(element.get("type")),
        "text": text if len(text) <= limit else text[: limit - 1] + "…",
    }
