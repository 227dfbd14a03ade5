"""Layer 1 — byte layouts.  The construct schemas here are the single source of truth
for every on-disk structure; codecs (properties, hashes, msgId) are pure functions."""

from .checkpoint import CheckpointV4, CheckpointV5
from .commitlog import BlankRecord, MessageRecord, RecordHeader
from .consumequeue import ConsumeQueueEntry
from .indexfile import IndexEntry, IndexHeader

__all__ = [
    "BlankRecord",
    "CheckpointV4",
    "CheckpointV5",
    "ConsumeQueueEntry",
    "IndexEntry",
    "IndexHeader",
    "MessageRecord",
    "RecordHeader",
]
