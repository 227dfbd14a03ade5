"""BatchConsumeQueue, write side (Java ``BatchConsumeQueue``, ``queue.type=BatchCQ``).

One :class:`BatchConsumeQueueWriter` per ``batchconsumequeue/<topic>/<queueId>/``: one
46-byte unit per record (:data:`~rmqlab.format.consumequeue.BatchConsumeQueueUnit`),
appended as ``putBatchMessagePositionInfo`` appends it.  Where Java's batch queue
differs from the classic one, so does this writer:

* a unit is skipped as a repeat when its ``offset`` is at or below the queue's
  ``maxMsgPhyOffsetInCommitLog`` — the *offset* of the last unit, not offset + size;
* there is no expected position: a unit goes where the queue ends, and a queue created
  by dispatch starts at file 0 whatever its first msgBaseOffset (no ``fillPreBlank``);
* a request whose msgBaseOffset or batchSize is negative is dropped
  (``putMessagePositionInfoWrapper``: "unexpected dispatch request");
* every unit is written with compactedOffset ``INVALID_POS`` (-1) and 4 reserved zeros.

The read side is :mod:`rmqlab.store.batch_consume_queue`.
"""

from __future__ import annotations

import numpy as np

from ..format.consumequeue import BCQ_STORE_UNIT_SIZE, BatchConsumeQueueUnit, batch_unit_is_valid
from ..store.batch_consume_queue import BCQ_DTYPE
from .consume_queue_writer import QueueFilesWriter, _struct_from_schema

#: the unit's packer, from the construct schema
BCQ_UNIT = _struct_from_schema(BatchConsumeQueueUnit)
assert BCQ_UNIT.size == BCQ_STORE_UNIT_SIZE
#: Java BatchConsumeQueue.INVALID_POS: the compactedOffset every unit is written with
INVALID_POS = -1


def kept_rows(offsets: np.ndarray, msg_base_offsets: np.ndarray, batch_sizes: np.ndarray, max_physic_offset: int) -> np.ndarray:
    """The rows of a queue's dispatch requests (int64 columns, in order) that
    ``putMessagePositionInfoWrapper`` / ``putBatchMessagePositionInfo`` write as units
    after ``max_physic_offset`` (the queue's last unit's offset): a non-negative base and
    size, an offset past every kept one before it.  Recovery's dry run counts with it too."""
    usable = (msg_base_offsets >= 0) & (batch_sizes >= 0)
    if not len(usable):
        return np.zeros(0, np.int64)
    seen = np.where(usable, offsets, -1)
    before = np.maximum.accumulate(np.concatenate(([max_physic_offset], seen[:-1])))
    return np.flatnonzero(usable & (offsets > before))


