"""Loopback fake servers for tests (a Confluence wiki; model providers)."""
