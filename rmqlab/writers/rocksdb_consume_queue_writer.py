"""Consume queues kept in RocksDB, written as RocketMQ's start-up leaves them (Java
``RocksDBConsumeQueueStore`` with ``RocksDBConsumeQueueTable`` and
``RocksDBConsumeQueueOffsetTable``; ``storeType=defaultRocksDB``).

Two things RocketMQ's recovery does to them, and recovery's plan and its applying
both take from here:

- :func:`truncate_dirty` — Java ``RocksDBConsumeQueueStore.truncateDirty``: which
  ``offset`` family entries the start-up rewrites when RocksDB's progress lies past
  the new end of the log (the unit keys stay; only each queue's max, and the min it
  reads on the way, move);
- :class:`RocksDBConsumeQueueWriter` — the re-dispatch of the records after RocksDB's
  progress (``putMessagePosition0``: a key per unit, each queue's max, the progress),
  and the writes :func:`truncate_dirty` names, into a RocksDB opened with
  :func:`rmqlab.files.rocksdb.open_writable`.

The layouts are :mod:`rmqlab.format.rocksdb_queue`'s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..files.rocksdb import close_writable, open_writable
from ..format.rocksdb_queue import CHECKPOINT_KEY, CQ_UNIT_SIZE, CQ_VALUE_DTYPE, OFFSET_COLUMN_FAMILY, RocksDBOffsetValue, offset_key, queue_prefix
from ..store.rocksdb_queue import offset_table_of, progress_of, unit_commitlog_offset_in


@dataclass
class TruncateDirty:
    """What ``truncateDirty(offsetToTruncate)`` writes: dispatch's new progress (None:
    the progress is not past the end, nothing is written), and each queue's new
    ``(commitLogOffset, queueOffset)`` max and min entries.  ``failed``: queues Java
    gives up on (``correctMaxCqOffset`` throws, the error is logged, the max stays)."""

    progress: int | None = None
    max: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    min: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    failed: list[tuple[str, int]] = field(default_factory=list)


def _binary_search(unit_offset, high: int, low: int, target: int, minimum: bool) -> tuple[int, int]:
    """Java ``RocksDBConsumeQueueTable.binarySearchInCQ`` as written: ``(phy, cq)`` of
    the first unit at or past ``target`` (``minimum``) or the last one below it, (-1, -1)
    when none was seen.  A missing key moves the search up; a unit exactly at ``target``
    ends it, so searching for the max below ``target`` answers (-1, -1) when the first
    unit probed is the one at ``target``: the start-up then sets the max to the min."""
    res = (-1, -1)
    while high >= low:
        mid = low + ((high - low) >> 1)
        phy = unit_offset(mid)
        if phy is None:
            low = mid + 1
            continue
        if phy == target:
            if minimum:
                res = (phy, mid)
            break
        if phy > target:
            high = mid - 1
            if minimum:
                res = (phy, mid)
        else:
            low = mid + 1
            if not minimum:
                res = (phy, mid)
    return res


def truncate_dirty(view, offset_to_truncate: int, min_phy_offset: int) -> TruncateDirty:
    """Java ``RocksDBConsumeQueueStore.truncateDirty`` → ``RocksDBConsumeQueueOffsetTable
    .truncateDirty`` at start-up (the heap caches empty): when dispatch's progress lies
    past ``offset_to_truncate`` it becomes that offset (``correctMaxPyhOffset``), and each
    queue whose max entry's unit starts at or past it gets as max the last unit below it
    (``truncateDirtyOffset`` → ``correctMaxCqOffset``), after its min is checked against
    the log's minimum ``min_phy_offset`` (``getMinCqOffset``: ``isMinOffsetOk``, else
    ``correctMinCqOffset``, which writes a new min).

    ``view`` answers ``max_phy_offset()``, ``offset_table()`` (``{(topic, queueId):
    QueueOffsets}``) and ``unit_commitlog_offset(topic, queueId, queueOffset)`` (None
    without the key): :class:`rmqlab.store.rocksdb_queue.RocksDBConsumeQueueStore` for a
    plan, :class:`RocksDBConsumeQueueWriter` when applying."""
    out = TruncateDirty()
    if offset_to_truncate >= view.max_phy_offset():
        return out
    out.progress = offset_to_truncate
    for (topic, qid), offs in view.offset_table().items():
        if offs.max is None or offs.max[0] < offset_to_truncate:
            continue
        unit = lambda q, t=topic, i=qid: view.unit_commitlog_offset(t, i, q)  # noqa: E731
        max_phy, max_cq = offs.max
        # getMinCqOffset: the min entry when its unit is not below the log's minimum
        heap_min = None
        if offs.min is not None and offs.min[0] >= min_phy_offset:
            min_cq = offs.min[1]
            heap_min = offs.min
        else:
            min_cq = offs.min[1] if offs.min is not None else 0
            # correctMinCqOffset (the max entry exists here)
            if max_phy < min_phy_offset:
                heap_min = out.min[(topic, qid)] = (min_phy_offset, max_cq + 1)
                min_cq = max_cq + 1
            else:
                phy, cq = _binary_search(unit, max_cq, min_cq, min_phy_offset, True)
                if cq == -1:
                    if max_cq != min_cq:
                        heap_min = out.min[(topic, qid)] = (max_phy, max_cq)
                else:
                    heap_min = out.min[(topic, qid)] = (phy, cq)
                    min_cq = cq
        # correctMaxCqOffset: its checks throw, and truncateDirty logs and goes on
        if heap_min is None or heap_min[1] != min_cq or heap_min[0] > offset_to_truncate:
            out.failed.append((topic, qid))
            continue
        phy, cq = _binary_search(unit, max_cq, min_cq, offset_to_truncate, False)
        if cq == -1:
            if max_cq != min_cq:
                out.max[(topic, qid)] = heap_min
        else:
            out.max[(topic, qid)] = (phy, cq)
    return out


class RocksDBConsumeQueueWriter:
    """The RocksDB of a store's consume queues (``storeType=defaultRocksDB``), opened
    for writing: what RocketMQ's start-up writes into it, nothing else."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.db = open_writable(self.directory, "consume queue")
        self._offset_cf = self.db.get_column_family(OFFSET_COLUMN_FAMILY)  # reads
        self._offset_handle = self.db.get_column_family_handle(OFFSET_COLUMN_FAMILY)  # a batch's writes

    # -- what truncate_dirty reads ---------------------------------------------------------------
    def max_phy_offset(self) -> int:
        return progress_of(self._offset_cf)

    def offset_table(self) -> dict:
        return offset_table_of(self._offset_cf.items())

    def unit_commitlog_offset(self, topic: str, queue_id: int, queue_offset: int) -> int | None:
        return unit_commitlog_offset_in(self.db, topic, queue_id, queue_offset)

    # -- writing -----------------------------------------------------------------------------------
    def truncate_dirty(self, offset_to_truncate: int, min_phy_offset: int) -> TruncateDirty:
        """Java ``truncateDirty``: :func:`truncate_dirty`'s writes, made."""
        from rocksdict import WriteBatch

        t = truncate_dirty(self, offset_to_truncate, min_phy_offset)
        if t.progress is None:
            return t
        wb = WriteBatch(raw_mode=True)
        wb.put(CHECKPOINT_KEY, t.progress.to_bytes(8, "big", signed=True), self._offset_handle)
        for which, entries in ((False, t.min), (True, t.max)):
            for (topic, qid), (phy, cq) in entries.items():
                wb.put(offset_key(topic, qid, which), RocksDBOffsetValue.build(dict(commitlog_offset=phy, queue_offset=cq)), self._offset_handle)
        self.db.write(wb)
        return t

    def initialize_with_offset(self, topic: str, queue_id: int, offset: int, min_phy_offset: int) -> int:
        """Java ``RocksDBConsumeQueue.initializeWithOffset`` (what 5.4+'s
        ``verifyAndInitOffsetForAllStore`` does to a copy's queue whose max is not the file
        queue's): ``cleanExpired(minPhyOffset)`` — a manual compaction whose filter
        (rocketmq-rocksdb's ``RemoveConsumeQueueCompactionFilter``) drops every unit below
        the log's minimum, here deleted key by key when that minimum is above 0 — then the
        max entry ``(0, offset - 1)`` and the min entry ``(0, offset)``: the queue reads
        empty up to ``offset``.  Returns how many units were dropped."""
        from rocksdict import WriteBatch

        dropped = 0
        wb = WriteBatch(raw_mode=True)
        if min_phy_offset > 0:
            for k, v in self.db.items():
                if len(v) == CQ_UNIT_SIZE and int.from_bytes(v[:8], "big", signed=True) < min_phy_offset:
                    wb.delete(k)
                    dropped += 1
        wb.put(offset_key(topic, queue_id, True), RocksDBOffsetValue.build(dict(commitlog_offset=0, queue_offset=offset - 1)), self._offset_handle)
        wb.put(offset_key(topic, queue_id, False), RocksDBOffsetValue.build(dict(commitlog_offset=0, queue_offset=offset)), self._offset_handle)
        self.db.write(wb)
        return dropped

    def put(self, topics: list[str], topic_code: np.ndarray, queue_id: np.ndarray, queue_offset: np.ndarray, commitlog_offset: np.ndarray,
            size: np.ndarray, tags_code: np.ndarray, store_timestamp: np.ndarray) -> None:
        """Java ``RocksDBConsumeQueueStore.putMessagePosition0`` for one batch of
        dispatch requests in commitlog order: a key per unit (``RocksDBConsumeQueueTable
        .buildAndPutCQByteBuffer``), each queue's max entry at its last unit of the batch
        (``putMaxPhyAndCqOffset``), and dispatch's progress at the batch's furthest
        record end (``appendMaxPhyOffset``), in one write."""
        from rocksdict import WriteBatch

        n = len(commitlog_offset)
        if not n:
            return
        values = np.empty(n, CQ_VALUE_DTYPE)
        values["commitlog_offset"], values["size"], values["tags_code"], values["store_timestamp"] = commitlog_offset, size, tags_code, store_timestamp
        raw = values.tobytes()
        cq_offsets = np.asarray(queue_offset, ">i8").tobytes()
        wb = WriteBatch(raw_mode=True)
        last: dict[tuple[str, int], int] = {}
        prefixes: dict[tuple[str, int], bytes] = {}
        for i in range(n):
            k = (topics[int(topic_code[i])], int(queue_id[i]))
            prefix = prefixes.get(k)
            if prefix is None:
                prefix = prefixes[k] = queue_prefix(*k)
            wb.put(prefix + cq_offsets[8 * i: 8 * i + 8], raw[CQ_UNIT_SIZE * i: CQ_UNIT_SIZE * (i + 1)])
            last[k] = i
        for (topic, qid), i in last.items():
            wb.put(offset_key(topic, qid, True), RocksDBOffsetValue.build(dict(commitlog_offset=int(commitlog_offset[i]), queue_offset=int(queue_offset[i]))),
                   self._offset_handle)
        progress = int((commitlog_offset + size).max())
        wb.put(CHECKPOINT_KEY, progress.to_bytes(8, "big", signed=True), self._offset_handle)
        self.db.write(wb)

    def close(self) -> None:
        if self.db is not None:
            close_writable(self.db, self.directory)
            self.db = None

    def __enter__(self) -> "RocksDBConsumeQueueWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["RocksDBConsumeQueueWriter", "TruncateDirty", "truncate_dirty"]
