"""rmqlab's version: what the installed package's metadata says (``pyproject.toml``
owns the number; a source tree that was never installed has none)."""

from __future__ import annotations

import importlib.metadata


def version() -> str:
    try:
        return importlib.metadata.version("rmqlab")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"
