"""rmqlab's version: what the installed package's metadata says (``pyproject.toml``
owns the number; a source tree that was never installed has none)."""

from __future__ import annotations

#: where the documentation lives: the one address the package's metadata, ``--help``
#: and the errors that send a user to read something name
DOCS_URL = "https://rmqlab.readthedocs.io/en/latest/"


#: where the source lives (the site links the tests and scripts behind a claim there)
SOURCE_URL = "https://github.com/rmqlab/rmqlab"


def docs_url(page: str = "") -> str:
    """The address of a page of the documentation (``"reference/cli.html#rmqlab-dump"``)."""
    return DOCS_URL + page


def version() -> str:
    import importlib.metadata  # here, not above: ~30 ms that a command not asked its version never pays

    try:
        return importlib.metadata.version("rmqlab")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"
