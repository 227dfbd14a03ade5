"""RocksDB consume-queue keys and values (``storeType=defaultRocksDB``, or
``rocksdbCQDoubleWriteEnable`` beside the file queues).

Java: ``org.apache.rocketmq.store.queue.RocksDBConsumeQueueTable`` (the ``default``
column family: one key per unit) and ``RocksDBConsumeQueueOffsetTable`` (the
``offset`` column family: each queue's min and max), in the RocksDB instance at
``StorePathConfigHelper.getStorePathConsumeQueue`` — the store's ``consumequeue/``
(``RocksDBConsumeQueueStore``; ``ConsumeQueueRocksDBStorage`` opens both families).
Every integer is big-endian (Java ``ByteBuffer``).

A unit (``default`` family)::

    key   ┌──────────┬──────┬───────┬──────┬─────────┬──────┬─────────────┐
          │ topicLen │ 0x01 │ topic │ 0x01 │ queueId │ 0x01 │ queueOffset │
          │ int32    │      │ UTF-8 │      │ int32   │      │ int64       │
          └──────────┴──────┴───────┴──────┴─────────┴──────┴─────────────┘
    value ┌──────────────────┬────────────┬────────────┬────────────────┐
          │ commitLogOffset  │ size int32 │ tagsCode   │ msgStoreTime   │
          │ int64            │            │ int64      │ int64          │
          └──────────────────┴────────────┴────────────┴────────────────┘

A queue's min or max (``offset`` family)::

    key   ┌──────────┬──────┬───────┬──────┬──────────────┬──────┬─────────┐
          │ topicLen │ 0x01 │ topic │ 0x01 │ "max"/"min"  │ 0x01 │ queueId │
          └──────────┴──────┴───────┴──────┴──────────────┴──────┴─────────┘
    value ┌──────────────────┬──────────────┐
          │ commitLogOffset  │ queueOffset  │   (the unit at the max / min)
          └──────────────────┴──────────────┘

and one more key in that family, ``CHECKPOINT_TOPIC``'s max of queue 0, whose 8-byte
value is the commitlog offset dispatch has written into RocksDB up to
(``RocksDBConsumeQueueOffsetTable.appendMaxPhyOffset``; recovery re-dispatches from it).

Because keys sort bytewise and queue offsets are non-negative, one queue's units are
one contiguous key range in queue order: the prefix up to the last ``0x01``.
"""

from __future__ import annotations

import numpy as np
from construct import ConstructError, Bytes, Const, Int8ub, Int32sb, Int64sb, Rebuild, Struct, len_, this

from .layout import fixed_dtype

#: Java RocksDBConsumeQueueStore.CTRL_1: the separator between a key's parts
CTRL_1 = 1
#: Java RocksDBConsumeQueueOffsetTable.MAX_BYTES / MIN_BYTES
MAX_BYTES = b"max"
MIN_BYTES = b"min"
#: Java TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC: the key holding dispatch's progress
CHECKPOINT_TOPIC = "CHECKPOINT_TOPIC"
#: Java ConsumeQueueRocksDBStorage.OFFSET_COLUMN_FAMILY
OFFSET_COLUMN_FAMILY = "offset"

#: Java RocksDBConsumeQueueTable.buildCQKeyByteBuffer0
RocksDBCqKey = Struct(
    "len_topic" / Rebuild(Int32sb, len_(this.topic)) * "Java topicBytes.length",
    Const(CTRL_1, Int8ub),
    "topic" / Bytes(this.len_topic) * "Java topicBytes: the topic in UTF-8",
    Const(CTRL_1, Int8ub),
    "queue_id" / Int32sb * "Java queueId",
    Const(CTRL_1, Int8ub),
    "queue_offset" / Int64sb * "Java cqOffset: the unit's queue offset",
)

