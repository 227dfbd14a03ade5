"""checkpoint file layout (spec section 4).

Java: ``org.apache.rocketmq.store.StoreCheckpoint``.  The file is 4096 bytes; the
fields sit at its start and the rest is zero::

    0  physicMsgTimestamp   int64   store time of the last flushed commitlog record
    8  logicsMsgTimestamp   int64   ... of the last flushed consume-queue entry
    16 indexMsgTimestamp    int64   ... of the last flushed index file
    24 masterFlushedOffset  int64   (5.0+)
    32 confirmPhyOffset     int64   (5.1.1+)
    40 logicsPhysicalOffset int64   (5.5+) commitlog offset of that consume-queue entry's
                                    record, where abnormal recovery starts

4.x writes only the first three, 5.0–5.4 the first five; an older file reads as a newer
one with zeros (the page is zero past what was written).  5.5 sets logicsMsgTimestamp
and logicsPhysicalOffset together, and only on a "thorough" consume-queue flush
(``flushConsumeQueueThoroughInterval``, 60 s) and the first flush after start: 5.3
set logicsMsgTimestamp on every dispatch (ConsumeQueue.putMessagePositionInfoWrapper).
"""

from __future__ import annotations

from construct import Int64sb, Struct

CHECKPOINT_FILE_SIZE = 4096  # Java OS_PAGE_SIZE mapping of StoreCheckpoint

CheckpointV4 = Struct(
    "physic_msg_timestamp" / Int64sb * "Java physicMsgTimestamp",
    "logics_msg_timestamp" / Int64sb * "Java logicsMsgTimestamp",
    "index_msg_timestamp" / Int64sb * "Java indexMsgTimestamp",
)

CheckpointV5 = Struct(
    "physic_msg_timestamp" / Int64sb * "Java physicMsgTimestamp",
    "logics_msg_timestamp" / Int64sb * "Java logicsMsgTimestamp",
    "index_msg_timestamp" / Int64sb * "Java indexMsgTimestamp",
    "master_flushed_offset" / Int64sb * "Java masterFlushedOffset: (5.0+)",
    "confirm_phy_offset" / Int64sb * "Java confirmPhyOffset: (5.1.1+)",
    "logics_physical_offset" / Int64sb * "Java logicsPhysicalOffset: (5.5+; 0 before)",
)

#: the fields' names in file order (the writer, the readers and diff all go by it)
FIELDS = tuple(sub.name for sub in CheckpointV5.subcons)


def zero_checkpoint() -> dict[str, int]:
    """What Java reads from a missing checkpoint file: every field 0."""
    return dict.fromkeys(FIELDS, 0)


#: Java ``StoreCheckpoint.getMinTimestamp``: 3 s of slack for clock jitter.
MIN_TIMESTAMP_SLACK_MS = 3000


def min_timestamp(physic_msg_timestamp: int, logics_msg_timestamp: int) -> int:
    """Java ``getMinTimestamp``: ``max(0, min(physic, logics) - 3000)``."""
    return max(0, min(physic_msg_timestamp, logics_msg_timestamp) - MIN_TIMESTAMP_SLACK_MS)


def min_timestamp_index(physic_msg_timestamp: int, logics_msg_timestamp: int, index_msg_timestamp: int) -> int:
    """Java ``getMinTimestampIndex``: ``min(getMinTimestamp(), indexMsgTimestamp)`` (what
    abnormal recovery compares with when ``messageIndexSafe`` is on)."""
    return min(min_timestamp(physic_msg_timestamp, logics_msg_timestamp), index_msg_timestamp)
