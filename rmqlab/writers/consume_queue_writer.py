"""ConsumeQueue, write side (Java ``ConsumeQueue`` and ``ConsumeQueueStore``).

One :class:`ConsumeQueueWriter` per ``consumequeue/<topic>/<queueId>/``.  Entries are
appended at the queue's write position exactly as Java's
``ConsumeQueue.putMessagePositionInfo`` does, including its two "built repeatedly"
guards that make re-dispatch idempotent:

* an entry whose ``offset + size`` is not past the queue's ``maxPhysicOffset`` is skipped;
* an entry whose logical position is below the current write position is skipped.

A queue whose first file starts at a non-zero queue offset gets the file's leading
slots filled with ``(0, 0x7FFFFFFF, 0)`` (Java ``fillPreBlank``).

The 20-byte layout comes from :data:`rmqlab.format.consumequeue.ConsumeQueueEntry`.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from ..errors import StoreLayoutError
from ..format.consumequeue import CQ_STORE_UNIT_SIZE, EXT_MAX_ADDR, PRE_BLANK_SIZE, ConsumeQueueEntry
from ..store.consume_queue import CQ_DTYPE
from .mapped_file import MappedFilesWriter, WritableMappedFile


def _struct_from_schema(schema) -> struct.Struct:
    return struct.Struct(">" + "".join({2: "h", 4: "i", 8: "q"}[sub.sizeof()] for sub in schema.subcons))


#: ``(commitLogOffset, size, tagsCode)`` packer, derived from the construct schema
CQ_ENTRY = _struct_from_schema(ConsumeQueueEntry)
assert CQ_ENTRY.size == CQ_STORE_UNIT_SIZE
_PRE_BLANK = CQ_ENTRY.pack(0, PRE_BLANK_SIZE, 0)
#: the (offset, size) every queue unit starts with
_OFFSET_SIZE = struct.Struct(CQ_ENTRY.format[:3])


class QueueFilesWriter(MappedFilesWriter):
    """The files of one queue directory, writable: what Java's ``ConsumeQueue`` and
    ``BatchConsumeQueue`` share through their ``MappedFileQueue`` — fixed-size units,
    loaded (:class:`~rmqlab.writers.mapped_file.MappedFilesWriter`), positioned by the
    subclass's ``_recover``, expired by ``deleteExpiredFile``.

    Subclasses set ``UNIT`` (bytes), ``WHAT`` (the setting, for errors) and implement
    ``_recover``."""

    UNIT = CQ_STORE_UNIT_SIZE
    WHAT = "mappedFileSizeConsumeQueue"

    def __init__(self, directory: str | os.PathLike, topic: str, queue_id: int, mapped_file_size: int):
        if mapped_file_size <= 0 or mapped_file_size % self.UNIT:
            raise StoreLayoutError(directory, None, f"{self.WHAT} {mapped_file_size} is not a multiple of {self.UNIT}")
        super().__init__(directory, mapped_file_size)
        self.topic = topic
        self.queue_id = queue_id
        self.max_physic_offset = -1
        self.min_logic_offset = 0  # Java minLogicOffset
        self.load()
        if self.files:
            self.min_logic_offset = self.files[0].file_from_offset
            self._recover()

    def _recover(self) -> None:
        raise NotImplementedError

    def delete_expired(self, min_commitlog_offset: int) -> int:
        """Java ``deleteExpiredFile`` (``MappedFileQueue.deleteExpiredFileByOffset``):
        drop files (never the last) whose last unit points below ``min_commitlog_offset``;
        returns how many went.  Both unit layouts start with the offset and the size."""
        gone = 0
        while len(self.files) > 1:
            f = self.files[0]
            last = _OFFSET_SIZE.unpack_from(f.mm, self.mapped_file_size - self.UNIT)
            if last[0] >= min_commitlog_offset or last[1] <= 0:
                break
            f.destroy()
            self.files.pop(0)
            gone += 1
        if self.files:
            self.min_logic_offset = max(self.min_logic_offset, self.files[0].file_from_offset)
        return gone


class ConsumeQueueWriter(QueueFilesWriter):
    """One logical queue's files, writable (Java ``ConsumeQueue``).

    Opening loads the existing files and recovers the write position as Java
    ``ConsumeQueue.recover`` does: scan from the third-to-last file to the first
    invalid entry (``offset < 0 or size <= 0``); files wholly past it are deleted
    (Java ``MappedFileQueue.truncateDirtyFiles``).  ``max_physic_offset`` is Java's
    maxPhysicOffset: ``offset + size`` of the last entry.

    ``ext`` (``enableConsumeQueueExt``): the queue's ext files; dispatch then writes an
    ext unit for every request before the entry, whose tagsCode is the unit's address
    (``putMessagePositionInfoWrapper``; the unit is written even when the entry is then
    skipped as a repeat, as Java writes it), and recovery positions them
    (``ConsumeQueueExt.recover``, ``truncateByMaxAddress`` with the last valid entry's address).
    """

    def __init__(self, directory: str | os.PathLike, topic: str, queue_id: int, mapped_file_size: int, *, ext=None):
        self.ext = ext
        super().__init__(directory, topic, queue_id, mapped_file_size)

    def flush(self) -> None:
        super().flush()
        if self.ext is not None:
            self.ext.flush()

    def close(self) -> None:
        super().close()
        if self.ext is not None:
            self.ext.close()

    def _recover(self) -> None:
        """Java ``ConsumeQueue.recover`` (scan from the third-to-last file)."""
        index = max(0, len(self.files) - 3)
        process = self.files[index].file_from_offset
        max_ext = 1  # Java maxExtAddr: the last valid entry's tagsCode that is an ext address
        for f in self.files[index:]:
            e = np.frombuffer(f.mm, dtype=CQ_DTYPE)
            valid = (e["commitlog_offset"] >= 0) & (e["size"] > 0)
            n = int(np.argmin(valid)) if not valid.all() else len(e)
            ext = np.flatnonzero(e["tags_code"][:n] <= EXT_MAX_ADDR) if self.ext is not None else ()
            if len(ext):
                max_ext = int(e["tags_code"][ext[-1]])
            del e
            if n:
                last = CQ_ENTRY.unpack_from(f.mm, (n - 1) * CQ_STORE_UNIT_SIZE)
                self.max_physic_offset = last[0] + last[1]
            process = f.file_from_offset + n * CQ_STORE_UNIT_SIZE
            if n < len(valid):
                break
        self._truncate_files(process)
        if self.ext is not None:
            self.ext.recover()
            self.ext.truncate_by_max_address(max_ext)

    # -- positions ----------------------------------------------------------------------------
    @property
    def max_offset_in_queue(self) -> int:
        """Java ``getMaxOffsetInQueue``: number of the next entry."""
        if not self.files:
            return 0
        last = self.files[-1]
        return (last.file_from_offset + last.wrote_position) // CQ_STORE_UNIT_SIZE

    def _last_file(self, start_offset: int) -> tuple[WritableMappedFile | None, bool]:
        """Java ``MappedFileQueue.getLastMappedFile(startOffset, true)``; the flag says
        the file was created as the queue's first file."""
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_full:
            return last, False
        if last is None:
            create_offset = start_offset - (start_offset % self.mapped_file_size)
        else:
            create_offset = last.file_from_offset + self.mapped_file_size
        first = last is None
        f = self._create_file(create_offset)
        if first:
            self.min_logic_offset = create_offset
        return f, first

    # -- writing -------------------------------------------------------------------------------
    def put(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """Java ``ConsumeQueue.putMessagePositionInfo``; ``True`` also when skipped as a
        repeat (as Java returns)."""
        if offset + size <= self.max_physic_offset:
            return True  # "Maybe try to build consume queue repeatedly"
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        f, first = self._last_file(expect)
        if f is None:
            return False
        if first and cq_offset != 0 and f.wrote_position == 0:
            self.min_logic_offset = expect
            for _ in range((expect % self.mapped_file_size) // CQ_STORE_UNIT_SIZE):
                f.append(_PRE_BLANK)  # Java fillPreBlank
        if cq_offset != 0:
            current = f.wrote_position + f.file_from_offset
            if expect < current:
                return True  # "Build consume queue repeatedly"
            # expect > current is Java's "[BUG]logic queue order maybe wrong": it still
            # appends at the write position, and so do we
        self.max_physic_offset = offset + size
        pos = f.wrote_position
        CQ_ENTRY.pack_into(f.mm, pos, offset, size, tags_code)
        f.wrote_position = pos + CQ_STORE_UNIT_SIZE
        self.dirty = True
        return True

    def put_many(self, reqs) -> None:
        """:meth:`put` for many dispatch requests of this queue (tuples with offset,
        size, tagsCode, queue offset at indexes 2, 3, 4, 6), in commitlog order.

        When they continue the queue exactly (next queue offsets, past
        ``maxPhysicOffset``) they are written as numpy blocks, file by file; anything
        else takes the entry-by-entry path, so the bytes are always :meth:`put`'s."""
        i, n = 0, len(reqs)
        while i < n:
            last = self.files[-1] if self.files else None
            r = reqs[i]
            if (
                last is None
                or last.is_full
                or r[2] + r[3] <= self.max_physic_offset
                or r[6] * CQ_STORE_UNIT_SIZE != last.file_from_offset + last.wrote_position
            ):
                self.put(r[2], r[3], r[4], r[6])
                i += 1
                continue
            room = (last.file_size - last.wrote_position) // CQ_STORE_UNIT_SIZE
            chunk = reqs[i : i + room]
            k = len(chunk)
            q0 = r[6]
            if chunk[-1][6] - q0 != k - 1:  # not consecutive: one at a time
                self.put(r[2], r[3], r[4], r[6])
                i += 1
                continue
            view = np.frombuffer(last.mm, dtype=CQ_DTYPE, count=k, offset=last.wrote_position)
            view["commitlog_offset"] = [c[2] for c in chunk]
            view["size"] = [c[3] for c in chunk]
            view["tags_code"] = [c[4] for c in chunk]
            del view
            last.wrote_position += k * CQ_STORE_UNIT_SIZE
            self.max_physic_offset = chunk[-1][2] + chunk[-1][3]
            self.dirty = True
            i += k

    def put_columns(self, offsets: np.ndarray, sizes: np.ndarray, tags_codes: np.ndarray, cq_offsets: np.ndarray) -> None:
        """:meth:`put` for every row of these columns, in order (int64 numpy arrays).

        Exactly :meth:`put`'s rule, row by row, but in runs: rows skipped as repeats
        (``offset + size <= maxPhysicOffset``) change nothing, so a run of them is
        found with one comparison; a run that continues the queue exactly (next queue
        offset each, each ``offset + size`` past the previous) is written as one numpy
        block; any other row takes :meth:`put` itself."""
        n = len(offsets)
        ends = offsets + sizes
        i = 0
        while i < n:
            if ends[i] <= self.max_physic_offset:
                past = np.flatnonzero(ends[i:] > self.max_physic_offset)
                if not len(past):
                    return
                i += int(past[0])
            last = self.files[-1] if self.files else None
            q0 = int(cq_offsets[i])
            if last is None or last.is_full or q0 * CQ_STORE_UNIT_SIZE != last.file_from_offset + last.wrote_position:
                self.put(int(offsets[i]), int(sizes[i]), int(tags_codes[i]), q0)
                i += 1
                continue
            room = (last.file_size - last.wrote_position) // CQ_STORE_UNIT_SIZE
            j = min(n, i + room)
            # the longest prefix that put() would append one after the other
            ok = (cq_offsets[i + 1 : j] == np.arange(q0 + 1, q0 + j - i)) & (ends[i + 1 : j] > ends[i : j - 1])
            if not ok.all():
                j = i + 1 + int(np.argmin(ok))
            k = j - i
            view = np.frombuffer(last.mm, dtype=CQ_DTYPE, count=k, offset=last.wrote_position)
            view["commitlog_offset"] = offsets[i:j]
            view["size"] = sizes[i:j]
            view["tags_code"] = tags_codes[i:j]
            del view
            last.wrote_position += k * CQ_STORE_UNIT_SIZE
            self.max_physic_offset = int(ends[j - 1])
            self.dirty = True
            i = j

    # -- what dispatch hands over -----------------------------------------------------------
    def put_request(self, req) -> None:
        """Java ``putMessagePositionInfoWrapper`` for one dispatch request of this queue."""
        self.put(req[2], req[3], self._ext_tags(req[4], req[5]), req[6])

    def _ext_tags(self, tags_code: int, store_timestamp: int) -> int:
        """With ext files: the address of a new ext unit (the tagsCode when it cannot be written)."""
        if self.ext is None:
            return tags_code
        addr = self.ext.put(tags_code, store_timestamp)
        return addr if addr <= EXT_MAX_ADDR else tags_code

    def put_requests(self, reqs) -> None:
        """The same for many, in order."""
        if self.ext is not None:
            for r in reqs:
                self.put_request(r)
            return
        self.put_many(reqs)

    def put_rows(self, cols, rows: np.ndarray) -> None:
        """The same for rows ``rows`` of a :class:`~rmqlab.scan.dispatch_request.DispatchColumns`."""
        tags = cols.tags_code[rows]
        if self.ext is not None:  # a unit per row, in order, before its entry
            tags = np.asarray([self._ext_tags(t, s) for t, s in zip(tags.tolist(), cols.store_timestamp[rows].tolist())], np.int64)
        self.put_columns(cols.commitlog_offset[rows], cols.msg_size[rows], tags, cols.consume_queue_offset[rows])

    def truncate_dirty(self, phy_offset: int, *, zero_tail: bool = True) -> int:
        """Java ``ConsumeQueue.truncateDirtyLogicFiles``: cut entries pointing at or past
        ``phy_offset``; files whose first entry does are deleted.

        Java only moves the write position and leaves the cut entries' bytes in place
        (the next appends overwrite them).  With ``zero_tail`` (the default) the cut
        slots are zeroed, so that a reader that scans the files without the writer's
        in-memory position (every rmqlab reader, and RocketMQ after the next restart)
        does not see them again.  Returns the number of entries cut.
        """
        cut = 0
        self.max_physic_offset = phy_offset
        while self.files:
            f = self.files[-1]
            e = np.frombuffer(f.mm, dtype=CQ_DTYPE)
            valid = (e["commitlog_offset"] >= 0) & (e["size"] > 0)
            n_valid = int(np.argmin(valid)) if not valid.all() else len(e)
            if n_valid == 0 or int(e["commitlog_offset"][0]) >= phy_offset:
                del e, valid
                cut += n_valid
                f.destroy()
                self.files.pop()
                continue
            offs = e["commitlog_offset"][:n_valid]
            keep = int(np.argmax(offs >= phy_offset)) if (offs >= phy_offset).any() else n_valid
            last = e[keep - 1]
            self.max_physic_offset = int(last["commitlog_offset"]) + int(last["size"])
            del e, valid, offs, last
            cut += n_valid - keep
            f.wrote_position = keep * CQ_STORE_UNIT_SIZE
            f.flushed_position = min(f.flushed_position, f.wrote_position)
            if zero_tail and n_valid > keep:
                f.mm[keep * CQ_STORE_UNIT_SIZE : n_valid * CQ_STORE_UNIT_SIZE] = bytes((n_valid - keep) * CQ_STORE_UNIT_SIZE)
            self.dirty = True
            break
        # no file left: Java keeps the phy_offset it set first (0 included), as the queue's
        # maxPhysicOffset in memory and in getMaxPhyOffsetInConsumeQueue — until 5.5.1's
        # correctMinOffset resets it after recovery (CommitLogDispatcher.correct_min_offsets)
        return cut

    def __repr__(self) -> str:
        return f"ConsumeQueueWriter({self.topic}/{self.queue_id}, entries<{self.max_offset_in_queue}, maxPhysicOffset={self.max_physic_offset})"
