"""Consume queues kept in RocksDB, read-only (Java ``RocksDBConsumeQueueStore``).

A broker with ``storeType=defaultRocksDB`` (``RocksDBMessageStore``) keeps every unit
in a RocksDB instance in the store's ``consumequeue/``; one with
``rocksdbCQDoubleWriteEnable`` writes the same units there beside its file queues.
The layouts are :mod:`rmqlab.format.rocksdb_queue`'s; the instance is opened through
:class:`rmqlab.files.rocksdb.ReadOnlyRocksDB`, so that reading writes nothing beside it.

A queue's units are read once, a chunk of keys at a time, into a file of the view laid
out like a consume queue's (one fixed-size unit per queue offset), so that every
command reads a RocksDB queue as it reads a file queue and memory stays bounded: the
pages are file-backed, as a mapped consume-queue file's are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..files.rocksdb import ReadOnlyRocksDB
from ..format.rocksdb_queue import (CHECKPOINT_KEY, CHECKPOINT_TOPIC, CQ_UNIT_SIZE, CQ_VALUE_DTYPE, OFFSET_COLUMN_FAMILY, OFFSET_VALUE_SIZE, RocksDBOffsetValue, cq_key,
                                    key_offsets, parse_offset_key, queue_prefix)
from .consume_queue import QueueUnits

_CHUNK = 1 << 16


@dataclass(frozen=True)
class QueueOffsets:
    """A queue's entries of the ``offset`` column family: ``(commitLogOffset,
    queueOffset)`` of the unit at its max and at its min (None when absent)."""

    max: tuple[int, int] | None = None
    min: tuple[int, int] | None = None


def offset_table_of(items, malformed: list | None = None) -> dict[tuple[str, int], QueueOffsets]:
    """Every queue's max and min entries from the ``offset`` family's ``(key, value)``
    items (Java ``RocksDBConsumeQueueOffsetTable.forEach``: the checkpoint key's 8-byte
    value is not a queue's; keys and values that are not RocketMQ's are skipped, and
    named in ``malformed`` when given)."""
    table: dict[tuple[str, int], dict] = {}
    for k, v in items:
        parsed = parse_offset_key(k)
        if parsed is None:
            if malformed is not None:
                malformed.append((k, "not a RocketMQ offset key"))
            continue
        topic, which, qid = parsed
        if topic == CHECKPOINT_TOPIC:
            continue
        if len(v) != OFFSET_VALUE_SIZE:
            if malformed is not None:
                malformed.append((k, f"a {len(v)}-byte value, not {OFFSET_VALUE_SIZE}"))
            continue
        val = RocksDBOffsetValue.parse(v)
        table.setdefault((topic, qid), {})[which] = (val.commitlog_offset, val.queue_offset)
    return {k: QueueOffsets(d.get("max"), d.get("min")) for k, d in sorted(table.items())}


def progress_of(offset_family) -> int:
    """Java ``RocksDBConsumeQueueOffsetTable.getMaxPhyOffset``: the commitlog offset
    dispatch had written into RocksDB up to (0 when the key or the family is absent)."""
    v = offset_family.get(CHECKPOINT_KEY) if offset_family is not None else None
    return int.from_bytes(v[:8], "big", signed=True) if v is not None and len(v) >= 8 else 0


def unit_commitlog_offset_in(default_family, topic: str, queue_id: int, queue_offset: int) -> int | None:
    """The commitlog offset of one unit (Java ``RocksDBConsumeQueueTable.getCQInKV``),
    None without its key or with a value that is not RocketMQ's."""
    v = default_family.get(cq_key(topic, queue_id, queue_offset))
    return int.from_bytes(v[:8], "big", signed=True) if v is not None and len(v) == CQ_UNIT_SIZE else None


