"""Sources and destinations: local files, the wiki (Confluence), the vectordb (Milvus)."""

from ingestflow.connectors.check import ConnectionCheck, check_connector

__all__ = ["ConnectionCheck", "check_connector"]
