"""The engine's sense of time and place, injectable so runs are reproducible.

Java: ``DefaultMessageStore.getSystemClock()`` (``SystemClock.now``) gives the
store timestamp taken inside the put lock, and ``MessageStoreConfig``'s broker
address gives the store host.  Index file names also come from the clock
(Java ``UtilAll.timeMillisToHumanString``: ``yyyyMMddHHmmssSSS``, local time).

A notebook or a test passes a :class:`ManualClock` (or any object with
``now_ms()``); replaying a dump passes each message's own ``store_timestamp``.
"""

from __future__ import annotations

import time

#: Java's default broker listen port, what RocketMQ writes as storeHost's port.
DEFAULT_STORE_PORT = 10911
DEFAULT_STORE_HOST: tuple[bytes, int] = (b"\x7f\x00\x00\x01", DEFAULT_STORE_PORT)


class SystemClock:
    """Wall-clock milliseconds (Java ``System.currentTimeMillis``): the store's clock
    unless it is given another.

    >>> from rmqlab.engine import SystemClock
    >>> SystemClock().now_ms() > 1_700_000_000_000
    True
    """

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to; ``tick_ms`` advances it on every read.

    ``ManualClock(1_700_000_000_000, tick_ms=1)`` gives strictly increasing store
    timestamps, as a fast broker would, and the same ones on every run.

    >>> import tempfile
    >>> from rmqlab.engine import ManualClock, Message, MessageStore
    >>> clock = ManualClock(1_767_261_600_000, tick_ms=1)     # 2026-01-01T10:00:00Z
    >>> with MessageStore.open(tempfile.mkdtemp(), clock=clock) as store:
    ...     print(store.put(Message("Orders", b"a")).store_timestamp, store.put(Message("Orders", b"b")).store_timestamp)
    1767261600000 1767261600001
    """

    def __init__(self, start_ms: int = 1_700_000_000_000, tick_ms: int = 0):
        self.ms = int(start_ms)
        self.tick_ms = int(tick_ms)

    def now_ms(self) -> int:
        now = self.ms
        self.ms += self.tick_ms
        return now

    def set(self, ms: int) -> None:
        self.ms = int(ms)

    def advance(self, ms: int) -> None:
        self.ms += int(ms)


def time_millis_to_human_string(ms: int) -> str:
    """Java ``UtilAll.timeMillisToHumanString``: ``yyyyMMddHHmmssSSS`` in local time."""
    t = time.localtime(ms / 1000.0 if ms >= 0 else 0)
    return time.strftime("%Y%m%d%H%M%S", t) + f"{ms % 1000:03d}"
