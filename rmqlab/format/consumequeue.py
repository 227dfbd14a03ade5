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

from construct import Bytes, Int16sb, Int32sb, Int64sb, Struct

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


# -- the batch consume queue (queue.type=BatchCQ) ----------------------------------------------------
#: Java BatchConsumeQueue.CQ_STORE_UNIT_SIZE
BCQ_STORE_UNIT_SIZE = 46
#: Java MessageStoreConfig.mapperFileSizeBatchConsumeQueue
DEFAULT_MAPPED_FILE_SIZE_BATCH_CONSUME_QUEUE = 300_000 * BCQ_STORE_UNIT_SIZE

#: Java BatchConsumeQueue (``putBatchMessagePositionInfo``): one unit per record of a
#: ``queue.type=BatchCQ`` topic in ``batchconsumequeue/<topic>/<queueId>/``; an inner
#: batch's unit covers its INNER_NUM messages, from queue offset ``msg_base_offset``::
#:
#:     ┌────────────┬──────┬──────────┬───────────┬───────────────┬───────────┬─────────────────┬──────────┐
#:     │ offset i64 │ size │ tagsCode │ storeTime │ msgBaseOffset │ batchSize │ compactedOffset │ reserved │
#:     │            │ i32  │ i64      │ i64       │ i64           │ i16       │ i32 (-1)        │ i32 (0)  │
#:     └────────────┴──────┴──────────┴───────────┴───────────────┴───────────┴─────────────────┴──────────┘
BatchConsumeQueueUnit = Struct(
    "commitlog_offset" / Int64sb * "Java offset: physical offset of the record",
    "size" / Int32sb * "Java size: the record's totalSize",
    "tags_code" / Int64sb * "Java tagsCode",
    "store_timestamp" / Int64sb * "Java storeTime: the record's store timestamp",
    "msg_base_offset" / Int64sb * "Java msgBaseOffset: the queue offset of the unit's first message",
    "batch_size" / Int16sb * "Java batchSize: how many messages (queue offsets) the unit covers",
    "compacted_offset" / Int32sb * "Java compactedOffset: INVALID_POS (-1) as written",
    "reserved" / Int32sb * "Java: 4 reserved bytes (0)",
)
assert BatchConsumeQueueUnit.sizeof() == BCQ_STORE_UNIT_SIZE


def batch_unit_is_valid(commitlog_offset, size, msg_base_offset, batch_size):
    """Java ``BatchConsumeQueue.recover``: a unit counts while ``offset >= 0 && size > 0
    && msgBaseOffset >= 0 && batchSize > 0`` (ints or numpy arrays)."""
    return (commitlog_offset >= 0) & (size > 0) & (msg_base_offset >= 0) & (batch_size > 0)


# -- the ext file (enableConsumeQueueExt) ----------------------------------------------------------
#: Java ConsumeQueueExt.MAX_ADDR: a tagsCode at or below it is an ext address, not a tags hash
EXT_MAX_ADDR = -(1 << 31) - 1
_LONG_MIN = -(1 << 63)
EXT_END_BLANK_DATA_LENGTH = 4  # Java ConsumeQueueExt.END_BLANK_DATA_LENGTH (a short -1 ends a file)
DEFAULT_MAPPED_FILE_SIZE_CONSUME_QUEUE_EXT = 48 * 1024 * 1024  # Java MessageStoreConfig.mappedFileSizeConsumeQueueExt

#: Java ConsumeQueueExt.CqExtUnit (``write``): one unit per message of a queue whose
#: tagsCode holds the unit's address (``ConsumeQueueExt.decorate``: offset + Long.MIN_VALUE)
CqExtUnit = Struct(
    "size" / Int16sb * "Java size: the whole unit (20 + bitMapSize); 0 or -1 ends the file's units",
    "tags_code" / Int64sb * "Java tagsCode: the hash of TAGS the consume queue would have held",
    "msg_store_time" / Int64sb * "Java msgStoreTime: the record's store timestamp",
    "bit_map_size" / Int16sb * "Java bitMapSize: bytes of the filter bitmap",
    "filter_bit_map" / Bytes(lambda ctx: max(0, ctx.bit_map_size)) * "Java filterBitMap: the consumer filter's bloom bits",
)
EXT_UNIT_MIN_SIZE = 2 + 8 + 8 + 2  # Java CqExtUnit.MIN_EXT_UNIT_SIZE


def is_ext_addr(tags_code: int) -> bool:
    """Java ``ConsumeQueueExt.isExtAddr``."""
    return tags_code <= EXT_MAX_ADDR


def ext_offset(address: int) -> int:
    """Java ``ConsumeQueueExt.unDecorate``: the ext address as an offset in the ext files."""
    return address - _LONG_MIN if is_ext_addr(address) else address


def ext_offsets(addresses):
    """:func:`ext_offset` of an array of ext addresses (int64 arithmetic wraps as Java's does)."""
    import numpy as np

    return np.asarray(addresses, np.int64) - np.int64(_LONG_MIN)


def ext_tags_at(data, positions):
    """(tagsCode, a unit is there) of the ext units at in-file ``positions`` of one ext
    file's bytes ``data`` (uint8; every position + 20 inside it): a unit is there when its
    size is at least :data:`EXT_UNIT_MIN_SIZE` (``CqExtUnit.read``)."""
    import numpy as np

    pos = np.asarray(positions, np.int64)
    size = (data[pos].astype(np.int16) << 8 | data[pos + 1]).astype(np.int16)
    code = np.zeros(len(pos), np.int64)
    for k in range(8):  # big-endian int64 after the size
        code = (code << 8) | data[pos + 2 + k].astype(np.int64)
    return code, size >= EXT_UNIT_MIN_SIZE