#: Java RocksDBConsumeQueueTable.buildCQValueByteBuffer0 (CQ_UNIT_SIZE = 28)
RocksDBCqValue = Struct(
    "commitlog_offset" / Int64sb * "Java phyOffset",
    "size" / Int32sb * "Java msgSize",
    "tags_code" / Int64sb * "Java tagsCode",
    "store_timestamp" / Int64sb * "Java storeTimestamp",
)
CQ_UNIT_SIZE = 28
assert RocksDBCqValue.sizeof() == CQ_UNIT_SIZE
#: numpy view of a run of values (commitlog_offset, size, tags_code, store_timestamp)
CQ_VALUE_DTYPE = fixed_dtype(RocksDBCqValue)
assert CQ_VALUE_DTYPE.itemsize == CQ_UNIT_SIZE

#: Java RocksDBConsumeQueueOffsetTable.buildOffsetKeyByteBuffer0
RocksDBOffsetKey = Struct(
    "len_topic" / Rebuild(Int32sb, len_(this.topic)) * "Java topicBytes.length",
    Const(CTRL_1, Int8ub),
    "topic" / Bytes(this.len_topic) * "Java topicBytes: the topic in UTF-8",
    Const(CTRL_1, Int8ub),
    "which" / Bytes(3) * "Java MAX_BYTES / MIN_BYTES: b'max' or b'min'",
    Const(CTRL_1, Int8ub),
    "queue_id" / Int32sb * "Java queueId",
)

#: Java RocksDBConsumeQueueOffsetTable: the unit at a queue's max (or min)
RocksDBOffsetValue = Struct(
    "commitlog_offset" / Int64sb * "Java OFFSET_PHY_OFFSET: the unit's commitlog offset",
    "queue_offset" / Int64sb * "Java OFFSET_CQ_OFFSET: the unit's queue offset",
)
OFFSET_VALUE_SIZE = 16
assert RocksDBOffsetValue.sizeof() == OFFSET_VALUE_SIZE



def cq_key(topic: str, queue_id: int, queue_offset: int) -> bytes:
    """Java ``RocksDBConsumeQueueTable.buildCQKeyByteBuffer``: the key of one unit."""
    return RocksDBCqKey.build(dict(topic=topic.encode("utf-8"), queue_id=queue_id, queue_offset=queue_offset))


def queue_prefix(topic: str, queue_id: int) -> bytes:
    """The bytes every unit key of (topic, queue) starts with: all but the offset."""
    return cq_key(topic, queue_id, 0)[:-8]


def offset_key(topic: str, queue_id: int, maximum: bool) -> bytes:
    """Java ``RocksDBConsumeQueueOffsetTable.buildOffsetKeyByteBuffer``."""
    return RocksDBOffsetKey.build(dict(topic=topic.encode("utf-8"), which=MAX_BYTES if maximum else MIN_BYTES, queue_id=queue_id))


#: the key of dispatch's progress (Java INNER_CHECKPOINT_TOPIC: CHECKPOINT_TOPIC's max of queue 0)
CHECKPOINT_KEY = offset_key(CHECKPOINT_TOPIC, 0, True)


def parse_offset_key(key: bytes) -> tuple[str, str, int] | None:
    """``(topic, "max"/"min", queueId)`` of an ``offset`` family key, or None when it
    is not one (Java ``RocksDBConsumeQueueOffsetTable.forEach`` skips such keys)."""
    try:
        k = RocksDBOffsetKey.parse(key)
        if k.which not in (MAX_BYTES, MIN_BYTES) or len(offset_key(k.topic.decode("utf-8"), k.queue_id, True)) != len(key):
            return None
        return k.topic.decode("utf-8"), k.which.decode(), k.queue_id
    except (ConstructError, UnicodeDecodeError):
        return None


def parse_cq_key(key: bytes) -> tuple[str, int, int] | None:
    """``(topic, queueId, queueOffset)`` of a unit key, or None when it is not one."""
    try:
        k = RocksDBCqKey.parse(key)
        if len(cq_key(k.topic.decode("utf-8"), k.queue_id, k.queue_offset)) != len(key):
            return None
        return k.topic.decode("utf-8"), k.queue_id, k.queue_offset
    except (ConstructError, UnicodeDecodeError):
        return None


def key_offsets(keys: list[bytes]) -> np.ndarray:
    """The queue offsets of a run of one queue's unit keys (their last 8 bytes)."""
    return np.frombuffer(b"".join(k[-8:] for k in keys), dtype=">i8").astype(np.int64)
