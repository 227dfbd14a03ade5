"""IndexFile layout (spec section 3).

Java: ``org.apache.rocketmq.store.index.IndexFile`` and ``IndexHeader``.

::

    ┌──────────── header, 40 bytes ─────────────┬─ slots ──────────────┬─ entries ─────────────────┐
    │ beginTimestamp endTimestamp  (int64 ×2)   │ maxHashSlotNum ×     │ maxIndexNum × 20 bytes     │
    │ beginPhyOffset endPhyOffset  (int64 ×2)   │ int32: newest entry  │ keyHash i32 | phyOffset i64│
    │ hashSlotCount indexCount     (int32 ×2)   │ number, 0 = empty    │ timeDiff i32 | prevIndex i32│
    └───────────────────────────────────────────┴──────────────────────┴────────────────────────────┘

``indexCount`` starts at 1: entry 0 is never used, so a chain ends at ``prevIndex``
0.  ``timeDiff`` is in seconds since ``beginTimestamp``.  A lookup compares hashes
only; the caller must read the record and compare the real key.
"""

from __future__ import annotations

from construct import Int32sb, Int64sb, Struct

INDEX_HEADER_SIZE = 40  # Java IndexHeader.INDEX_HEADER_SIZE
HASH_SLOT_SIZE = 4  # Java IndexFile.hashSlotSize
INDEX_ENTRY_SIZE = 20  # Java IndexFile.indexSize
DEFAULT_MAX_HASH_SLOT_NUM = 5_000_000
DEFAULT_MAX_INDEX_NUM = 5_000_000 * 4
INVALID_INDEX = 0  # Java IndexFile.invalidIndex

IndexHeader = Struct(
    "begin_timestamp" / Int64sb * "Java beginTimestamp: store time of the first entry",
    "end_timestamp" / Int64sb * "Java endTimestamp: store time of the last entry",
    "begin_phy_offset" / Int64sb * "Java beginPhyOffset",
    "end_phy_offset" / Int64sb * "Java endPhyOffset",
    "hash_slot_count" / Int32sb * "Java hashSlotCount: slots that went from empty to used",
    "index_count" / Int32sb * "Java indexCount: next entry number; starts at 1",
)
assert IndexHeader.sizeof() == INDEX_HEADER_SIZE

HashSlot = Int32sb  # newest entry number of the slot's chain

IndexEntry = Struct(
    "key_hash" / Int32sb * "Java keyHash: abs(hashCode(topic#key)), 0 on overflow",
    "phy_offset" / Int64sb * "Java phyOffset: the record's commitlog offset",
    "time_diff" / Int32sb * "Java timeDiff: seconds after beginTimestamp",
    "prev_index" / Int32sb * "Java prevIndex: previous entry of the same slot, 0 ends the chain",
)
assert IndexEntry.sizeof() == INDEX_ENTRY_SIZE


def index_file_size(max_hash_slot_num: int, max_index_num: int) -> int:
    """Java ``IndexService``: ``40 + slots*4 + entries*20``."""
    return INDEX_HEADER_SIZE + max_hash_slot_num * HASH_SLOT_SIZE + max_index_num * INDEX_ENTRY_SIZE


def slot_position(slot: int) -> int:
    """Byte offset of a hash slot in an index file."""
    return INDEX_HEADER_SIZE + slot * HASH_SLOT_SIZE


def entry_position(max_hash_slot_num: int, number: int) -> int:
    """Byte offset of entry ``number`` in an index file."""
    return INDEX_HEADER_SIZE + max_hash_slot_num * HASH_SLOT_SIZE + number * INDEX_ENTRY_SIZE


def index_key(topic: str, key: str) -> str:
    """Java ``IndexService.buildKey``: ``topic + "#" + key``."""
    return f"{topic}#{key}"


#: Java ``MessageConst.INDEX_TAG_TYPE`` (5.4+): the kind part of a tag's index key
INDEX_TAG_TYPE = "T"


def index_tag_key(topic: str, tags: str) -> str:
    """Java 5.4+ ``IndexService.buildKey(topic, tags, INDEX_TAG_TYPE)``: ``topic#T#tags``."""
    return f"{topic}#{INDEX_TAG_TYPE}#{tags}"
