"""Who may read, update and delete a wiki page: SPEC.md's `permissions_data` from the page's
restrictions and its space's permissions (Confluence v1 REST shapes).

Inputs
  * the page's restrictions by operation (`/content/{id}/restriction/byOperation`): the principals
    named under `read` (view) and `update` (edit); other operations are ignored;
  * the read restrictions of the page's ancestors (Confluence inherits view restrictions, never edit
    restrictions);
  * the space's permissions (`/space/{key}/permissions`): a list of grants, each an
    `operation: {operation, targetType}` with `subjects: {user: {results}, group: {results}}`.
    (The Cloud v2 shape, `principal: {type, id}` with `operation: {key, targetType}`, is read too.)

Identifiers: a user is named by `accountId` (Cloud), else `userKey`, else `username` (Server); a
group by `id` (Cloud), else `name` (Server). Two principals are the same only when kind and
identifier match: group membership is not resolved, so every intersection below is conservative
(a principal that can't be shown to qualify is left out, never added).

Rules (sets are of users and groups separately; "space X/T" is the space grant with operation X on
target type T):
  1. space readers  = space read/space  ∪ space administer/space;
     space editors  = space create/page ∪ space administer/space (Confluence's "Add page" permission
     is also the permission to edit pages);
     space deleters = space delete/page.
  2. read: when the page or any ancestor restricts viewing, the principals named by *every* such
     restriction (the page's own entry counts its update-restricted principals as readers, since
     an editor may read); otherwise the space readers plus the page's update-restricted principals.
  3. update: the page's update restrictions when it has any, otherwise the space editors; in both
     cases only principals that may read (rule 2).
  4. delete: the space deleters that may read; when the page restricts updates, only those that may
     also update.
  5. Anonymous and unlicensed access flags are not represented (no principal stands for "anyone").
  6. The output is always `[{"read": ...}, {"update": ...}, {"delete": ...}]`, each with sorted,
     de-duplicated `users` and `groups` lists (possibly empty).
When any input can't be read (HTTP 403, an old server without the endpoint, a malformed body) the
caller leaves `permissions_data` out and records a warning: no guess is ever published.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

OPERATIONS = ("read", "update", "delete")


class PermissionsUnreadable(ValueError):
    """A restrictions or permissions body does not have the expected shape."""


@dataclass
class Principals:
    """A set of users and a set of groups, by identifier."""

    users: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.users or self.groups)

    def __or__(self, other: Principals) -> Principals:
        return Principals(self.users | other.users, self.groups | other.groups)

    def __and__(self, other: Principals) -> Principals:
        return Principals(self.users & other.users, self.groups & other.groups)

    def as_dict(self) -> dict[str, list[str]]:
        """SPEC.md's `{"users": [...], "groups": [...]}`, sorted."""
        return {"users": sorted(self.users), "groups": sorted(self.groups)}


def user_id(user: Mapping[str, Any]) -> str | None:
    """A user's identifier: accountId (Cloud), userKey or username (Server)."""
    for key in ("accountId", "userKey", "username"):
        value = user.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def group_id(group: Mapping[str, Any]) -> str | None:
    """A group's identifier: id (Cloud), else name (Server)."""
    for key in ("id", "name"):
        value = group.get(key)
        if isinstance(value, str | int) and str(value):
            return str(value)
    return None


def _results(block: Any) -> list[Mapping[str, Any]]:
    if block is None:
        return []
    if isinstance(block, Mapping):
        block = block.get("results", [])
    if not isinstance(block, list) or not all(isinstance(item, Mapping) for item in block):
        raise PermissionsUnreadable(f"expected a list of principals, found {type(block).__name__}")
    return block


def _subjects(subjects: Any) -> Principals:
    if subjects is None:
        return Principals()
    if not isinstance(subjects, Mapping):
        raise PermissionsUnreadable("`restrictions`/`subjects` is not an object")
    users = {uid for u in _results(subjects.get("user")) if (uid := user_id(u))}
    groups = {gid for g in _results(subjects.get("group")) if (gid := group_id(g))}
    return Principals(users, groups)


def page_restrictions(by_operation: Any) -> dict[str, Principals]:
    """Parse `/restriction/byOperation`: operation name → the principals it is restricted to."""
    if not isinstance(by_operation, Mapping):
        raise PermissionsUnreadable("restrictions by operation is not a JSON object")
    out: dict[str, Principals] = {}
    for key, entry in by_operation.items():
        if key.startswith("_") or not isinstance(entry, Mapping):
            continue
        operation = entry.get("operation", key)
        out[str(operation)] = _subjects(entry.get("restrictions"))
    return out


