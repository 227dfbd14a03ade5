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
    """One consume-queue entry (Java ``CqUnit``): where a queue's message lies in the log.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     store.consume_queue("Orders", 1).get(3)
    CqEntry(queue_offset=3, commitlog_offset=5669, size=402, tags_code=2061557075)
    """

    queue_offset: int
    commitlog_offset: int
    size: int
    tags_code: int

    def to_dict(self) -> dict:
        return {"queue_offset": self.queue_offset, "commitlog_offset": self.commitlog_offset, "size": self.size, "tags_code": self.tags_code}


class QueueUnits:
    """What a queue answers from its units as ``parts(lo, hi)`` (queue offset of the
    first, structured units with ``commitlog_offset``, ``size``, ``tags_code``) and
    ``valid_range``: shared by the file queue and the RocksDB queue."""

    def parts(self, lo: int | None = None, hi: int | None = None) -> list[tuple[int, np.ndarray]]:
        raise NotImplementedError

    def valid_range(self, min_commitlog_offset: int = 0) -> tuple[int, int]:
        raise NotImplementedError

    def entries(self, min_commitlog_offset: int = 0) -> list[CqEntry]:
        return list(self.iter_entries(min_commitlog_offset))

    def iter_entries(self, min_commitlog_offset: int = 0, chunk: int = 1 << 16):
        """The valid entries as :class:`CqEntry`, in queue order, a chunk at a time."""
        lo, hi = self.valid_range(min_commitlog_offset)
        for q0, e in self.parts(lo, hi):
            for i in range(0, len(e), chunk):
                part = e[i : i + chunk]
                yield from (CqEntry(q, o, s, t) for q, o, s, t in zip(
                    range(q0 + i, q0 + i + len(part)), part["commitlog_offset"].tolist(), part["size"].tolist(), part["tags_code"].tolist()))

    def get(self, queue_offset: int) -> CqEntry | None:
        """The entry at ``queue_offset`` or ``None`` when no unit is there."""
        got = self.parts(queue_offset, queue_offset + 1)
        if not got:
            return None
        r = got[0][1][0]
        return CqEntry(queue_offset, int(r["commitlog_offset"]), int(r["size"]), int(r["tags_code"]))


