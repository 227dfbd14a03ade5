"""A batch consume queue, read side (Java ``BatchConsumeQueue``, ``queue.type=BatchCQ``).

A topic whose ``queue.type`` attribute is ``BatchCQ`` keeps its queues in
``batchconsumequeue/<topic>/<queueId>/`` (``StorePathConfigHelper
.getStorePathBatchConsumeQueue``): one 46-byte unit per record
(:data:`~rmqlab.format.consumequeue.BatchConsumeQueueUnit`).  A producer's batch sent
to such a topic is one record (an *inner batch*: ``INNER_BATCH`` flag, ``INNER_NUM``
messages, ``INNER_BASE`` its first queue offset) and one unit that covers ``batchSize``
queue offsets; a plain message is a unit of one.  So a lookup by queue offset lands
inside a unit: the one with the greatest ``msgBaseOffset`` at or below it.

Units are read in bulk as numpy views of the mapped files, as a consume queue's are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..files import MappedFileQueue
from ..format.consumequeue import BCQ_STORE_UNIT_SIZE, BatchConsumeQueueUnit, batch_unit_is_valid
from ..format.layout import fixed_dtype
from .consume_queue import CqEntry

#: numpy view of one 46-byte unit, big-endian, from the schema
BCQ_DTYPE = fixed_dtype(BatchConsumeQueueUnit)
assert BCQ_DTYPE.itemsize == BCQ_STORE_UNIT_SIZE


@dataclass(frozen=True, slots=True)
class BatchUnit:
    """One unit (Java ``CqUnit`` of a batch queue: ``queueOffset`` is its msgBaseOffset,
    ``batchNum`` its batchSize) and where it lies in its file."""

    msg_base_offset: int
    commitlog_offset: int
    size: int
    tags_code: int
    store_timestamp: int
    batch_size: int
    compacted_offset: int
    file: str
    position: int

    def covers(self, queue_offset: int) -> bool:
        return self.msg_base_offset <= queue_offset < self.msg_base_offset + self.batch_size

    def to_dict(self) -> dict:
        return {"msg_base_offset": self.msg_base_offset, "batch_size": self.batch_size, "commitlog_offset": self.commitlog_offset, "size": self.size,
                "tags_code": self.tags_code, "store_timestamp": self.store_timestamp, "compacted_offset": self.compacted_offset}


class BatchConsumeQueue:
    """Read-only ``batchconsumequeue/<topic>/<queueId>/`` (Java ``BatchConsumeQueue``)."""

    #: what ``info`` calls this kind of queue
    KIND = "batch queue"

    def __init__(self, directory: str | os.PathLike, topic: str, queue_id: int, mapped_file_size: int | None = None, *, strict: bool = True,
                 contiguous: bool = True):
        self.topic = topic
        self.queue_id = queue_id
        self.queue = MappedFileQueue(directory, mapped_file_size, strict=strict, contiguous=contiguous)
        self.directory = self.queue.directory
        self._end: tuple[int, int] | None = None

    def _units_of(self, f) -> np.ndarray:
        return np.frombuffer(f.buf, dtype=BCQ_DTYPE, count=len(f.buf) // BCQ_STORE_UNIT_SIZE)

    @staticmethod
    def _valid(u: np.ndarray) -> int:
        """How many of a file's units come before its first invalid one (Java ``recover``'s test)."""
        bad = np.flatnonzero(~batch_unit_is_valid(u["commitlog_offset"], u["size"], u["msg_base_offset"], u["batch_size"]))
        return int(bad[0]) if len(bad) else len(u)

    def end(self) -> tuple[int, int]:
        """(index of the file, unit count in it) where the valid units end, as Java's
        ``recover`` finds it: from the third-to-last file, each file up to its first
        invalid unit, on to the next file only when a file is full (the files before
        the third-to-last are trusted as they are)."""
        if self._end is None:
            files = self.queue.files
            i, n = max(0, len(files) - 3), 0
            while i < len(files):
                u = self._units_of(files[i])
                n = self._valid(u)
                if n < len(u) or i == len(files) - 1:
                    break
                i += 1
            self._end = (i, n) if files else (0, 0)
        return self._end

    def parts(self) -> list[tuple[str, np.ndarray]]:
        """The valid units file by file, as ``(file path, units)``: views of the mapped
        files, not copies."""
        fi, n = self.end()
        out = []
        for i, f in enumerate(self.queue.files[: fi + 1]):
            u = self._units_of(f)
            out.append((str(f.path), u[:n] if i == fi else u))
        return [(p, u) for p, u in out if len(u)]

    def valid_range(self, min_commitlog_offset: int = 0) -> tuple[int, int]:
        """``(min, max)`` as Java's ``reviseMinOffsetInQueue`` / ``reviseMaxOffsetInQueue``
        leave them: the first file's first unit's msgBaseOffset, the last unit's
        msgBaseOffset + batchSize; (0, 0) without a unit."""
        parts = self.parts()
        if not parts:
            return 0, 0
        first, last = parts[0][1][0], parts[-1][1][-1]
        return int(first["msg_base_offset"]), int(last["msg_base_offset"]) + int(last["batch_size"])

    def unit_at(self, queue_offset: int) -> BatchUnit | None:
        """The unit holding ``queue_offset`` (Java ``getBatchMsgIndexBuffer``: the file
        whose first unit is at or below it, then the unit with the greatest
        msgBaseOffset at or below it), None outside ``[min, max)``."""
        lo, hi = self.valid_range()
        if not lo <= queue_offset < hi:
            return None
        for path, u in reversed(self.parts()):
            base = u["msg_base_offset"]
            if int(base[0]) <= queue_offset:
                i = int(np.searchsorted(base.astype(np.int64), queue_offset, side="right")) - 1
                return self._unit(path, u, i)
        return None

    @staticmethod
    def _unit(path: str, u: np.ndarray, i: int) -> BatchUnit:
        r = u[i]
        return BatchUnit(int(r["msg_base_offset"]), int(r["commitlog_offset"]), int(r["size"]), int(r["tags_code"]), int(r["store_timestamp"]),
                         int(r["batch_size"]), int(r["compacted_offset"]), path, i * BCQ_STORE_UNIT_SIZE)

    def get(self, queue_offset: int) -> CqEntry | None:
        """What ``getMessage`` reads for ``queue_offset``: the record of the unit holding
        it (the whole inner batch), as a :class:`CqEntry` at that offset."""
        u = self.unit_at(queue_offset)
        return CqEntry(queue_offset, u.commitlog_offset, u.size, u.tags_code) if u is not None else None

    def iter_units(self):
        """Every valid unit as :class:`BatchUnit`, in queue order, a file at a time."""
        for path, u in self.parts():
            for i in range(len(u)):
                yield self._unit(path, u, i)

    def max_physic_offset(self, min_commitlog_offset: int = 0) -> int:
        """Java ``getMaxPhysicOffset`` after recovery: where the last unit's record
        starts (``maxMsgPhyOffsetInCommitLog``); -1 without a unit."""
        parts = self.parts()
        return int(parts[-1][1][-1]["commitlog_offset"]) if parts else -1

    def last_unit_end(self, min_commitlog_offset: int = 0) -> int:
        parts = self.parts()
        return int(parts[-1][1][-1]["commitlog_offset"]) + int(parts[-1][1][-1]["size"]) if parts else -1

    def offset_by_time(self, timestamp: int, boundary: str = "LOWER", min_commitlog_offset: int = 0) -> int:
        """Java ``BatchConsumeQueue.getOffsetInQueueByTime`` (before
        ``DefaultMessageStore`` clamps it to the queue's range), with
        ``searchBcqByCacheEnable`` (the default): the last file when its first unit was
        stored at or before ``timestamp``, else the file whose first unit's store time
        is the greatest at or below it (``searchTimeFromCache``; the first file when
        none is); in it, ``binarySearchRight`` over the units' own store times, from
        the first unit to the last written one.  Returns that unit's msgBaseOffset
        (the last unit's when ``timestamp`` is at or past its time), -1 when none.
        A file's units are its written ones: all of a file before the last
        (``MappedFileQueue.load`` maps them whole), the valid ones of the last."""
        fi, n = self.end()
        files = self.queue.files[: fi + 1]
        if not files:
            return -1
        units = [self._units_of(f)[: n if i == fi else None] for i, f in enumerate(files)]
        if len(units[-1]) and int(units[-1]["store_timestamp"][0]) <= timestamp:
            target = len(units) - 1
        else:
            # the time cache: each file's first unit's time -> the file (put in file order,
            # so of equal times the later file stays); floorEntry, else the first file
            cache = {int(u["store_timestamp"][0]): i for i, u in enumerate(units) if len(u)}
            below = [t for t in cache if t <= timestamp]
            target = cache[max(below)] if below else 0
        u = units[target]
        if not len(u):
            return -1
        times = u["store_timestamp"].astype(np.int64)
        right = len(u) - 1
        if timestamp >= int(times[right]):
            return int(u["msg_base_offset"][right])
        mid = _binary_search_right(times, 0, right, timestamp, boundary)
        return int(u["msg_base_offset"][mid]) if mid >= 0 else -1

    @property
    def file_count(self) -> int:
        return len(self.queue.files)

    def describe(self) -> str:
        return f"batch queue, {self.file_count} file(s) in {self.directory}"

    def where(self, queue_offset: int) -> tuple[str, int | None]:
        u = self.unit_at(queue_offset)
        return (u.file, u.position) if u is not None else (str(self.directory), None)

    def close(self) -> None:
        self._end = None
        self.queue.close()


def _binary_search_right(times: np.ndarray, left: int, right: int, target: int, boundary: str) -> int:
    """Java ``BatchConsumeQueue.binarySearchRight`` over unit indexes (Java's are byte
    positions, ``ceil`` flooring the middle to a unit): the unit whose time is at or
    past ``target`` — the lowest of equal ones for LOWER, for UPPER the search's own
    answer — or -1."""
    mid = -1
    while left <= right:
        mid = (left + right) // 2
        value = int(times[mid])
        if mid == right:
            return mid if value >= target else -1
        if mid == left:
            if value >= target:
                return mid
            left = mid + 1
        elif boundary == "LOWER":
            if value < target:
                left = mid + 1
            else:
                right = mid
        elif boundary == "UPPER":
            if value <= target:
                left = mid
            else:
                right = mid - 1
        else:
            return -1
    return -1


class SparseConsumeQueue(BatchConsumeQueue):
    """A compacted topic's queue (Java ``SparseConsumeQueue``, a ``BatchConsumeQueue`` of
    ``compaction/compactionCq/<topic>/<queueId>/``): one unit per record of the
    compaction log, whose ``commitlog_offset`` is the record's position in that log (not
    in the commitlog); queue offsets are sparse (compaction keeps the newest record of
    each key).  A file rolls with its log file and is named like it; a file the log
    rolled past ends with an end unit (``putEndPositionInfo``: offset -1, size 0), and
    ``recover`` reads every file from the third-to-last up to its first invalid unit,
    so every file is read that way here."""

    def max_phy_offset_in_log(self) -> int:
        """Java ``SparseConsumeQueue.getMaxPhyOffsetInLog`` after ``recover``: where the
        last valid unit of the *last* file ends in the compaction log (offset + size),
        -1 when that file has none (earlier files are not looked at)."""
        if not self.queue.files:
            return -1
        u = self._units_of(self.queue.files[-1])
        n = self._valid(u)
        return int(u["commitlog_offset"][n - 1]) + int(u["size"][n - 1]) if n else -1

    def parts(self) -> list[tuple[str, np.ndarray]]:
        out = []
        for f in self.queue.files:
            u = self._units_of(f)
            n = self._valid(u)
            if n:
                out.append((str(f.path), u[:n]))
        return out
