"""The timer store's layouts (RocketMQ 5.x, ``timerWheelEnable=true`` by default).

A timer message (``TIMER_DELIVER_MS`` / ``TIMER_DELAY_SEC`` …) is rewritten by the broker
to the topic ``rmq_sys_wheel_timer`` queue 0 with ``TIMER_OUT_MS`` (when it is due),
``REAL_TOPIC`` and ``REAL_QID``.  ``TimerMessageStore`` then reads that queue and writes
one unit per message to the timer log, chained per second into the timer wheel; when a
slot's time comes it puts each message back to its real topic.  Three files:

``timerwheel`` (Java ``TimerWheel``, ``Slot``): 2 × slotsTotal slots of 32 bytes,
slotsTotal = 7 days of seconds (``TimerMessageStore.TIMER_WHEEL_TTL_DAY × DAY_SECS``);
slot i holds the time ``t`` with ``t / precisionMs % (2 × slotsTotal) == i``::

    ┌──────────────┬────────────┬────────────┬─────────┬─────────┐
    │ delayed time │ first pos  │ last pos   │ num     │ magic   │
    │ int64 (t/precisionMs)     │ int64      │ int32   │ int32   │
    └──────────────┴────────────┴────────────┴─────────┴─────────┘

``timerlog/`` (Java ``TimerLog``): offset-named files (``mappedFileSizeTimerLog``,
100 MiB by default) of 52-byte units (``TimerMessageStore.doEnqueue``); a file ends
with a 16-byte blank (size, 0, ``BLANK_MAGIC_CODE``) when the next unit does not fit::

    size int32 (52) | prev pos int64 (the slot's previous last unit, -1) | magic int32
    write time int64 | delay int32 (delayed time - write time) | commitlog offset int64
    commitlog size int32 | real topic hash int32 (String.hashCode) | reserved int64

``config/timercheck`` (Java ``TimerCheckpoint``): a 4096-byte mapping of seven int64s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from construct import Int32sb, Int64sb, Struct

from .layout import fixed_dtype

TIMER_TOPIC = "rmq_sys_wheel_timer"  # Java TimerMessageStore.TIMER_TOPIC
# message properties (Java MessageConst)
TIMER_OUT_MS = "TIMER_OUT_MS"  # PROPERTY_TIMER_OUT_MS: when the message is due
TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES"  # PROPERTY_TIMER_ROLL_TIMES: re-put of a message due past the roll window
TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"  # PROPERTY_TIMER_DEL_UNIQKEY: a delete marker names the message it cancels
TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"  # PROPERTY_TIMER_DEQUEUE_MS: set on the copy put back to the real topic

SLOT_SIZE = 32  # Java Slot.SIZE
UNIT_SIZE = 52  # Java TimerLog.UNIT_SIZE
MIN_BLANK_LEN = 4 + 8 + 4  # Java TimerLog.MIN_BLANK_LEN
TIMER_WHEEL_TTL_DAY = 7  # Java TimerMessageStore.TIMER_WHEEL_TTL_DAY
DAY_SECS = 24 * 3600
SLOTS_TOTAL = TIMER_WHEEL_TTL_DAY * DAY_SECS  # Java TimerMessageStore: slotsTotal, whatever the precision
WHEEL_LENGTH = SLOTS_TOTAL * 2 * SLOT_SIZE  # Java TimerWheel.wheelLength
DEFAULT_PRECISION_MS = 1000  # Java MessageStoreConfig.timerPrecisionMs
DEFAULT_TIMER_LOG_FILE_SIZE = 100 * 1024 * 1024  # Java MessageStoreConfig.mappedFileSizeTimerLog
TIMER_CHECK_FILE_SIZE = 4096  # Java TimerCheckpoint maps OS_PAGE_SIZE


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


#: Java TimerLog.BLANK_MAGIC_CODE = 0xBBCCDDEE ^ 1880681586 + 8 (``+`` binds first)
BLANK_MAGIC_CODE = _int32(0xBBCCDDEE ^ (1880681586 + 8))
# unit magic bits (Java TimerMessageStore.MAGIC_*)
MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1
MAGIC_DELETE = 1 << 2


def magic_ok(magic):
    """Java ``TimerMessageStore.isMagicOK``: ``(magic | 0xF) == 0xF`` (an int or a numpy array)."""
    return (magic | 0xF) == 0xF


def magic_names(magic: int) -> str:
    """A timer-log unit's magic in words (``MAGIC_DEFAULT | MAGIC_ROLL``, ``BLANK``)."""
    if magic == BLANK_MAGIC_CODE:
        return "BLANK (end of file)"
    if not magic_ok(magic):
        return "not a timer magic"
    names = [n for bit, n in ((MAGIC_DEFAULT, "DEFAULT"), (MAGIC_ROLL, "ROLL"), (MAGIC_DELETE, "DELETE")) if magic & bit]
    return " | ".join(names) or "none"