class ConsumeQueue(QueueUnits):
    """Read-only ``consumequeue/<topic>/<queueId>/`` (Java ``ConsumeQueue``): 20-byte
    units by queue offset; :meth:`valid_range` is Java's ``[minOffsetInQueue,
    maxOffsetInQueue)``, :meth:`where` the file and byte of a unit.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     cq = store.consume_queue("Orders", 1)
    ...     print(cq.valid_range(), cq.file_count, cq.get(0).commitlog_offset)
    ...     file, byte = cq.where(3)
    (0, 125) 3 0
    >>> file.rsplit("/", 3)[1:], byte
    (['Orders', '1', '00000000000000000000'], 60)
    """

    #: what ``info`` calls this kind of queue
    KIND = "consume queue"

    def __init__(self, directory: str | os.PathLike, topic: str, queue_id: int, mapped_file_size: int | None = None, *, strict: bool = True):
        self.topic = topic
        self.queue_id = queue_id
        self.queue = MappedFileQueue(directory, mapped_file_size, strict=strict)
        self.directory = self.queue.directory
        self._range: tuple[int, tuple[int, int]] | None = None

    def parts(self, lo: int | None = None, hi: int | None = None) -> list[tuple[int, np.ndarray]]:
        """The 20-byte slots file by file, as ``(queue offset of the first, slots)``:
        structured views of the mapped files, not copies (a queue of any length costs
        no memory), cut to queue offsets ``[lo, hi)`` when given."""
        out = []
        q = self.first_slot_offset
        for f in self.queue.files:
            n = len(f.buf) // CQ_STORE_UNIT_SIZE
            a, b = q, q + n
            if hi is not None:
                b = min(b, hi)
            if lo is not None:
                a = max(a, lo)
            if a < b:
                out.append((a, np.frombuffer(f.buf, dtype=CQ_DTYPE, count=b - q)[a - q :]))
            q += n
        return out

    @property
    def first_slot_offset(self) -> int:
        """Queue offset of the first slot of the first file."""
        return self.queue.min_offset // CQ_STORE_UNIT_SIZE

    @property
    def slot_end(self) -> int:
        """Queue offset one past the last slot of the last file."""
        return self.first_slot_offset + sum(len(f.buf) // CQ_STORE_UNIT_SIZE for f in self.queue.files)

    def valid_range(self, min_commitlog_offset: int = 0) -> tuple[int, int]:
        """``(min_offset, max_offset)`` as Java reports them: min is the first valid
        entry pointing at or after the commitlog's minimum (pre-blank fill skipped),
        max is one past the last entry before the first invalid one."""
        if self._range is None or self._range[0] != min_commitlog_offset:
            first = None
            head = self.parts(0, 1) if self.first_slot_offset == 0 else []
            if head and int(head[0][1]["commitlog_offset"][0]) >= min_commitlog_offset and int(head[0][1]["size"][0]) != PRE_BLANK_SIZE:
                # Java correctMinOffset: minLogicOffset starts at 0, and while the first
                # file holds queue offset 0 it stays there when that unit's offset field
                # is at or past the log's min ("intact"), whatever its size: a zeroed
                # first unit is served (as no message), not skipped.  (Pre-blank fill is
                # skipped: the queue that wrote it set its min past it, putMessagePositionInfo.)
                first = 0
            end = None
            if first is None and self.queue.files:
                # Java correctMinOffset: when the queue's last unit points below the log's min,
                # the queue holds nothing valid (min = its end); else it searches the FIRST
                # file only ("the consume-queue deletion procedure ensures the last entry
                # points to somewhere valid") and leaves minLogicOffset where load put it (0)
                # when no unit there points at or past the log's min (checked live:
                # tests/oracle/test_min_offset.py)
                end = self._end(self.first_slot_offset)
                last = self.get(end - 1) if end > self.first_slot_offset else None
                if last is not None and last.commitlog_offset >= min_commitlog_offset:
                    q, e = self.parts(self.first_slot_offset, self.first_slot_offset + len(self.queue.files[0].buf) // CQ_STORE_UNIT_SIZE)[0]
                    usable = (e["commitlog_offset"] >= min_commitlog_offset) & (e["size"] > 0) & (e["size"] != PRE_BLANK_SIZE)
                    first = q + int(np.argmax(usable)) if usable.any() else 0
            if first is not None or end is None:
                end = self._end(self.first_slot_offset if first is None else first)
            self._range = (min_commitlog_offset, (end if first is None else first, end))
        return self._range[1]

    def _recover_from(self) -> int:
        """Queue offset of the first slot Java's ``ConsumeQueue.recover`` looks at: it
        starts at the third-to-last file and trusts the files before it as they are (a
        hole in an older file is served as it is, not an end of the queue)."""
        files = self.queue.files
        return self.first_slot_offset + sum(len(f.buf) // CQ_STORE_UNIT_SIZE for f in files[: max(0, len(files) - 3)])

    def _end(self, start: int) -> int:
        """Queue offset of the first invalid entry at or after ``start`` in the files
        Java's recover scans (from the third-to-last file: see :meth:`_recover_from`)."""
        start = max(start, self._recover_from())
        for q, e in self.parts(lo=start):
            # pre-blank fill is "valid" by Java's rule but only occurs before the first real entry
            invalid = ~((e["commitlog_offset"] >= 0) & (e["size"] > 0))
            if invalid.any():
                return q + int(np.argmax(invalid))
        return max(start, self.slot_end)

    def max_physic_offset(self, min_commitlog_offset: int = 0) -> int:
        """End of the record the last valid entry points at (``offset + size``)."""
        lo, hi = self.valid_range(min_commitlog_offset)
        if hi <= lo:
            return -1
        r = self.get(hi - 1)
        return r.commitlog_offset + r.size

    def last_unit_end(self, min_commitlog_offset: int = 0) -> int:
        """Where the record of the last valid unit ends (-1 without one): how far into
        the log this queue refers."""
        return self.max_physic_offset(min_commitlog_offset)

    def where(self, queue_offset: int) -> tuple[str, int]:
        """(file, byte in it) of the unit at ``queue_offset``, for findings and errors
        (the directory and the byte across the queue when no file holds it)."""
        pos = queue_offset * CQ_STORE_UNIT_SIZE
        f = self.queue.find(pos)
        return (str(f.path), pos - f.file_from_offset) if f else (str(self.directory), pos)

    @property
    def file_count(self) -> int:
        return len(self.queue.files)

    def describe(self) -> str:
        """Where the units are, in a line."""
        return f"{self.file_count} file(s) in {self.directory}"

    def close(self) -> None:
        self._range = None
        self.queue.close()


class ConsumeQueueExt:
    """The ext files of one queue (Java ``ConsumeQueueExt``, ``enableConsumeQueueExt``):
    ``consumequeue_ext/<topic>/<queueId>/``, offset-named; a consume-queue unit whose
    tagsCode is an ext address (:func:`~rmqlab.format.consumequeue.is_ext_addr`) finds
    its real tagsCode here."""

    def __init__(self, directory: str | os.PathLike, mapped_file_size: int | None = None):
        self.queue = MappedFileQueue(directory, mapped_file_size, strict=False)
        self.directory = self.queue.directory

    def unit(self, address: int):
        """The unit at ext ``address`` (Java ``ConsumeQueueExt.get``), parsed; raises
        :class:`~rmqlab.errors.StoreFormatError` naming file and offset when none is there."""
        from ..errors import StoreFormatError
        from ..format.consumequeue import EXT_UNIT_MIN_SIZE, CqExtUnit, ext_offset

        off = ext_offset(address)
        f = self.queue.find(off)
        if f is None:
            raise StoreFormatError(self.directory, off, f"no ext file holds ext offset {off} (address {address})")
        pos = off - f.file_from_offset
        head = bytes(f.buf[pos : pos + EXT_UNIT_MIN_SIZE])
        if len(head) < EXT_UNIT_MIN_SIZE or int.from_bytes(head[:2], "big", signed=True) < EXT_UNIT_MIN_SIZE:
            raise StoreFormatError(f.path, pos, f"no ext unit here (ext address {address}): size {int.from_bytes(head[:2], 'big', signed=True) if len(head) >= 2 else None}")
        size = int.from_bytes(head[:2], "big", signed=True)
        return CqExtUnit.parse(bytes(f.buf[pos : pos + size]))

    def tags_codes(self, addresses: np.ndarray) -> tuple[np.ndarray, list[tuple[int, str, str, int | None]]]:
        """The tagsCodes the units at ``addresses`` hold, read a file at a time, and the
        ones that cannot be read: (index, message, file, in-file offset)."""
        from ..format.consumequeue import EXT_UNIT_MIN_SIZE, ext_offsets, ext_tags_at

        addresses = np.asarray(addresses, np.int64)
        out = addresses.copy()
        offsets = ext_offsets(addresses)
        read = np.zeros(len(addresses), bool)
        where: dict[int, tuple[str, int]] = {}
        for f in self.queue.files:
            inside = np.flatnonzero((offsets >= f.file_from_offset) & (offsets + EXT_UNIT_MIN_SIZE <= f.file_from_offset + len(f.buf)))
            if not len(inside):
                continue
            pos = offsets[inside] - f.file_from_offset
            code, ok = ext_tags_at(np.frombuffer(f.buf, np.uint8), pos)
            out[inside[ok]] = code[ok]
            read[inside[ok]] = True
            for i, p in zip(inside[~ok].tolist(), pos[~ok].tolist()):
                where[i] = (str(f.path), p)
        bad = []
        for i in np.flatnonzero(~read).tolist():
            file, off = where.get(i, (str(self.directory), int(offsets[i])))
            why = f"no ext unit here (ext address {int(addresses[i])})" if i in where else f"no ext file holds ext offset {int(offsets[i])} (address {int(addresses[i])})"
            bad.append((i, why, file, off))
        return out, bad

    def close(self) -> None:
        self.queue.close()
