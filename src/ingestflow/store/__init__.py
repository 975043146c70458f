"""The workspace store: one SQLite file (schema migrations in `db.py`) plus per-node output files.

It sits below the runner and the service: it knows records and rows, not rules.
"""

from ingestflow.store.db import connect_db, now
from ingestflow.store.job_rows import FileResult, NodeStats
from ingestflow.store.jobs import Workspace, open_workspace

__all__ = ["FileResult", "NodeStats", "Workspace", "connect_db", "now", "open_workspace"]