TimerWheelSlot = Struct(
    "delayed_time" / Int64sb * "Java timeMs / precisionMs (Slot.timeMs once multiplied back)",
    "first_pos" / Int64sb * "Java firstPos: timer-log position of the slot's first unit",
    "last_pos" / Int64sb * "Java lastPos: of its last unit (the chain runs back by prev pos)",
    "num" / Int32sb * "Java num: units in the slot (delete markers count -1)",
    "magic" / Int32sb * "Java magic: unused",
)
assert TimerWheelSlot.sizeof() == SLOT_SIZE

#: a wheel slot in place, and what a reader's slots() returns: the slot's index and
#: its time in ms, then the Slot fields in native order
SLOT_DTYPE = fixed_dtype(TimerWheelSlot)
assert SLOT_DTYPE.itemsize == SLOT_SIZE
SLOT_ROWS = np.dtype([("index", np.int64), ("time_ms", np.int64)] + [(n, SLOT_DTYPE[n].newbyteorder("=")) for n in SLOT_DTYPE.names])


@dataclass
class TimerLogEnd:
    """Where a timer log's records end, as its store's recovery finds it: ``position``
    in the log's own offsets, the file and the byte in it; ``torn`` when non-zero bytes
    sit there (a record a crash tore: the store truncates the timer log at it)."""

    position: int
    file: str
    file_offset: int
    torn: bool


TimerLogUnit = Struct(
    "size" / Int32sb * "Java size: UNIT_SIZE, or the bytes left in a blank",
    "prev_pos" / Int64sb * "Java prev pos: the slot's last unit before this one (-1: first)",
    "magic" / Int32sb * "Java magic: MAGIC_DEFAULT | MAGIC_ROLL | MAGIC_DELETE, or BLANK_MAGIC_CODE",
    "write_time" / Int64sb * "Java currWriteTime: the enqueue's clock (ms)",
    "delay" / Int32sb * "Java delayTime: delayed time - write time (ms)",
    "commitlog_offset" / Int64sb * "Java offsetPy: the timer-topic record",
    "commitlog_size" / Int32sb * "Java sizePy",
    "real_topic_hash" / Int32sb * "Java hashTopicForMetrics: String.hashCode of REAL_TOPIC",
    "reserved" / Int64sb * "Java reserved value (0)",
)
assert TimerLogUnit.sizeof() == UNIT_SIZE

TimerCheck = Struct(
    "last_read_time_ms" / Int64sb * "Java lastReadTimeMs: slots before it have fired",
    "last_timer_log_flush_pos" / Int64sb * "Java lastTimerLogFlushPos",
    "last_timer_queue_offset" / Int64sb * "Java lastTimerQueueOffset: rmq_sys_wheel_timer offset enqueued up to",
    "master_timer_queue_offset" / Int64sb * "Java masterTimerQueueOffset",
    "state_version" / Int64sb * "Java dataVersion.stateVersion",
    "timestamp" / Int64sb * "Java dataVersion.timestamp",
    "counter" / Int64sb * "Java dataVersion.counter",
)


def slot_index(time_ms: int, precision_ms: int = DEFAULT_PRECISION_MS) -> int:
    """Java ``TimerWheel.getSlotIndex``."""
    return time_ms // precision_ms % (SLOTS_TOTAL * 2)


def slot_time(time_ms, precision_ms: int = DEFAULT_PRECISION_MS):
    """Java ``TimerMessageStore.formatTimeMs``: the time of the slot ``time_ms`` falls in."""
    return time_ms // precision_ms * precision_ms


def delete_key(real_topic: str, uniq_key: str) -> str:
    """Java ``TimerMessageStore.buildDeleteKey``: what a delete marker's
    ``TIMER_DEL_UNIQKEY`` holds to cancel a message (real topic + "+" + UNIQ_KEY)."""
    return f"{real_topic}+{uniq_key}"
