"""What every rmqlab widget shares: an HTML output and errors shown, not raised."""

from __future__ import annotations

import html
import itertools
import os
import shutil
import tempfile
from pathlib import Path

import ipywidgets as widgets

from ..errors import RmqlabError
from ..store.reader import StoreReader, open_store


class Panel(widgets.VBox):
    """A ``VBox`` of controls above one ``HTML`` output (:attr:`output`).

    A store error (damaged bytes, a missing file) becomes a red line in the output
    naming the file and offset: in a lesson the reader should see what is wrong with
    the store, not a traceback from the widget.
    """

    def __init__(self, controls: list, **kwargs):
        self.output = widgets.HTML()
        self.error: str | None = None
        super().__init__(children=[*controls, self.output], **kwargs)

    def show(self, content: str) -> None:
        self.error = None
        self.output.value = content

    def show_error(self, err: Exception) -> None:
        self.error = str(err)
        self.output.value = f"<div style='color:#c62828'><b>{type(err).__name__}</b>: {html.escape(str(err))}</div>"

    def guarded(self, fn, *args, **kwargs):
        """Run ``fn``; a store error is shown in the output and ``None`` returned."""
        try:
            return fn(*args, **kwargs)
        except (RmqlabError, OSError, ValueError) as err:
            self.show_error(err)
            return None


def as_store(store: StoreReader | str | os.PathLike) -> StoreReader:
    """A path opens the store read-only (non-strict: a damaged store still opens)."""
    if isinstance(store, StoreReader):
        return store
    return open_store(Path(store), strict=False)


def topics_of(store: StoreReader) -> list[str]:
    return sorted({q.topic for q in store.queue_ids()})


_COUNTER = itertools.count(1)


def scratch_dir(name: str, *, numbered: bool = False) -> Path:
    """An empty directory for a lesson's scratch data, at a fixed place
    (``$TMPDIR/rmqlab-lessons-<uid>/<name>``), emptied first.

    Fixed places keep repeated lesson runs (and killed kernels, whose exit handlers
    never run) from piling up temporary stores; ``numbered`` appends a per-process
    counter so that two widgets of one kernel do not share a store.
    """
    uid = os.getuid() if hasattr(os, "getuid") else 0
    base = Path(tempfile.gettempdir()) / f"rmqlab-lessons-{uid}"
    d = base / (f"{name}-{next(_COUNTER)}" if numbered else name)
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d
