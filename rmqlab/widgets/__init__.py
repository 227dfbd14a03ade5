"""Reusable ipywidgets for the lessons (JupyterLab): each is a ``VBox`` whose state
lives in ordinary widget traits, so it works live in a notebook and can be driven
headlessly in tests (set ``.value``, call ``.click()``, read ``.output.value``).

The widgets only arrange controls and call the layers below (store readers,
lookups, engine, recovery); what they show comes from :mod:`rmqlab.render.notebook`.

============================  ============================================================
:class:`HexViewer`            a file's bytes, every field coloured and named
:class:`StoreBrowser`         summary, files, records of a store
:class:`QueueExplorer`        consume a queue by offset, filter by tag, search by time
:class:`ChainExplorer`        walk a key's hash chain across index files
:class:`WriteForm`            put a message into a scratch store, dispatch it by hand
:class:`CrashLab`             write, crash, recover; see what survived and why
:class:`LiveStoreWatcher`     a store being written: records landing, queues, index and flush catching up
:class:`StoreMapViewer`       the store map to point at: a pixel's record, its bytes, one file zoomed
============================  ============================================================
"""

from __future__ import annotations

from ..errors import require_extra

require_extra(("ipywidgets", "anywidget"), "notebook", "rmqlab.widgets")

from .base import scratch_dir  # noqa: E402
from .browser import StoreBrowser  # noqa: E402
from .chain import ChainExplorer  # noqa: E402
from .hexview import HexViewer  # noqa: E402
from .queues import QueueExplorer  # noqa: E402
from .storemap import StoreMapViewer  # noqa: E402

__all__ = ["HexViewer", "StoreBrowser", "QueueExplorer", "ChainExplorer", "StoreMapViewer", "scratch_dir"]  # + WriteForm, CrashLab, LiveStoreWatcher (lazy)


def __getattr__(name):
    # the engine/recovery widgets import the engine lazily: the read-side ones must
    # work even where only the read side is installed
    if name == "WriteForm":
        from .write import WriteForm

        return WriteForm
    if name == "CrashLab":
        from .crashlab import CrashLab

        return CrashLab
    if name == "LiveStoreWatcher":
        from .live import LiveStoreWatcher

        return LiveStoreWatcher
    raise AttributeError(name)