def space_grants(permissions: Any) -> dict[tuple[str, str], Principals]:
    """Parse space permissions: (operation, targetType) → the principals granted it."""
    if isinstance(permissions, Mapping):
        permissions = permissions.get("results", permissions.get("permissions"))
    if not isinstance(permissions, list):
        raise PermissionsUnreadable("space permissions are not a list")
    grants: dict[tuple[str, str], Principals] = {}
    for grant in permissions:
        if not isinstance(grant, Mapping) or not isinstance(grant.get("operation"), Mapping):
            raise PermissionsUnreadable("a space permission has no `operation` object")
        op = grant["operation"]
        key = (str(op.get("operation", op.get("key", ""))), str(op.get("targetType", "")))
        if "principal" in grant:  # Cloud v2 shape
            principal = grant["principal"] or {}
            kind, ident = principal.get("type"), principal.get("id")
            who = Principals()
            if kind == "user" and ident:
                who.users.add(str(ident))
            elif kind == "group" and ident:
                who.groups.add(str(ident))
        else:
            who = _subjects(grant.get("subjects"))
        grants[key] = grants.get(key, Principals()) | who
    return grants


def _intersect(sets: Iterable[Principals]) -> Principals:
    items = list(sets)
    result = items[0]
    for other in items[1:]:
        result = result & other
    return result


def permissions_data(
    restrictions: Mapping[str, Principals],
    grants: Mapping[tuple[str, str], Principals],
    ancestor_reads: Iterable[Principals] = (),
) -> list[dict[str, dict[str, list[str]]]]:
    """Apply the module's rules; returns SPEC.md's `permissions_data` array."""
    empty = Principals()
    page_read = restrictions.get("read", empty)
    page_update = restrictions.get("update", empty)
    admins = grants.get(("administer", "space"), empty)
    space_read = grants.get(("read", "space"), empty) | admins
    space_edit = grants.get(("create", "page"), empty) | admins
    space_delete = grants.get(("delete", "page"), empty)

    chain = [page_read | page_update] if page_read else []
    chain += [p for p in ancestor_reads if p]
    read = _intersect(chain) if chain else space_read | page_update
    update = (page_update if page_update else space_edit) & read
    delete = space_delete & read
    if page_update:
        delete = delete & update
    by_op = {"read": read, "update": update, "delete": delete}
    return [{op: by_op[op].as_dict()} for op in OPERATIONS]


class PermissionsReader:
    """`permissions_data` of a wiki's pages (`__call__`), from its space's grants and the read
    restrictions of the page and its ancestors, each read from the wiki once. `client()` gives
    the wiki's client; `describe` says a failure in words."""

    def __init__(self, client: Callable[[], Any], describe: Callable[[BaseException], str]) -> None:
        self._client = client
        self._describe = describe
        self._grants: dict[str, dict[tuple[str, str], Principals] | str] = {}
        self._ancestor_reads: dict[str, Principals] = {}

    def __call__(
        self, space_key: str, page: dict[str, Any]
    ) -> tuple[list[dict[str, Any]] | None, str | None]:
        """`permissions_data` for a page, or None and the reason they could not be read."""
        if space_key not in self._grants:
            try:
                permissions = self._client().get_all_space_permissions(space_key)
                self._grants[space_key] = space_grants(permissions)
            except Exception as exc:
                self._grants[space_key] = self._describe(exc)
        grants = self._grants[space_key]
        lead = "permissions_data left out: could not read"
        if isinstance(grants, str):
            return None, f"{lead} the permissions of space {space_key} ({grants})"
        page_id = str(page["id"])
        try:
            restrictions = self._client().get_all_restrictions_for_content(page_id)
            parsed = page_restrictions(restrictions)
            self._ancestor_reads[page_id] = parsed.get("read", Principals())
            ancestors = [
                self._ancestor_read(str(a.get("id")))
                for a in page.get("ancestors") or []
                if isinstance(a, dict)
            ]
        except Exception as exc:
            return None, f"{lead} the restrictions of page {page_id} ({self._describe(exc)})"
        return permissions_data(parsed, grants, ancestors), None

    def _ancestor_read(self, page_id: str) -> Principals:
        if page_id not in self._ancestor_reads:
            body = self._client().get_all_restrictions_for_content(page_id)
            read = page_restrictions(body).get("read", Principals())
            self._ancestor_reads[page_id] = read
        return self._ancestor_reads[page_id]