class RocksDBConsumeQueueStore:
    """The RocksDB instance of ``consumequeue/``, opened read-only (Java
    ``ConsumeQueueRocksDBStorage``: the ``default`` family holds the units, ``offset``
    each queue's min and max and dispatch's progress)."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.rocksdb = ReadOnlyRocksDB(self.directory, "consume queue")
        self.view = self.rocksdb.view
        self._offset_cf = self.rocksdb.family(OFFSET_COLUMN_FAMILY)
        self._table: dict[tuple[str, int], QueueOffsets] | None = None
        #: keys or values that are not RocketMQ's layout: (key, why)
        self.malformed: list[tuple[bytes, str]] = []
        self._queues: dict[tuple[str, int], RocksDBConsumeQueue] = {}
        self._spilled = 0

    def spill_path(self) -> str:
        """A new file in the view for one queue's units."""
        self._spilled += 1
        return os.path.join(self.view, f"rmqlab-units-{self._spilled}")

    # -- the offset family (Java RocksDBConsumeQueueOffsetTable) ------------------------------------
    def offset_table(self) -> dict[tuple[str, int], QueueOffsets]:
        """Every queue's max and min entries (:func:`offset_table_of`); keys and values
        that are not RocketMQ's are kept in ``malformed``."""
        if self._table is None:
            self._table = offset_table_of(self.rocksdb.items(self._offset_cf) if self._offset_cf is not None else (), self.malformed)
        return self._table

    def max_phy_offset(self) -> int:
        return progress_of(self._offset_cf)

    def queue_ids(self) -> list[tuple[str, int]]:
        """Every (topic, queueId) the offset family knows (Java
        ``loadMaxConsumeQueueOffsets``), sorted as the file queues' directories are."""
        return sorted(self.offset_table(), key=lambda k: (k[0], k[1]))

    def offsets(self, topic: str, queue_id: int) -> QueueOffsets:
        return self.offset_table().get((topic, queue_id), QueueOffsets())

    # -- the default family (Java RocksDBConsumeQueueTable) -----------------------------------------
    def units(self, topic: str, queue_id: int, start: int = 0, chunk: int = _CHUNK):
        """One queue's units in key order from queue offset ``start``, a chunk at a
        time: ``(queue offsets int64, values CQ_VALUE_DTYPE)``."""
        prefix = queue_prefix(topic, queue_id)
        keys, vals = [], []
        for k, v in self.rocksdb.items(None, cq_key(topic, queue_id, start), prefix[:-1] + bytes([prefix[-1] + 1])):
            if len(k) != len(prefix) + 8 or not k.startswith(prefix):
                continue  # not a unit of this queue (the bound is a prefix of longer topics' keys too)
            if len(v) != CQ_UNIT_SIZE:  # not RocketMQ's value: left out (the queue then has a gap there)
                if len(self.malformed) <= 100:
                    self.malformed.append((k, f"unit of {topic}/{queue_id}: a {len(v)}-byte value, not {CQ_UNIT_SIZE}"))
                continue
            keys.append(k)
            vals.append(v)
            if len(keys) == chunk:
                yield key_offsets(keys), np.frombuffer(b"".join(vals), CQ_VALUE_DTYPE)
                keys, vals = [], []
        if keys:
            yield key_offsets(keys), np.frombuffer(b"".join(vals), CQ_VALUE_DTYPE)

    def unit_commitlog_offset(self, topic: str, queue_id: int, queue_offset: int) -> int | None:
        return unit_commitlog_offset_in(self.rocksdb.db, topic, queue_id, queue_offset)

    def consume_queue(self, topic: str, queue_id: int) -> "RocksDBConsumeQueue":
        q = self._queues.get((topic, queue_id))
        if q is None:
            q = self._queues[(topic, queue_id)] = RocksDBConsumeQueue(self, topic, queue_id)
        return q

    def close(self) -> None:
        for q in self._queues.values():
            q.close()
        self._queues.clear()
        self.rocksdb.close()


