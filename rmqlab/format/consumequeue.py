"""ConsumeQueue entry layout (spec section 2).

Java: ``org.apache.rocketmq.store.ConsumeQueue`` (``CQ_STORE_UNIT_SIZE`` = 20).

One entry per message of a logical queue; entry n lives at byte n×20 counted
across the queue's files::

    ┌──────────────────────────┬──────────────┬──────────────────────────┐
    │ commitLogOffset  int64   │ size  int32  │ tagsCode  int64          │
    └──────────────────────────┴──────────────┴──────────────────────────┘

``tagsCode`` is Java ``String.hashCode()`` of TAGS (0 without tags), or the delivery
time in ms for ``SCHEDULE_TOPIC_XXXX``.  An entry is valid when ``offset >= 0 and
size > 0``; a queue whose first file starts at a non-zero offset is pre-filled with
``(0, 0x7FFFFFFF, 0)`` (Java ``ConsumeQueue.fillPreBlank``).
"""

from __future__ import annotations

from construct import Int32sb, Int64sb, Struct

CQ_STORE_UNIT_SIZE = 20  # Java ConsumeQueue.CQ_STORE_UNIT_SIZE
DEFAULT_MAPPED_FILE_SIZE_CONSUME_QUEUE = 300_000 * CQ_STORE_UNIT_SIZE
PRE_BLANK_SIZE = 0x7FFFFFFF  # Integer.MAX_VALUE in fillPreBlank

ConsumeQueueEntry = Struct(
    "commitlog_offset" / Int64sb * "Java offset: physical offset of the record",
    "size" / Int32sb * "Java size: the record's totalSize",
    "tags_code" / Int64sb * "Java tagsCode: hash of TAGS, or delivery time for delayed messages",
)
assert ConsumeQueueEntry.sizeof() == CQ_STORE_UNIT_SIZE


def entry_is_valid(commitlog_offset: int, size: int) -> bool:
    """Java ``ConsumeQueue.recover``: an entry counts while ``offset >= 0 && size > 0``."""
    return commitlog_offset >= 0 and size > 0
