"""Keys, timers and transactions in RocksDB (RocketMQ 5.4+): the keys and values of
``rocksdbstore/``.

Java: ``org.apache.rocketmq.store.rocksdb.MessageRocksDBStorage`` opens one RocksDB
instance in ``storePathRootDir/rocksdbstore`` (``ROCKSDB_MESSAGE_DIRECTORY``) with three
column families, one per store that writes into it:

* ``default`` — ``IndexRocksDBStore`` (``indexRocksDBEnable``): one key per (record, index
  type), ``IndexRocksDBRecord.getKeyBytes``::

      ┌────────────────┬───────────────────────────────────────────┬──────────┐
      │ storeTimeHour  │ "@topic@K@key@uniqKey@"  (a KEYS token)     │ offsetPy │
      │ int64          │ "@topic@T@tags@uniqKey@" (the TAGS)        │ int64    │
      │                │ "@topic@U@uniqKey@"      (the UNIQ_KEY)    │          │
      └────────────────┴───────────────────────────────────────────┴──────────┘

  value: ``storeTime`` (int64).  ``storeTimeHour`` is the store time cut to its hour
  (``MixAll.dealTimeToHourStamps``), so keys sort by hour, then topic, type and key: a
  lookup seeks ``hour + "@topic@type@key@"`` once per hour of its window
  (``MessageRocksDBStorage.queryOffsetForIndex``).  Two more keys hold the writer's
  progress: ``lastOffsetPy`` and ``lastStoreTimeStamp`` (int64 values;
  ``writeRecordsForIndex`` moves them when a batch ends on a record's UNIQ_KEY entry).
* ``trans`` — ``TransMessageRocksDBStore`` (``transRocksDBEnable``): one key per
  transaction half message not yet ended, ``TransRocksDBRecord.getKeyBytes``::

      ┌──────────┬──────────────────────────┐      value ┌────────────┬────────┐
      │ offsetPy │ "@realTopic@transactionId" │            │ checkTimes │ sizePy │
      │ int64    │                          │            │ int32      │ int32  │
      └──────────┴──────────────────────────┘            └────────────┴────────┘

  An op message (``RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC``, ``TRANS_OFFSET`` = the half's
  offset) deletes its half's key; ``lastOffsetPy`` is the newest half written.
* ``timer`` — ``TimerMessageRocksDBStore`` (``timerRocksDBEnable``): one key per pending
  timer message, ``TimerRocksDBRecord.getKeyBytes``: ``delayTime`` (int64, the delivery
  time) + the UNIQ_KEY; value ``sizePy`` (int32) + ``offsetPy`` (int64).  Two
  checkpoint keys (int64 values): ``sys_topic_scan_offset_checkpoint`` (the timer
  topic's queue offset scanned up to) and ``timeline_checkpoint``.

Every integer is big-endian (Java ``ByteBuffer``); strings are UTF-8.
"""

from __future__ import annotations

from dataclasses import dataclass

from construct import Bytes, GreedyBytes, Int32sb, Int64sb, Struct

#: Java MessageRocksDBStorage.ROCKSDB_MESSAGE_DIRECTORY lives in rules (MESSAGE_ROCKSDB_DIR)
#: Java MessageRocksDBStorage.TIMER_COLUMN_FAMILY / TRANS_COLUMN_FAMILY
TIMER_COLUMN_FAMILY = "timer"
TRANS_COLUMN_FAMILY = "trans"
#: Java MessageRocksDBStorage.LAST_OFFSET_PY / LAST_STORE_TIMESTAMP
LAST_OFFSET_PY = b"lastOffsetPy"
LAST_STORE_TIMESTAMP = b"lastStoreTimeStamp"
#: Java MessageRocksDBStorage.SYS_TOPIC_SCAN_OFFSET_CHECK_POINT / TIMELINE_CHECK_POINT
SYS_TOPIC_SCAN_OFFSET_CHECK_POINT = b"sys_topic_scan_offset_checkpoint"
TIMELINE_CHECK_POINT = b"timeline_checkpoint"
#: Java IndexRocksDBRecord.KEY_SPLIT (and TransRocksDBRecord's)
KEY_SPLIT = "@"
#: Java MessageConst.INDEX_KEY_TYPE / INDEX_TAG_TYPE / INDEX_UNIQUE_TYPE
INDEX_KEY_TYPE, INDEX_TAG_TYPE, INDEX_UNIQUE_TYPE = "K", "T", "U"
INDEX_TYPES = (INDEX_KEY_TYPE, INDEX_TAG_TYPE, INDEX_UNIQUE_TYPE)
#: Java MixAll.MILLS_FOR_HOUR
MILLS_FOR_HOUR = 3_600_000

