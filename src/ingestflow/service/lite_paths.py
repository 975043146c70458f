"""Where a vectordb destination's Milvus Lite path may point, and what a relative one means.

The CLI is a user on their own machine: any Lite path is theirs to choose, and a relative one
resolves against the current directory (`LitePaths()`). The API server is reached by others, so
a config must not make it open (or create) a database anywhere it can write: there a relative
Lite path resolves against the workspace, and the resolved path (symlinks followed) must lie in
the workspace or in a folder `ingestflow serve --allow-dir DIR` named (`LitePaths.served`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestflow.connectors.registry import local_file
from ingestflow.spec.problems import Problem


@dataclass(frozen=True)
class LitePaths:
    """The rule for Lite paths: `base` for relative ones (None: the current directory) and the
    folders they may lie in (None: anywhere)."""

    base: Path | None = None
    allowed: tuple[Path, ...] | None = None

    @classmethod
    def served(cls, workspace: Path, allow_dirs: Iterable[Path] = ()) -> LitePaths:
        """The API server's rule: relative to the workspace, inside it or an allowed folder."""
        root = Path(workspace).expanduser().resolve()
        return cls(root, (root, *(Path(d).expanduser().resolve() for d in allow_dirs)))

    @property
    def allow_dirs(self) -> list[Path]:
        """The allowed folders besides the base (what `serve --allow-dir` gave)."""
        return [d for d in self.allowed or () if d != self.base]

    def problem(self, config: Any) -> Problem | None:
        """Why `config`'s Lite path is refused here, or None (not Lite, or allowed)."""
        uri = _lite_uri(config)
        if uri is None or self.allowed is None:
            return None
        where = self._absolute(uri).resolve()
        if any(where.is_relative_to(folder) for folder in self.allowed):
            return None
        return Problem(
            "config.uri",
            "this Milvus Lite path lies outside the folders the API server may open: its "
            "workspace, and folders given with `ingestflow serve --allow-dir DIR`",
            found=uri,  # as given: the server's own folders stay out of answers
            hint="use a relative path such as `milvus.db` (it resolves inside the workspace), "
            "or start the server with `--allow-dir` naming the database's folder",
        )

    def options(self, config: Any) -> dict[str, Any]:
        """What building or checking `config`'s connector takes to follow this rule."""
        if _lite_uri(config) is None or self.base is None:
            return {}
        return {"lite_root": self.base}

    def _absolute(self, uri: str) -> Path:
        path = Path(uri.strip()).expanduser()
        return path if path.is_absolute() else (self.base or Path.cwd()) / path


def _lite_uri(config: Any) -> str | None:
    """The Milvus Lite path a parsed connector config names, if it names one (what its type
    declares: `ConnectorType.local_file`)."""
    return local_file(config)
