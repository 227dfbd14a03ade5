"""Turning values into human text and HTML (used by the CLI, notebooks and widgets)."""
