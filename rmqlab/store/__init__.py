"""Reading a store: open a store root read-only and read its parts.

What to call first is :func:`rmqlab.open_store`: the store as its next start serves it
(the log ends where the recovery plan ends it).  Its :class:`StoreReader` holds the
parts — ``commitlog`` (:class:`CommitLog`), ``consume_queue(topic, queue_id)``
(:class:`ConsumeQueue`), ``index`` (:class:`IndexService`), ``checkpoint()`` — and
:mod:`rmqlab.lookup` answers questions over them:

>>> from rmqlab import open_store, lookup
>>> from rmqlab.lab.samples import shipped_dir
>>> with open_store(shipped_dir() / "clean") as store:
...     cq = store.consume_queue("Orders", 1)
...     entry = cq.get(0)                                  # unit 0 of Orders/1
...     record = store.commitlog.read(entry.commitlog_offset)
...     print(entry.commitlog_offset, entry.size, record.topic, record.keys)
0 255 Orders order-1 cust-1

In the layers (:mod:`rmqlab`), this package sits above the byte layouts
(:mod:`rmqlab.format`) and the mapped files (:mod:`rmqlab.files`); the write side is
:mod:`rmqlab.writers` and :mod:`rmqlab.engine`.
"""

from .checkpoint import Checkpoint, read_checkpoint
from .commitlog import CommitLog
from .consume_queue import ConsumeQueue, CqEntry
from .index_file import IndexFile, IndexService
from .reader import StoreReader, open_store

__all__ = ["Checkpoint", "CommitLog", "ConsumeQueue", "CqEntry", "IndexFile", "IndexService", "StoreReader", "open_store", "read_checkpoint"]
