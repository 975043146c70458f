"""Job queries shared by the CLI and the REST API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ingestflow.errors import NotFound
from ingestflow.runner.job import open_workspace


def download(workspace: Path, job_id: str, file: str, node: str | None) -> list[dict[str, Any]]:
    """The elements of one file after one node (no node: the last node's, i.e. the output)."""
    with open_workspace(workspace) as ws:
        record = ws.job_record(job_id)
        matches = [
            f for f in record["files"] if f["file_id"].startswith(file) or f["filename"] == file
        ]
        if len(matches) != 1:
            names = ", ".join(f"{f['file_id'][:8]} {f['filename']}" for f in record["files"])
            raise NotFound(
                f"file {file!r} is {'ambiguous' if matches else 'not'} in job "
                f"{record['id']}; its files: {names}"
            )
        entry = matches[0]
        if entry["status"] != "SUCCESS":
            raise NotFound(
                f"{entry['filename']} has no output: {entry['status'].lower()} ({entry['error']})"
            )
        nodes = record["node_stats"]
        node_ids = [n["node_id"] for n in json.loads(ws.job_row(record["id"])["node_stats"])]
        if node is None:
            if entry["output"] and Path(entry["output"]).exists():
                return json.loads(Path(entry["output"]).read_text(encoding="utf-8"))
            node = node_ids[-1]
        wanted = [
            nid for nid, n in zip(node_ids, nodes, strict=True) if node in (nid, n["node_name"])
        ]
        if not wanted:
            raise NotFound(
                f"node {node!r} is not in job {record['id']}; nodes: " + ", ".join(node_ids)
            )
        path = ws.node_output_path(record["id"], wanted[0], entry["file_id"])
        if not path.exists():
            raise NotFound(
                f"node {node!r} output of {entry['filename']} was not kept: run the "
                "workflow with --trace to keep every node's output"
            )
        return json.loads(path.read_text(encoding="utf-8"))