class RocksDBConsumeQueue(QueueUnits):
    """One queue of a :class:`RocksDBConsumeQueueStore` (Java ``RocksDBConsumeQueue``),
    answering as :class:`~rmqlab.store.consume_queue.ConsumeQueue` does.

    Its units are read once into a file of the view, one unit per queue offset from the
    first key on, up to the first offset with no key (a gap): Java's range reads
    (``RocksDBConsumeQueueTable.rangeQuery``) stop there.  ``gap`` holds
    ``(first missing offset, units found after it)``."""

    #: what ``info`` calls this kind of queue
    KIND = "RocksDB"

    def __init__(self, store: RocksDBConsumeQueueStore, topic: str, queue_id: int):
        self.store = store
        self.topic = topic
        self.queue_id = queue_id
        self.directory = store.directory
        self.offsets = store.offsets(topic, queue_id)
        self._units: np.ndarray | None = None
        self._first = 0
        self.gap: tuple[int, int] | None = None
        self._range: tuple[int, tuple[int, int]] | None = None

    def _load(self) -> np.ndarray:
        if self._units is not None:
            return self._units
        path = self.store.spill_path()
        n = 0
        first = None
        after_gap = 0
        with open(path, "wb") as out:
            for offs, vals in self.store.units(self.topic, self.queue_id):
                if first is None:
                    first = int(offs[0])
                if self.gap is not None:
                    after_gap += len(offs)
                    continue
                want = np.arange(first + n, first + n + len(offs), dtype=np.int64)
                bad = np.flatnonzero(offs != want)
                if len(bad):
                    keep = int(bad[0])
                    out.write(vals[:keep].tobytes())
                    n += keep
                    self.gap = (first + n, 0)
                    after_gap += len(offs) - keep
                    continue
                out.write(vals.tobytes())
                n += len(offs)
        if self.gap is not None:
            self.gap = (self.gap[0], after_gap)
        self._first = first if first is not None else 0
        self._units = np.memmap(path, CQ_VALUE_DTYPE, mode="r") if n else np.zeros(0, CQ_VALUE_DTYPE)
        return self._units

    # -- the ConsumeQueue interface ------------------------------------------------------------
    @property
    def first_slot_offset(self) -> int:
        self._load()
        return self._first

    @property
    def slot_end(self) -> int:
        return self.first_slot_offset + len(self._load())

    def parts(self, lo: int | None = None, hi: int | None = None) -> list[tuple[int, np.ndarray]]:
        """The units as ``(queue offset of the first, units)`` cut to ``[lo, hi)``:
        fields ``commitlog_offset``, ``size``, ``tags_code`` as a file queue's, and the
        ``store_timestamp`` RocksDB keeps beside them."""
        u = self._load()
        a = max(self._first, lo if lo is not None else self._first)
        b = min(self._first + len(u), hi if hi is not None else self._first + len(u))
        return [(a, u[a - self._first : b - self._first])] if a < b else []

    def valid_range(self, min_commitlog_offset: int = 0) -> tuple[int, int]:
        """``(min, max)`` as Java's ``getMinOffsetInQueue`` / ``getMaxOffsetInQueue``
        answer: max is the ``offset`` family's max + 1 (0 without one), but no further
        than the units go without a gap; min is the min entry when its unit is not
        cleaned up (``isMinOffsetOk``), else the first unit at or after the log's
        minimum (``correctMinCqOffset``'s search)."""
        if self._range is not None and self._range[0] == min_commitlog_offset:
            return self._range[1]
        units = self._load()
        off = self.offsets
        mx = off.max[1] + 1 if off.max is not None else 0
        hi = min(mx, self.slot_end) if len(units) else mx
        if off.max is None:
            lo = 0
        elif off.min is not None and off.min[0] >= min_commitlog_offset:
            lo = off.min[1]
        elif off.max[0] < min_commitlog_offset:
            lo = mx  # every unit is below the log's minimum
        else:
            lo = off.min[1] if off.min is not None else 0
            for q0, e in self.parts(lo, hi):
                at = np.flatnonzero(e["commitlog_offset"] >= min_commitlog_offset)
                if len(at):
                    lo = q0 + int(at[0])
                    break
        lo = min(max(lo, self._first), hi)
        self._range = (min_commitlog_offset, (lo, hi))
        return self._range[1]

    def store_timestamp(self, queue_offset: int) -> int | None:
        got = self.parts(queue_offset, queue_offset + 1)
        return int(got[0][1][0]["store_timestamp"]) if got else None

    def max_physic_offset(self, min_commitlog_offset: int = 0) -> int:
        """Java ``RocksDBConsumeQueue.getMaxPhysicOffset``: the max entry's commitlog
        offset (-1 without one) — where that unit starts, not where it ends as a file
        queue's answer."""
        return self.offsets.max[0] if self.offsets.max is not None else -1

    def last_unit_end(self, min_commitlog_offset: int = 0) -> int:
        """Where the record of the last unit served ends (-1 without one)."""
        lo, hi = self.valid_range(min_commitlog_offset)
        e = self.get(hi - 1) if hi > lo else None
        return e.commitlog_offset + e.size if e is not None else -1

    def where(self, queue_offset: int) -> tuple[str, int | None]:
        """Where a unit lives, for findings: the RocksDB directory (a key has no byte
        offset in a file; the message names the key)."""
        return str(self.directory), None

    def describe(self) -> str:
        return f"RocksDB in {self.directory}"

    @property
    def file_count(self) -> int:
        return 0

    def offset_by_time(self, timestamp: int, boundary: str, min_phy_offset: int) -> int:
        """Java ``RocksDBConsumeQueueStore.getOffsetInQueueByTime`` →
        ``RocksDBConsumeQueueTable.binarySearchInCQByTime`` over the units' own store
        times (``high`` is the max entry's offset, ``low`` the min), step for step."""
        lower = boundary == "LOWER"
        if self.offsets.max is None:
            return 0
        low, _ = self.valid_range(min_phy_offset)
        high = self.offsets.max[1]
        ceiling, floor = high, low

        def unit(q: int):
            got = self.parts(q, q + 1)
            return got[0][1][0] if got else None

        u = unit(ceiling)
        if u is not None and int(u["store_timestamp"]) < timestamp:
            return ceiling + 1 if lower else ceiling
        u = unit(floor)
        if u is not None and int(u["store_timestamp"]) > timestamp:
            return floor if lower else 0
        target = left = right = -1
        while high >= low:
            mid = low + ((high - low) >> 1)
            u = unit(mid)
            if u is None:
                low = mid + 1
                continue
            if int(u["commitlog_offset"]) < min_phy_offset:
                low, left = mid + 1, mid
                continue
            t = int(u["store_timestamp"])
            if t < 0:
                return 0
            if t == timestamp:
                target = mid
                break
            if t > timestamp:
                high, right = mid - 1, mid
            else:
                low, left = mid + 1, mid
        if target == -1:
            return right if lower else left
        step = -1 if lower else 1
        while (target + step >= floor) if lower else (target + step <= ceiling):
            u = unit(target + step)
            if u is None or int(u["store_timestamp"]) != timestamp:
                break  # Java reads a missing unit as a NullPointerException; the walk ends here
            target += step
        return target

    def close(self) -> None:
        self._units = None
        self._range = None

