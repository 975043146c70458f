"""One node of a workflow run on its own, in this process (`ingestflow.run_node`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingestflow.errors import WorkflowInvalid
from ingestflow.spec.problems import Problem


def run_node(
    body: Any, node: str, elements: list[dict[str, Any]], path: Path | None, filename: str
) -> list[dict[str, Any]]:
    """One node of a workflow in this process: a partitioner on the file at `path`, any other
    node on `elements`. Nothing is recorded."""
    from ingestflow.connectors.local import file_record_id
    from ingestflow.elements import Document
    from ingestflow.offline import set_offline_env
    from ingestflow.runner.plan import build_plan

    set_offline_env()
    plan = build_plan(body)
    names = [n.name for n in plan.nodes]
    index = next((i for i, n in enumerate(plan.nodes) if node in (n.name, n.id)), None)
    if index is None:
        raise WorkflowInvalid(
            [Problem("node", f"no node is called {node!r}", allowed=names)], what="request"
        )
    planned = plan.nodes[index]
    if planned.type == "partition":
        if path is None or not path.is_file():
            raise WorkflowInvalid(
                [Problem("path", "a partitioner runs on a file: give its path", found=str(path))],
                what="request",
            )
        record = file_record_id(path)
        doc = Document(record, record, path.name, path=path)
    else:
        if path is not None:
            raise WorkflowInvalid(
                [Problem("path", f"the {planned.name} node runs on elements, not on a file")],
                what="request",
            )
        doc = Document(filename, filename, filename, elements=[dict(e) for e in elements])
    stage = plan.stages()[index]
    stage.open()
    try:
        done = stage.process_many([doc])[0] if stage.batched else stage.process(doc)
    finally:
        stage.close()
    return done.elements
