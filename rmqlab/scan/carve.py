"""Carving: records found by their magic code, not by following the log's chain.

RocketMQ reads its log as a chain (each record's ``totalSize`` says where the next one
starts); one bad size or CRC ends the chain.  Carving scans bytes for the message magic
codes instead and keeps a candidate at position ``p`` when three independent facts
agree:

* its ``totalSize`` and length fields are consistent (:func:`decode_record` accepts it),
* its self-recorded ``physicalOffset`` equals file base + ``p`` (where it really is),
* its body CRC (and ``__CRC32#`` when present) matches.

Each record found says how sure it is:

``certain``
    all three agree *and* the bytes right after it are another record, a BLANK or the
    zero tail (the chain continues, so the size is right twice).
``likely``
    all three agree but what follows is not a record boundary.
``weak``
    size and position agree but the CRC fails (only with ``include_weak``): the header
    is the record's, the body is damaged.

Recovery carves the bytes it cuts (what it loses, readable); ``rmqlab salvage``
(:mod:`rmqlab.forensics.salvage`) carves a whole store and says of each record what
RocketMQ's next start does with it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

from ..files.extent import nonzero_past
from ..format import commitlog as cl
from ..format.record import Record, RecordError, decode_record

_MAGICS = [struct.pack(">I", m) for m in cl.MESSAGE_MAGICS]
_PREFIX = struct.Struct(">iI")

CERTAIN = "certain"
LIKELY = "likely"
WEAK = "weak"


@dataclass
class Carved:
    """One record found by its magic: where, and how sure (``confidence`` and why)."""

    record: Record
    file: str
    file_offset: int
    confidence: str  # certain | likely | weak
    reason: str


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


def carve(buf, *, file: str = "<bytes>", file_base: int = 0, start: int = 0, include_weak: bool = False, dledger: bool = False) -> Iterator[Carved]:
    """The records of ``buf[start:]`` found by their magic, ascending.  ``dledger``: a
    DLedger data file, where each record is followed by the next entry's header rather
    than by the next record."""
    for pos in find_magic_positions(buf, start):
        try:
            rec = decode_record(buf, pos, file=file, file_base=file_base, check_crc=True)
        except RecordError:
            continue  # sizes disagree: a magic-looking byte pattern inside some body
        if rec is None or rec.is_blank:
            continue
        if rec.stored_physical_offset != file_base + pos:
            continue  # a record copied from elsewhere, or bytes that only look like one
        if not rec.crc_ok:
            if not include_weak:
                continue
            conf, why = WEAK, "size and physicalOffset agree, but the CRC fails: the body is damaged"
        elif (_follows_entry(buf, pos + rec.total_size, file_base) if dledger else _follows_boundary(buf, pos + rec.total_size)):
            conf, why = CERTAIN, "size, physicalOffset and CRC agree, and the next " + ("DLedger entry" if dledger else "record") + " starts right after it"
        else:
            conf, why = LIKELY, "size, physicalOffset and CRC agree; the bytes after it are not a record boundary"
        yield Carved(rec, file, pos, conf, why)


def carve_past(files, end: int, *, include_weak: bool = False) -> Iterator[Carved]:
    """The records readable in the non-zero bytes at or past log offset ``end`` of the
    commitlog ``files`` (mapped files, in order): what a recovery that ends the log at
    ``end`` cuts and can still be read.  Recovery counts them (``RecoveryReport.lost_records``)
    and ``rmqlab salvage`` gives them back: one function, so the two agree."""
    for f, start_in, _ in nonzero_past(files, end):
        yield from carve(f.buf, file=str(f.path), file_base=f.file_from_offset, start=start_in, include_weak=include_weak)