#: Java IndexRocksDBRecord.getKeyBytes: hour, the middle string, the record's offset
IndexRocksDBKey = Struct(
    "store_time_hour" / Int64sb * "Java MixAll.dealTimeToHourStamps(storeTime)",
    "middle" / Bytes(lambda ctx: ctx._params.key_len - 16) * "Java keyMiddleStr: @topic@type@[key@]uniqKey@ in UTF-8",
    "offset_py" / Int64sb * "Java offsetPy: the record's commitlog offset",
)
#: Java IndexRocksDBRecord.getValueBytes
IndexRocksDBValue = Struct("store_time" / Int64sb * "Java storeTime")
#: Java TransRocksDBRecord.getKeyBytes
TransRocksDBKey = Struct(
    "offset_py" / Int64sb * "Java offsetPy: the half message's commitlog offset",
    "suffix" / GreedyBytes * "Java keySuffixBytes: @realTopic@transactionId in UTF-8",
)
#: Java TransRocksDBRecord.getValueBytes (VALUE_LENGTH = 8)
TransRocksDBValue = Struct("check_times" / Int32sb * "Java checkTimes", "size_py" / Int32sb * "Java sizePy: the half message's size")
#: Java TimerRocksDBRecord.getKeyBytes
TimerRocksDBKey = Struct("delay_time" / Int64sb * "Java delayTime: when the message is due", "uniq_key" / GreedyBytes * "Java uniqKey (UTF-8)")
#: Java TimerRocksDBRecord.getValueBytes (VALUE_LENGTH = 12)
TimerRocksDBValue = Struct("size_py" / Int32sb * "Java sizePy", "offset_py" / Int64sb * "Java offsetPy")
INDEX_VALUE_SIZE, TRANS_VALUE_SIZE, TIMER_VALUE_SIZE = 8, 8, 12
assert (IndexRocksDBValue.sizeof(), TransRocksDBValue.sizeof(), TimerRocksDBValue.sizeof()) == (INDEX_VALUE_SIZE, TRANS_VALUE_SIZE, TIMER_VALUE_SIZE)


def deal_time_to_hour_stamps(timestamp: int) -> int:
    """Java ``MixAll.dealTimeToHourStamps``: a time cut to its hour (≤ 0 unchanged)."""
    return timestamp if timestamp <= 0 else timestamp // MILLS_FOR_HOUR * MILLS_FOR_HOUR


@dataclass(frozen=True)
class IndexEntry:
    """One key of the ``default`` family: ``index_type`` K (``key`` a KEYS token), T
    (``key`` the TAGS) or U (``key`` None: the UNIQ_KEY is the entry)."""

    store_time_hour: int
    topic: str
    index_type: str
    key: str | None
    uniq_key: str
    offset_py: int
    store_time: int


def index_middle(topic: str, index_type: str, key: str | None, uniq_key: str | None = None) -> bytes:
    """Java ``IndexRocksDBRecord.getKeyBytes``'s middle string.  Without ``uniq_key``, the
    prefix a lookup seeks (``queryOffsetForIndex``'s keyMiddleStr: ``@topic@type@key@``,
    where ``key`` is the UNIQ_KEY for type U)."""
    parts = [topic, index_type] + ([key] if key is not None else []) + ([uniq_key] if uniq_key is not None else [])
    return (KEY_SPLIT + KEY_SPLIT.join(parts) + KEY_SPLIT).encode("utf-8")


def index_seek_key(hour: int, topic: str, index_type: str, key: str) -> bytes:
    """The key ``queryOffsetForIndex`` seeks for one hour: every entry of (topic, type,
    key) in that hour starts with it."""
    return Int64sb.build(hour) + index_middle(topic, index_type, key)


def index_key(entry: IndexEntry) -> bytes:
    """Java ``IndexRocksDBRecord.getKeyBytes``."""
    middle = index_middle(entry.topic, entry.index_type, entry.key, entry.uniq_key)
    return IndexRocksDBKey.build(dict(store_time_hour=entry.store_time_hour, middle=middle, offset_py=entry.offset_py), key_len=16 + len(middle))


