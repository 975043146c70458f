"""ingestflow."""
