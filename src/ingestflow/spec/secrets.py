"""Masked secrets sent back on update: a `********` takes the stored secret, but only while the
secret still goes to the same endpoint.

Records show every secret masked, so a client that reads a record, changes it and writes it back
sends `********` for each secret. Keeping the stored value then is what the client meant; keeping
it for a changed endpoint would send the secret to whatever host the new value names, so that is
refused. Connectors' configs and workflows' node settings follow this one rule.
"""

from __future__ import annotations

from typing import Any

from ingestflow.spec.models import MASK, SECRET_FIELDS
from ingestflow.spec.problems import Problem

#: For each secret of node settings, the settings that say where it is sent.
NODE_SECRET_ENDPOINTS: dict[str, tuple[str, ...]] = {
    "provider_api_key": ("provider",),
    "unstructured_api_key": ("unstructured_api_url",),
}


def keep_masked(
    config: dict[str, Any],
    stored: dict[str, Any],
    endpoint_fields: tuple[str, ...],
    path: str = "config",
    secret_endpoints: dict[str, tuple[str, ...]] | None = None,
) -> tuple[dict[str, Any], list[Problem]]:
    """`config` where every secret sent back masked takes the stored value, and the problems of
    secrets sent masked that cannot be kept (nothing stored, or an endpoint field changed).

    `endpoint_fields` guard every secret; `secret_endpoints` names them per secret instead."""
    masked = [key for key, value in config.items() if key in SECRET_FIELDS and value == MASK]
    problems = []
    for key in masked:
        fields = (secret_endpoints or {}).get(key, endpoint_fields)
        changed = ", ".join(
            f"`{f}`" for f in fields if _plain(config.get(f)) != _plain(stored.get(f))
        )
        if stored.get(key) in (None, MASK):
            message, hint = f"but no {key} is stored to keep", f"send the real {key}"
        elif changed:
            message = (
                f"but {changed} changed: a stored secret is kept only for the same endpoint "
                "and identity"
            )
            hint = f"send `{key}` again with the new {changed}, or send the stored {changed} back"
        else:
            continue
        problems.append(
            Problem(f"{path}.{key}", f"`{key}` is sent masked ({MASK}), {message}", hint=hint)
        )
    if problems:
        return config, problems
    return {key: stored[key] if key in masked else value for key, value in config.items()}, []


def keep_masked_node_secrets(
    body: dict[str, Any], stored_nodes: list[dict[str, Any]] | None
) -> tuple[dict[str, Any], list[Problem]]:
    """A workflow body whose nodes' masked secrets take the stored values of the same nodes
    (matched by id, else by name), and the problems of those that cannot be kept."""
    nodes = body.get("workflow_nodes")
    if not isinstance(nodes, list):
        return body, []
    old = [n for n in stored_nodes or [] if isinstance(n, dict)]
    by_id = {n.get("id"): n for n in old if n.get("id")}
    by_name = {n.get("name"): n for n in old}
    problems: list[Problem] = []
    kept_nodes: list[Any] = []
    for index, node in enumerate(nodes):
        settings = node.get("settings") if isinstance(node, dict) else None
        if not isinstance(settings, dict):
            kept_nodes.append(node)
            continue
        match = by_id.get(node.get("id")) or by_name.get(node.get("name")) or {}
        stored = match.get("settings")
        stored = stored if isinstance(stored, dict) else {}
        settings, found = keep_masked(
            settings,
            stored,
            (),
            path=f"workflow_nodes[{index}].settings",
            secret_endpoints=NODE_SECRET_ENDPOINTS,
        )
        problems.extend(found)
        kept_nodes.append({**node, "settings": settings})
    return {**body, "workflow_nodes": kept_nodes}, problems


def _plain(value: Any) -> Any:
    """An endpoint value as compared on update (surrounding blanks and a final slash ignored)."""
    return value.strip().rstrip("/") if isinstance(value, str) else value
