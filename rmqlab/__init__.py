"""rmqlab — Apache RocketMQ's on-disk message store, byte for byte, in Python.

Layers, bottom to top (data flows one way):

* :mod:`rmqlab.format`  — construct schemas and pure codecs (the single source of truth)
* :mod:`rmqlab.files`   — memory-mapped files and offset-named file queues
* :mod:`rmqlab.scan`    — passes over many records: acceptance, bulk decode, carving
* :mod:`rmqlab.store`   — CommitLog, ConsumeQueue, IndexFile, checkpoint; ``StoreReader``
* :mod:`rmqlab.lookup`  — by queue offset, key, time, msgId
* :mod:`rmqlab.writers` — each file kind's writer, and dispatch (reput)
* :mod:`rmqlab.recovery` — start-up recovery as RocketMQ does it; where the next start
  ends the log (``next_start``) and why it cuts (``cause``)
* :mod:`rmqlab.forensics` — hex views, verify, salvage, diff, judged against the next start
* :mod:`rmqlab.engine`  — the write path: put, flush, clean, start
* :mod:`rmqlab.cli`, :mod:`rmqlab.widgets`, :mod:`rmqlab.spark` — ways in

:func:`open_store` opens a store read-only as its next start serves it: the log ends
where the recovery plan ends it (:func:`rmqlab.recovery.next_start.log_end`).
"""

from . import reprs as _reprs
from .errors import RmqlabError, StoreFormatError, StoreLayoutError

_reprs.RENDERER = "rmqlab.render.views"  # the notebook views of every model, loaded when first shown

__all__ = ["MessageStoreConfig", "RmqlabError", "StoreFormatError", "StoreLayoutError", "StoreReader", "open_store"]

#: what ``rmqlab.NAME`` is, imported when first asked for (PEP 562): ``import rmqlab``
#: (and so every command's start, ``rmqlab --help`` among them) loads no numpy, numba,
#: construct or pyarrow until a command needs them
_LAZY = {
    "MessageStoreConfig": ("rmqlab.config", "MessageStoreConfig"),
    "StoreReader": ("rmqlab.store.reader", "StoreReader"),
    "open_store": ("rmqlab.recovery.next_start", "open_served"),
}


def __getattr__(name: str):
    if name == "__version__":
        from .version import version

        return version()
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rmqlab' has no attribute {name!r}")
