"""A job as one self-contained HTML page: per-node counts and timings, a table per file, and each
node's elements colour-coded by type, with chunk boundaries drawn (no network, no scripts)."""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

MAX_SHOWN = 500  # elements shown per file and node (the counts are always whole)
_PALETTE = {
    "Title": "#dbeafe",
    "NarrativeText": "#f1f5f9",
    "ListItem": "#dcfce7",
    "Table": "#fef3c7",
    "TableChunk": "#fef3c7",
    "Image": "#fce7f3",
    "FigureCaption": "#fae8ff",
    "Header": "#e5e7eb",
    "Footer": "#e5e7eb",
    "PageBreak": "#f3f4f6",
    "CompositeElement": "#ecfeff",
    "UncategorizedText": "#f5f5f4",
    "Formula": "#ede9fe",
    "Address": "#fff7ed",
    "EmailAddress": "#fff7ed",
}
_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#111}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}h3{font-size:1rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;
text-align:left;vertical-align:top}th{background:#f3f4f6}td.n{text-align:right}
pre{margin:0;white-space:pre-wrap;font-size:12px}
.el{border-left:4px solid #94a3b8;margin:.3rem 0;padding:.3rem .5rem;white-space:pre-wrap}
.chunk{border:2px solid #0891b2;border-radius:4px}
.tag{font:11px monospace;color:#475569;display:block}
.FAILED{color:#b91c1c}.SUCCESS{color:#15803d}
""" + "".join(f".el-{name}{{background:{colour}}}" for name, colour in _PALETTE.items())

ElementsFn = Callable[[int, dict[str, Any]], list[dict[str, Any]] | None]


def render(record: dict[str, Any], elements_after: ElementsFn) -> str:
    """The page for a full job record; `elements_after(node index, file entry)` gives a file's
    elements after a node, or None when the job did not keep them."""
    e = html.escape
    nodes = record["node_stats"]
    settings = {
        i: n.get("settings")
        for i, n in enumerate((record.get("workflow") or {}).get("workflow_nodes") or [])
    }
    runtime = record.get("runtime", "")
    seconds = runtime[2:-1] + " s" if runtime.startswith("PT") else runtime
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>job {e(record['id'])}</title><style>{_CSS}</style></head><body>",
        f"<h1>Job {e(record['id'])}</h1>",
        "<table id='job'>",
        _row("workflow", e(record["workflow_name"])),
        _row("status", f"{e(record['status'])} / {e(record['processing_status'])}"),
        _row("started", e(record["created_at"])),
        _row("runtime", e(seconds)),
        _row("files", str(len(record["files"]))),
    ]
    if record.get("message"):
        out.append(_row("message", e(record["message"])))
    out += ["</table>", "<h2>Nodes</h2><table id='nodes'><tr><th>node</th><th>type</th>"]
    out.append(
        "<th>documents ok</th><th>failed</th><th>elements in</th><th>elements out</th>"
        "<th>seconds</th><th>reused</th><th>settings</th></tr>"
    )
    for i, n in enumerate(nodes):
        cells = [
            e(n["node_name"]),
            e(f"{n['node_type']} / {n['node_subtype']}"),
        ]
        numbers = [
            n["success"],
            n["failure"],
            n.get("elements_in", ""),
            n.get("elements_out", ""),
            n.get("seconds", ""),
            n.get("reused", ""),
        ]
        shown = json.dumps(settings.get(i) or {}, indent=1, ensure_ascii=False)
        out.append(
            "<tr>"
            + "".join(f"<td>{c}</td>" for c in cells)
            + "".join(f"<td class='n'>{x}</td>" for x in numbers)
            + f"<td><pre>{e(shown)}</pre></td></tr>"
        )
    out.append("</table>")
    for entry in record["files"]:
        out += _file(entry, nodes, elements_after)
    out.append("</body></html>")
    return "\n".join(out)


def _file(entry: dict[str, Any], nodes: list[dict[str, Any]], elements_after: ElementsFn):
    e = html.escape
    out = [
        f"<h2 class='file'>{e(entry['filename'])}</h2>",
        f"<p class='{e(entry['status'])}'>{e(entry['status'])}"
        + (f": {e(entry['error'])}" if entry.get("error") else "")
        + "</p>",
    ]
    if entry["status"] != "SUCCESS":
        return out
    per_node = [
        elements_after(i, entry) if entry["status"] == "SUCCESS" else None
        for i in range(len(nodes))
    ]
    out.append("<table class='per-node'><tr><th>node</th><th>elements</th><th>types</th></tr>")
    for node, elements in zip(nodes, per_node, strict=True):
        if elements is None:
            out.append(f"<tr><td>{e(node['node_name'])}</td><td colspan='2'>not kept</td></tr>")
            continue
        types = ", ".join(
            f"{t} {c}" for t, c in sorted(Counter(x.get("type") for x in elements).items())
        )
        out.append(
            f"<tr><td>{e(node['node_name'])}</td><td class='n'>{len(elements)}</td>"
            f"<td>{e(types)}</td></tr>"
        )
    out.append("</table>")
    chunked_at = next((i for i, n in enumerate(nodes) if n["node_type"] == "chunk"), len(nodes))
    for index, (node, elements) in enumerate(zip(nodes, per_node, strict=True)):
        if elements is None:
            continue
        last = index == len(nodes) - 1
        out.append(
            f"<details class='node-output'{' open' if last else ''}>"
            f"<summary>{e(node['node_name'])}: {len(elements)} elements</summary>"
        )
        for position, element in enumerate(elements[:MAX_SHOWN]):
            kind = str(element.get("type", "?"))
            text = element.get("text") or ""
            chunk = " chunk" if index >= chunked_at else ""  # chunks stay chunks after embedding
            page = (element.get("metadata") or {}).get("page_number")
            tag = (
                f"#{position + 1} {kind}"
                + (f" · page {page}" if page else "")
                + f" · {len(text)} chars"
            )
            out.append(
                f"<div class='el el-{e(kind)}{chunk}' data-type='{e(kind)}'>"
                f"<span class='tag'>{e(tag)}</span>{e(text)}</div>"
            )
        if len(elements) > MAX_SHOWN:
            out.append(
                f"<p>… {len(elements) - MAX_SHOWN} more (see `ingestflow jobs download`)</p>"
            )
        out.append("</details>")
    return out


def _row(label: str, value: str) -> str:
    return f"<tr><th>{html.escape(label)}</th><td>{value}</td></tr>"