def parse_index_entry(key: bytes, value: bytes) -> IndexEntry | str:
    """An index key and value, or why they are not ``IndexRocksDBRecord``'s.  The UNIQ_KEY
    (hex, never ``@``) is the middle's last part and the topic its first (topics hold no
    ``@``: ``TopicValidator``), so a KEYS token or TAGS holding ``@`` still parses."""
    if len(key) < 16 + 2:
        return f"an index key of {len(key)} bytes: too short for hour, topic and offset"
    if len(value) != INDEX_VALUE_SIZE:
        return f"an index value of {len(value)} bytes (IndexRocksDBRecord writes 8: the store time)"
    k = IndexRocksDBKey.parse(key, key_len=len(key))
    try:
        middle = k.middle.decode("utf-8")
    except UnicodeDecodeError as err:
        return f"an index key whose middle is not UTF-8 (byte {8 + err.start})"
    if not (middle.startswith(KEY_SPLIT) and middle.endswith(KEY_SPLIT)):
        return "an index key whose middle does not start and end with '@'"
    topic, _, rest = middle[1:-1].partition(KEY_SPLIT)
    index_type, _, rest = rest.partition(KEY_SPLIT)
    if index_type not in INDEX_TYPES or not topic or not rest:
        return f"an index key of type {index_type!r} (K, T or U expected)"
    if index_type == INDEX_UNIQUE_TYPE:
        key_part, uniq = None, rest
    else:
        key_part, _, uniq = rest.rpartition(KEY_SPLIT)
        if not key_part:
            return f"an index key of type {index_type} without its {'KEYS token' if index_type == INDEX_KEY_TYPE else 'TAGS'}"
    store_time = IndexRocksDBValue.parse(value).store_time
    return IndexEntry(k.store_time_hour, topic, index_type, key_part, uniq, k.offset_py, store_time)


@dataclass(frozen=True)
class TransRecord:
    """One key of the ``trans`` family: a transaction half message not yet committed or
    rolled back (Java ``TransRocksDBRecord``)."""

    offset_py: int
    topic: str
    transaction_id: str
    check_times: int
    size_py: int


def parse_trans_record(key: bytes, value: bytes) -> TransRecord | str:
    """Java ``TransRocksDBRecord.decode``: the suffix splits on ``@`` into exactly three
    parts ("", real topic, transaction id); anything else it refuses (null)."""
    if len(key) <= 8 or len(value) != TRANS_VALUE_SIZE:
        return f"a transaction key of {len(key)} bytes / value of {len(value)} bytes (TransRocksDBRecord: > 8 and 8)"
    k = TransRocksDBKey.parse(key)
    try:
        parts = k.suffix.decode("utf-8").split(KEY_SPLIT)
    except UnicodeDecodeError as err:
        return f"a transaction key whose suffix is not UTF-8 (byte {8 + err.start})"
    # Java String.split drops trailing empty strings: "@t@" gives ["", "t"]
    while parts and parts[-1] == "":
        parts.pop()
    if len(parts) != 3:
        return f"a transaction key whose suffix splits into {len(parts)} part(s) on '@' (TransRocksDBRecord.decode wants 3)"
    v = TransRocksDBValue.parse(value)
    return TransRecord(k.offset_py, parts[1], parts[2], v.check_times, v.size_py)


@dataclass(frozen=True)
class TimerRecord:
    """One key of the ``timer`` family: a timer message waiting for ``delay_time``
    (Java ``TimerRocksDBRecord``)."""

    delay_time: int
    uniq_key: str
    size_py: int
    offset_py: int


def parse_timer_record(key: bytes, value: bytes) -> TimerRecord | str:
    """Java ``TimerRocksDBRecord.decode`` (a key of at least 8 bytes, a 12-byte value)."""
    if len(key) < 8 or len(value) != TIMER_VALUE_SIZE:
        return f"a timer key of {len(key)} bytes / value of {len(value)} bytes (TimerRocksDBRecord: ≥ 8 and 12)"
    k, v = TimerRocksDBKey.parse(key), TimerRocksDBValue.parse(value)
    return TimerRecord(k.delay_time, k.uniq_key.decode("utf-8", "replace"), v.size_py, v.offset_py)
