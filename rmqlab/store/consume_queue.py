"""A ConsumeQueue, read side (Java ``ConsumeQueue``).

Entries are read in bulk as a numpy structured array whose dtype is derived from
:data:`~rmqlab.format.consumequeue.ConsumeQueueEntry`, so a queue of millions of
entries is one vectorised read, not a Python loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..files import MappedFileQueue
from ..format.consumequeue import CQ_STORE_UNIT_SIZE, PRE_BLANK_SIZE, ConsumeQueueEntry
from ..format.layout import fixed_dtype


#: numpy view of one 20-byte entry (commitlog_offset, size, tags_code), big-endian.
CQ_DTYPE = fixed_dtype(ConsumeQueueEntry)
assert CQ_DTYPE.itemsize == CQ_STORE_UNIT_SIZE


@dataclass(frozen=True, slots=True)
class CqEntry:
    """One consume-queue entry (Java ``CqUnit``)."""

    queue_offset: int
    commitlog_offset: int
    size: int
    tags_code: int

    def to_dict(self) -> dict:
        return {"queue_offset": self.queue_offset, "commitlog_offset": self.commitlog_offset, "size": self.size, "tags_code": self.tags_code}


class ConsumeQueue:
    """Read-only ``consumequeue/<topic>/<queueId>/`` (Java ``ConsumeQueue``)."""

    def __init__(self, directory: str | os.PathLike, topic: str, queue_id: int, mapped_file_size: int | None = None, *, strict: bool = True):
        self.topic = topic
        self.queue_id = queue_id
        self.queue = MappedFileQueue(directory, mapped_file_size, strict=strict)
        self.directory = self.queue.directory
        self._entries: np.ndarray | None = None

    def raw_entries(self) -> np.ndarray:
        """All 20-byte slots of all files, in queue order, as one structured array
        (index = queue offset - first file's start / 20)."""
        if self._entries is None:
            parts = []
            for f in self.queue.files:
                n = len(f.buf) // CQ_STORE_UNIT_SIZE
                parts.append(np.frombuffer(f.buf, dtype=CQ_DTYPE, count=n))
            self._entries = np.concatenate(parts) if parts else np.zeros(0, dtype=CQ_DTYPE)
        return self._entries

    @property
    def first_slot_offset(self) -> int:
        """Queue offset of the first slot of the first file."""
        return self.queue.min_offset // CQ_STORE_UNIT_SIZE

    def valid_range(self, min_commitlog_offset: int = 0) -> tuple[int, int]:
        """``(min_offset, max_offset)`` as Java reports them: min is the first valid
        entry pointing at or after the commitlog's minimum (pre-blank fill skipped),
        max is one past the last entry before the first invalid one."""
        e = self.raw_entries()
        valid = (e["commitlog_offset"] >= 0) & (e["size"] > 0) & (e["size"] != PRE_BLANK_SIZE)
        usable = valid & (e["commitlog_offset"] >= min_commitlog_offset)
        base = self.first_slot_offset
        if not usable.any():
            end = self._end_index(e)
            return base + end, base + end
        first = int(np.argmax(usable))
        end = self._end_index(e, first)
        return base + first, base + end

    def _recover_from(self) -> int:
        """Index of the first slot Java's ``ConsumeQueue.recover`` looks at: it starts at
        the third-to-last file and trusts the files before it as they are (a hole in an
        older file is served as it is, not an end of the queue)."""
        files = self.queue.files
        return sum(len(f.buf) // CQ_STORE_UNIT_SIZE for f in files[: max(0, len(files) - 3)])

    def _end_index(self, e: np.ndarray, start: int = 0) -> int:
        """Index of the first invalid entry at or after ``start`` in the files Java's
        recover scans (from the third-to-last file: see :meth:`_recover_from`)."""
        start = max(start, self._recover_from())
        tail = e[start:]
        invalid = ~((tail["commitlog_offset"] >= 0) & (tail["size"] > 0))
        # pre-blank fill is "valid" by Java's rule but only occurs before the first real entry
        if invalid.any():
            return start + int(np.argmax(invalid))
        return start + len(tail)

    def entries(self, min_commitlog_offset: int = 0) -> list[CqEntry]:
        lo, hi = self.valid_range(min_commitlog_offset)
        e = self.raw_entries()
        base = self.first_slot_offset
        return [
            CqEntry(q, int(r["commitlog_offset"]), int(r["size"]), int(r["tags_code"]))
            for q, r in zip(range(lo, hi), e[lo - base : hi - base])
        ]

    def get(self, queue_offset: int) -> CqEntry | None:
        """The entry at ``queue_offset`` or ``None`` when it is outside the files."""
        e = self.raw_entries()
        i = queue_offset - self.first_slot_offset
        if i < 0 or i >= len(e):
            return None
        r = e[i]
        return CqEntry(queue_offset, int(r["commitlog_offset"]), int(r["size"]), int(r["tags_code"]))

    def max_physic_offset(self, min_commitlog_offset: int = 0) -> int:
        """End of the record the last valid entry points at (``offset + size``)."""
        lo, hi = self.valid_range(min_commitlog_offset)
        if hi <= lo:
            return -1
        r = self.raw_entries()[hi - 1 - self.first_slot_offset]
        return int(r["commitlog_offset"]) + int(r["size"])

    def close(self) -> None:
        self._entries = None
        self.queue.close()
