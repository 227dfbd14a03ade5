"""Salvage: find records that RocketMQ's recovery throws away.

RocketMQ's recovery (Java ``CommitLog.recoverAbnormally``) walks the log from a
start file and stops at the *first* record whose magic, size or body CRC is wrong;
everything after that point is cut, even when it holds perfectly good records (a
single flipped bit mid-file loses the rest of the file, and truncation leaves the old
bytes of cut records in place).  Salvage ignores the chain and scans the bytes for
the message magic codes instead.  A candidate at position ``p`` is accepted when
three independent facts agree:

* its ``totalSize`` and length fields are consistent (:func:`decode_record` accepts it),
* its self-recorded ``physicalOffset`` equals file base + ``p`` (where it really is),
* its body CRC (and ``__CRC32#`` when present) matches.

Each accepted record says where it was found and how sure we are:

``certain``
    all three agree *and* the bytes right after it are another record, a BLANK or the
    zero tail (the chain continues, so the size is right twice).
``likely``
    all three agree but what follows is not a record boundary.
``weak``
    size and position agree but the CRC fails (only with ``include_weak``): the header
    is the record's, the body is damaged.

and ``where`` is ``in-log`` (RocketMQ's walk reaches it), or ``after-cut`` (past the
point where RocketMQ's walk stops: recovery would throw it away).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..rules import COMMITLOG_DIR
from ..errors import StoreFormatError
from ..files import MappedFile, MappedFileQueue
from ..format import commitlog as cl
from ..scan.acceptance import scan_file
from ..format.record import Record, RecordError, decode_record

_MAGICS = [struct.pack(">I", m) for m in cl.MESSAGE_MAGICS]
_PREFIX = struct.Struct(">iI")

CERTAIN = "certain"
LIKELY = "likely"
WEAK = "weak"
IN_LOG = "in-log"
AFTER_CUT = "after-cut"


@dataclass
class SalvagedRecord:
    """One record found by scanning for magic codes."""

    record: Record
    file: str
    file_offset: int
    confidence: str  # certain | likely | weak
    where: str  # in-log | after-cut
    reason: str  # a sentence: why this confidence

    @property
    def physical_offset(self) -> int:
        return self.record.physical_offset

    def to_dict(self) -> dict:
        """``rmqlab dump --json`` keys plus a ``salvage`` object."""
        d = self.record.to_dict()
        d["salvage"] = {
            "file": self.file,
            "file_offset": self.file_offset,
            "confidence": self.confidence,
            "where": self.where,
            "reason": self.reason,
        }
        return d


def _file_base(path: Path) -> int:
    return int(path.name) if path.name.isdigit() and len(path.name) == 20 else 0


def find_magic_positions(buf, start: int = 0, end: int | None = None) -> list[int]:
    """Record starts (magic position − 4) of every V1/V2 magic in ``buf[start:end]``, ascending.

    ``bytes.find`` runs at memory speed; this is the whole cost of a scan of clean bytes.
    """
    end = len(buf) if end is None else end
    # mmap and bytes search at memory speed; a memoryview over a whole mmap searches its object
    data = buf.obj if isinstance(buf, memoryview) and hasattr(buf.obj, "find") and len(buf.obj) == len(buf) else buf
    if not hasattr(data, "find"):
        data = bytes(buf)
    lo = max(start + 4, 4)
    # CPython 3.11.0-3.11.3 (gh-105235) read one byte past the end of the searched range;
    # for an mmap searched to its very end that byte can lie outside the mapping (a
    # commitlog's size is a multiple of the page size): the process dies of SIGSEGV.
    # So an mmap is searched only up to its last byte, and what is left is searched in
    # a small copy (bytes end with a NUL of their own).
    safe_end = end if isinstance(data, (bytes, bytearray)) else min(end, len(data) - 1)
    out: list[int] = []
    for magic in _MAGICS:
        i = data.find(magic, lo, safe_end) if safe_end > lo else -1
        while i >= 0:
            out.append(i - 4)
            i = data.find(magic, i + 1, safe_end)
    if safe_end < end:
        t0 = max(lo, safe_end - len(_MAGICS[0]) + 1)  # magics that end past safe_end start here at the earliest
        tail = bytes(data[t0:end])
        for magic in _MAGICS:
            i = tail.find(magic)
            while i >= 0:
                if t0 + i + len(magic) > safe_end:  # not found above already
                    out.append(t0 + i - 4)
                i = tail.find(magic, i + 1)
    out.sort()
    return out


def _follows_boundary(buf, pos: int) -> bool:
    """True when ``pos`` starts a record, a BLANK, or the zero tail (or is the file end)."""
    left = len(buf) - pos
    if left == 0:
        return True
    if left < 8:
        return not any(bytes(buf[pos:]))
    size, magic = _PREFIX.unpack_from(buf, pos)
    if magic == cl.MAGIC_BLANK:
        return size == left or size > 0
    if size == 0 and magic == 0:
        return True
    return magic in cl.MESSAGE_MAGICS and cl.FIXED_SIZE_V1_IPV4 <= size <= left


def _follows_entry(buf, pos: int, file_base: int) -> bool:
    """True when ``pos`` starts a DLedger entry (magic 1 and ``pos`` where it is), a
    DLedger blank, the zero tail, or is the file end (``MmapFileList`` / ``DLedgerEntryCoder``)."""
    from ..format import dledger as dl

    left = len(buf) - pos
    if left == 0:
        return True
    if left < dl.ENTRY_HEADER_SIZE:
        return not any(bytes(buf[pos:])) or (left >= 4 and struct.unpack_from(">i", buf, pos)[0] == dl.BLANK_MAGIC_CODE)
    magic, size = struct.unpack_from(">ii", buf, pos)
    if magic == dl.BLANK_MAGIC_CODE or (magic == 0 and size == 0):
        return True
    return magic == dl.MAGIC_1 and struct.unpack_from(">q", buf, pos + dl.POS_AT)[0] == file_base + pos


def log_end_in_file(buf) -> int | None:
    """Where RocketMQ's chain walk stops in this file (the first record its acceptance
    rule refuses, CRC included, or the zero tail); ``None`` when the walk leaves the file
    through a BLANK or at its last byte.  Recovery's own scan
    (:func:`rmqlab.scan.acceptance.scan_file`), vectorised."""
    s = scan_file(buf)
    return None if s.blank or s.end >= len(buf) else s.end


def salvage_buffer(
    buf,
    *,
    file: str = "<bytes>",
    file_base: int = 0,
    log_end: int | None = None,
    start: int = 0,
    include_weak: bool = False,
    include_in_log: bool = True,
    dledger: bool = False,
) -> Iterator[SalvagedRecord]:
    """Scan one file's bytes; ``log_end`` is the in-file position where RocketMQ's walk
    stops (``None``: the walk passes this whole file, everything is in-log).
    ``dledger``: a DLedger data file, where each record is followed by the next entry's
    header rather than by the next record."""
    if not include_in_log:  # only what lies past the cut: nothing before it is read
        if log_end is None:
            return
        start = max(start, log_end)
    for pos in find_magic_positions(buf, start):
        try:
            rec = decode_record(buf, pos, file=file, file_base=file_base, check_crc=True)
        except RecordError:
            continue  # sizes disagree: a magic-looking byte pattern inside some body
        if rec is None or rec.is_blank:
            continue
        where = AFTER_CUT if (log_end is not None and pos >= log_end) else IN_LOG
        if where == IN_LOG and not include_in_log:
            continue
        if rec.stored_physical_offset != file_base + pos:
            continue  # a record copied from elsewhere, or bytes that only look like one
        crc = rec.crc_ok
        if not crc:
            if not include_weak:
                continue
            conf, why = WEAK, "size and physicalOffset agree, but the CRC fails: the body is damaged"
        elif (_follows_entry(buf, pos + rec.total_size, file_base) if dledger else _follows_boundary(buf, pos + rec.total_size)):
            conf, why = CERTAIN, "size, physicalOffset and CRC agree, and the next " + ("DLedger entry" if dledger else "record") + " starts right after it"
        else:
            conf, why = LIKELY, "size, physicalOffset and CRC agree; the bytes after it are not a record boundary"
        yield SalvagedRecord(rec, file, pos, conf, where, why)


def salvage_path(path: str | os.PathLike, *, include_weak: bool = False, include_in_log: bool = False, mapped_file_size: int | None = None) -> list[SalvagedRecord]:
    """:func:`iter_salvage` as a list (small stores, tests)."""
    return list(iter_salvage(path, include_weak=include_weak, include_in_log=include_in_log, mapped_file_size=mapped_file_size))


def iter_salvage(path: str | os.PathLike, *, include_weak: bool = False, include_in_log: bool = False, mapped_file_size: int | None = None,
                 more_dirs: tuple = ()) -> Iterator[SalvagedRecord]:
    """Salvage a single commitlog file or a whole store (its ``commitlog/`` directory),
    record by record as found (a capture of any size in bounded memory).

    For a store, ``where`` follows RocketMQ's walk across files: once the walk stops,
    every later file is after the cut too.  For a single file only that file's walk is
    known.  By default only ``after-cut`` records are returned (what recovery loses).
    A path that is neither a commitlog file, a ``commitlog/`` directory nor a store
    root is refused (:class:`StoreFormatError`), before anything is read.
    """
    path = Path(path)
    if not path.exists():
        raise StoreFormatError(path, None, "no such file or directory")
    if path.is_file():
        return _salvage_file(MappedFile(path, _file_base(path)), include_weak, include_in_log)
    from ..store.layout import dledger_log_dir

    dl_dir = dledger_log_dir(path)
    if dl_dir is not None or (path.name == "data" and path.parent.name.startswith("dledger-")):
        return _salvage_dledger(dl_dir or path.parent, mapped_file_size, include_weak, include_in_log)
    directory = path / COMMITLOG_DIR if (path / COMMITLOG_DIR).is_dir() else path
    if not any(p.is_file() and p.name.isdigit() for p in directory.iterdir()):
        what = f"its {COMMITLOG_DIR}/ holds no commitlog file" if directory != path else f"neither a store root (no {COMMITLOG_DIR}/) nor a commitlog directory (no offset-named files)"
        raise StoreFormatError(path, None, f"nothing to salvage: {what}")
    # more_dirs: the other directories of a log spread over several (MultiPathMappedFileQueue.load)
    return _salvage_files(MappedFileQueue([directory, *more_dirs], mapped_file_size, strict=False), include_weak, include_in_log)


def _salvage_dledger(dledger_dir: Path, mapped_file_size: int | None, include_weak: bool, include_in_log: bool) -> Iterator[SalvagedRecord]:
    """A DLedger log (``dledger-<id>/``): the log ends where DLedger's recovery ends it
    (:class:`~rmqlab.store.dledger.DLedgerCommitLog`), records are found by their magic
    and self-recorded offset as in a commitlog file, and followed by an entry header."""
    from ..store.dledger import DLedgerCommitLog

    log = DLedgerCommitLog(dledger_dir, mapped_file_size, strict=False)
    try:
        end = log.max_offset()
        for f in log.queue.files:
            in_file = end - f.file_from_offset
            log_end = None if in_file >= len(f.buf) else max(0, in_file)
            yield from salvage_buffer(f.buf, file=str(f.path), file_base=f.file_from_offset, log_end=log_end, include_weak=include_weak,
                                      include_in_log=include_in_log, dledger=True)
    finally:
        log.close()


def _salvage_file(mf: MappedFile, include_weak: bool, include_in_log: bool) -> Iterator[SalvagedRecord]:
    try:
        yield from salvage_buffer(mf.buf, file=str(mf.path), file_base=mf.file_from_offset, log_end=log_end_in_file(mf.buf), include_weak=include_weak, include_in_log=include_in_log)
    finally:
        mf.close()


def _salvage_files(queue: MappedFileQueue, include_weak: bool, include_in_log: bool) -> Iterator[SalvagedRecord]:
    try:
        cut = False
        for f in queue.files:
            buf = f.buf
            if cut:
                end: int | None = 0
            else:
                end = log_end_in_file(buf)
                if end is not None:
                    cut = True
            yield from salvage_buffer(buf, file=str(f.path), file_base=f.file_from_offset, log_end=end, include_weak=include_weak, include_in_log=include_in_log)
    finally:
        queue.close()
