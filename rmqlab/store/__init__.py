"""Layer 3 — store pieces, read side: CommitLog, ConsumeQueue, IndexFile, checkpoint,
and :class:`StoreReader`, which opens a store root read-only."""

from .checkpoint import Checkpoint, read_checkpoint
from .commitlog import CommitLog
from .consume_queue import ConsumeQueue, CqEntry
from .index_file import IndexFile, IndexService
from .reader import StoreReader, open_store

__all__ = ["Checkpoint", "CommitLog", "ConsumeQueue", "CqEntry", "IndexFile", "IndexService", "StoreReader", "open_store", "read_checkpoint"]