class BatchConsumeQueueWriter(QueueFilesWriter):
    """One batch queue's files, writable (Java ``BatchConsumeQueue``).

    Opening recovers the write position as ``BatchConsumeQueue.recover`` does: from
    the third-to-last file to the first unit that is not ``offset >= 0 && size > 0 &&
    msgBaseOffset >= 0 && batchSize > 0``; files past it are deleted.
    ``max_physic_offset`` is Java's ``maxMsgPhyOffsetInCommitLog``: the commitlog offset
    of the last unit (what ``getMaxPhysicOffset`` answers, and what
    ``ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue`` takes the maximum of)."""

    UNIT = BCQ_STORE_UNIT_SIZE
    WHAT = "mapperFileSizeBatchConsumeQueue"

    def _units(self, f, count: int | None = None) -> np.ndarray:
        return np.frombuffer(f.mm, dtype=BCQ_DTYPE, count=self.mapped_file_size // self.UNIT if count is None else count)

    def _recover(self) -> None:
        """Java ``BatchConsumeQueue.recover``."""
        index = max(0, len(self.files) - 3)
        process = self.files[index].file_from_offset
        for f in self.files[index:]:
            u = self._units(f)
            valid = batch_unit_is_valid(u["commitlog_offset"], u["size"], u["msg_base_offset"], u["batch_size"])
            n = int(np.argmin(valid)) if not valid.all() else len(u)
            if n:
                self.max_physic_offset = int(u["commitlog_offset"][n - 1])
            del u
            process = f.file_from_offset + n * self.UNIT
            if n < len(valid):
                break
        self._truncate_files(process)

    # -- positions ----------------------------------------------------------------------------
    @property
    def max_offset_in_queue(self) -> int:
        """Java ``reviseMaxOffsetInQueue``: msgBaseOffset + batchSize of the last unit
        (of the last file, else the one before it), 0 without one."""
        for f in reversed(self.files[-2:]):
            if f.wrote_position >= self.UNIT:
                last = self._units(f)[f.wrote_position // self.UNIT - 1]
                return int(last["msg_base_offset"]) + int(last["batch_size"])
        return 0

    def _last_file(self):
        """Java ``MappedFileQueue.getLastMappedFile(getMaxOffset())``: the last file, or
        a new one after it when it is full (the first at offset 0)."""
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_full:
            return last
        return self._create_file(0 if last is None else last.file_from_offset + self.mapped_file_size)

    # -- writing -------------------------------------------------------------------------------
    def put(self, offset: int, size: int, tags_code: int, store_timestamp: int, msg_base_offset: int, batch_size: int) -> bool:
        """Java ``putMessagePositionInfoWrapper`` → ``putBatchMessagePositionInfo``;
        ``True`` also when skipped (as Java returns)."""
        if msg_base_offset < 0 or batch_size < 0:
            return True  # "[NOTIFYME]unexpected dispatch request in batch consume queue"
        if offset <= self.max_physic_offset:
            return True  # "Build batch consume queue repeatedly"
        f = self._last_file()
        pos = f.wrote_position
        BCQ_UNIT.pack_into(f.mm, pos, offset, size, tags_code, store_timestamp, msg_base_offset, batch_size, INVALID_POS, 0)
        f.wrote_position = pos + self.UNIT
        self.max_physic_offset = offset
        self.dirty = True
        return True

    def put_columns(self, offsets, sizes, tags_codes, store_timestamps, msg_base_offsets, batch_sizes) -> None:
        """:meth:`put` for every row of these int64 columns, in order: the rows Java
        keeps (a non-negative base and size, an offset past every kept one before it)
        found at once, then written file by file as numpy blocks."""
        rows = kept_rows(offsets, msg_base_offsets, batch_sizes, self.max_physic_offset)
        i = 0
        while i < len(rows):
            f = self._last_file()
            room = (f.file_size - f.wrote_position) // self.UNIT
            take = rows[i : i + room]
            view = np.frombuffer(f.mm, dtype=BCQ_DTYPE, count=len(take), offset=f.wrote_position)
            view["commitlog_offset"], view["size"], view["tags_code"] = offsets[take], sizes[take], tags_codes[take]
            view["store_timestamp"], view["msg_base_offset"], view["batch_size"] = store_timestamps[take], msg_base_offsets[take], batch_sizes[take]
            view["compacted_offset"], view["reserved"] = INVALID_POS, 0
            del view
            f.wrote_position += len(take) * self.UNIT
            self.max_physic_offset = int(offsets[take[-1]])
            self.dirty = True
            i += len(take)

    def put_request(self, r) -> None:
        self.put(r.commitlog_offset, r.msg_size, r.tags_code, r.store_timestamp, r.base_offset, r.batch_size)

    def put_requests(self, reqs) -> None:
        for r in reqs:
            self.put_request(r)

    def put_rows(self, cols, rows: np.ndarray) -> None:
        self.put_columns(cols.commitlog_offset[rows], cols.msg_size[rows], cols.tags_code[rows], cols.store_timestamp[rows],
                         cols.msg_base_offsets()[rows], cols.batch_sizes()[rows])

    def truncate_dirty(self, phy_offset: int, *, zero_tail: bool = True) -> int:
        """Java ``BatchConsumeQueue.truncateDirtyLogicFiles``: from the last file back,
        a file whose first unit points at or past ``phy_offset`` is deleted; in the first
        one that does not, the units from the first invalid one or the first pointing
        at or past ``phy_offset`` are cut.  ``maxMsgPhyOffsetInCommitLog`` becomes the
        last kept unit's offset, or ``phy_offset - 1`` when no file is left.  Java keeps
        the first unit of that file without testing it (an all-zero file gets one
        zero "unit": its bytes do not change).  ``zero_tail``: the cut units are zeroed
        (Java leaves them for the next appends; see ``ConsumeQueueWriter``).  Returns the
        number of valid units cut."""
        cut = 0
        self.max_physic_offset = phy_offset - 1
        while self.files:
            f = self.files[-1]
            u = self._units(f)
            valid = batch_unit_is_valid(u["commitlog_offset"], u["size"], u["msg_base_offset"], u["batch_size"])
            n_valid = int(np.argmin(valid)) if not valid.all() else len(u)
            if int(u["commitlog_offset"][0]) >= phy_offset:
                del u, valid
                cut += n_valid
                f.destroy()
                self.files.pop()
                continue
            offs = u["commitlog_offset"][1:n_valid]
            past = np.flatnonzero(offs >= phy_offset)
            keep = 1 + (int(past[0]) if len(past) else len(offs))
            self.max_physic_offset = int(u["commitlog_offset"][keep - 1])
            del u, valid, offs
            cut += max(0, n_valid - keep)
            f.wrote_position = keep * self.UNIT
            f.flushed_position = min(f.flushed_position, f.wrote_position)
            if zero_tail and n_valid > keep:
                f.mm[keep * self.UNIT : n_valid * self.UNIT] = bytes((n_valid - keep) * self.UNIT)
            self.dirty = True
            break
        return cut

    def __repr__(self) -> str:
        return f"BatchConsumeQueueWriter({self.topic}/{self.queue_id}, queue offsets<{self.max_offset_in_queue}, maxMsgPhyOffsetInCommitLog={self.max_physic_offset})"


__all__ = ["BatchConsumeQueueWriter", "INVALID_POS", "kept_rows"]
