"""The DLedger commitlog, read side (RocketMQ ``DLedgerCommitLog`` over DLedger's
``DLedgerMmapFileStore``; layouts in :mod:`rmqlab.format.dledger`).

Every record sits whole inside one entry, at ``entry pos + 48``: reading a record by
its physical offset is the classic read, in ``dledger-<id>/data/`` instead of
``commitlog/``.  What differs is the walk: from entry to entry (``size``), a blank
(magic −1) moving on to the next file and a zero size ending the log, each entry's
header checked as ``DLedgerMmapFileStore.recover`` checks it (magic, ``pos`` equal to
where it is, ``body size + 48 == size``, indexes one apart, terms never decreasing).
:class:`DLedgerCommitLog` is a :class:`~rmqlab.store.commitlog.CommitLog` with that
walk, so every command that reads the log reads a DLedger store.
"""

from __future__ import annotations

import os
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import StoreFormatError
from ..files import MappedFileQueue
from ..format import dledger as dl
from ..format.record import Record, RecordError, decode_record
from .commitlog import CommitLog

#: the kind of a damaged entry (what verify and the walk report)
DLEDGER_ENTRY = "DLEDGER_ENTRY"

_HEAD = struct.Struct(">iiqqqiiii")
assert _HEAD.size == dl.ENTRY_HEADER_SIZE


@dataclass
class EntryWalk:
    """The entries of one data file, as ``DLedgerMmapFileStore.recover`` walks them:
    in-file positions, sizes, indexes, terms, body CRCs; where the walk stopped
    (``end``, in-file) and why: ``blank`` (a blank entry: the next file goes on),
    ``zero`` (size 0: the end of the log) or ``problem`` (in-file offset, message)."""

    pos: np.ndarray
    size: np.ndarray
    index: np.ndarray
    term: np.ndarray
    body_crc: np.ndarray
    end: int
    blank: bool = False
    zero: bool = False
    problem: tuple[int, str] | None = None
    #: the blank's own size field where there was one (MmapFileList.preAppend writes the bytes left)
    blank_size: int | None = None
    notes: list = field(default_factory=list)

    @property
    def record_positions(self) -> np.ndarray:
        """In-file positions of the records (entry + 48)."""
        return self.pos + dl.ENTRY_HEADER_SIZE

    @property
    def record_sizes(self) -> np.ndarray:
        return self.size - dl.ENTRY_HEADER_SIZE


def walk_entries(buf, file_base: int, *, start: int = 0, stop: int | None = None, last_index: int = -1, last_term: int = -1) -> EntryWalk:
    """The entries of one data file from in-file ``start`` (an entry boundary), checked
    as ``DLedgerMmapFileStore.recover`` checks them; ``last_index``/``last_term``: of the
    entry before (the previous file's last), -1 for none.  ``stop``: entries starting at
    or after it are not walked (a byte range of the file: ``end`` is where the next
    entry starts).  ``buf`` may hold part of a file from position ``file_base`` − its
    file's start: positions are in ``buf``, ``pos`` fields are checked as absolute."""
    n_max = len(buf)
    # compact columns (8 bytes an entry): one file's entries, not a Python int each
    pos, size, index, term, crc = (array("q") for _ in range(5))
    p = start
    out = None
    while True:
        if stop is not None and p >= stop:
            out = EntryWalk(*_arrays(pos, size, index, term, crc), end=p)
            break
        if p + 8 > n_max:
            out = EntryWalk(*_arrays(pos, size, index, term, crc), end=p, zero=True)
            break
        magic, sz = struct.unpack_from(">ii", buf, p)
        if magic == dl.BLANK_MAGIC_CODE:
            out = EntryWalk(*_arrays(pos, size, index, term, crc), end=p, blank=True, blank_size=sz)
            break
        if sz == 0:
            out = EntryWalk(*_arrays(pos, size, index, term, crc), end=p, zero=True)
            break
        problem = None
        if p + dl.ENTRY_HEADER_SIZE > n_max:
            problem = f"an entry header of {dl.ENTRY_HEADER_SIZE} bytes does not fit the {n_max - p} bytes left in the file"
        else:
            magic, sz, idx, trm, at, _ch, _chain, bcrc, body = _HEAD.unpack_from(buf, p)
            if magic != dl.MAGIC_1:
                problem = f"entry magic {magic}, DLedger writes {dl.MAGIC_1} (or -1 for a blank)"
            elif at != file_base + p:
                problem = f"entry says pos {at}, it is at {file_base + p}"
            elif body + dl.ENTRY_HEADER_SIZE != sz or sz <= dl.ENTRY_HEADER_SIZE:
                problem = f"entry size {sz} is not its body size {body} + {dl.ENTRY_HEADER_SIZE}"
            elif p + sz > n_max:
                problem = f"entry of {sz} bytes runs past the end of the file ({n_max - p} bytes left)"
            elif last_index != -1 and idx != last_index + 1:
                problem = f"entry index {idx} follows {last_index}: indexes go one by one"
            elif trm < last_term:
                problem = f"entry term {trm} is below the term {last_term} before it"
        if problem is not None:
            out = EntryWalk(*_arrays(pos, size, index, term, crc), end=p, problem=(p, problem))
            break
        pos.append(p)
        size.append(sz)
        index.append(idx)
        term.append(trm)
        crc.append(bcrc)
        last_index, last_term = idx, trm
        p += sz
    return out


def next_entry(buf, file_base: int, lo: int, hi: int) -> int | None:
    """The position of the first DLedger entry header starting in ``[lo, hi)`` of ``buf``
    (``buf`` starts at log position ``file_base``): magic 1 and ``pos`` equal to where it
    is (``DLedgerEntryCoder``), the mark a walk resynchronises on after damage and a
    byte-range split starts from."""
    hi = min(hi, len(buf) - dl.ENTRY_HEADER_SIZE + 1)
    if hi <= lo:
        return None
    raw = bytes(buf[lo : hi + 3])
    needle = struct.pack(">i", dl.MAGIC_1)
    i = raw.find(needle)
    while 0 <= i and lo + i < hi:
        p = lo + i
        if struct.unpack_from(">q", buf, p + dl.POS_AT)[0] == file_base + p:
            return p
        i = raw.find(needle, i + 1)
    return None


def walk_segments(buf, file_base: int, *, start: int = 0, stop: int | None = None, last_index: int = -1, last_term: int = -1) -> list[EntryWalk]:
    """:func:`walk_entries`, and after an entry that fails its checks, on from the next
    entry header (:func:`next_entry`) for as long as there are any before ``stop``: what
    lies past damage, walked as verify and a lenient scan walk it.  The first segment is
    where DLedger's recovery ends the log."""
    w = walk_entries(buf, file_base, start=start, stop=stop, last_index=last_index, last_term=last_term)
    return [w] + resume_after(buf, file_base, w, stop)


def resume_after(buf, file_base: int, w: EntryWalk, stop: int | None = None) -> list[EntryWalk]:
    """The walks after ``w``'s damage, each from the next entry header."""
    out = []
    while w.problem is not None:
        q = next_entry(buf, file_base, w.problem[0] + 1, len(buf) if stop is None else stop)
        if q is None:
            break
        w = walk_entries(buf, file_base, start=q, stop=stop)
        out.append(w)
    return out


def _arrays(*columns):
    return [np.frombuffer(c, np.int64) if len(c) else np.zeros(0, np.int64) for c in columns]


def read_properties_file(path: Path) -> dict[str, str] | None:
    try:
        return dl.parse_properties(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


class DLedgerCommitLog(CommitLog):
    """Read-only log of a DLedger store (Java ``DLedgerCommitLog``): ``directory`` is
    ``dledger-<selfId>/``; its ``data/`` files are the log's files."""

    def __init__(self, directory: str | os.PathLike, mapped_file_size: int | None = None, *, strict: bool = True, served_end: int | None = None):
        self.dledger_dir = Path(directory)
        data = self.dledger_dir / dl.DATA_DIR
        if not data.is_dir():
            raise StoreFormatError(self.dledger_dir, None, f"a DLedger directory without {dl.DATA_DIR}/")
        self.queue = MappedFileQueue(data, mapped_file_size, strict=strict)
        self.directory = self.queue.directory
        self._served_end = served_end
        #: the last entry's (index, term) of each file walked in order: what the next file's
        #: first entry must follow (a pair a file, not the entries)
        self._tails: dict[int, tuple[int, int]] = {}
        self._recent: tuple[int, EntryWalk] | None = None  # the last file walked in order
        self._index_queue: MappedFileQueue | None = None

    # -- entries -------------------------------------------------------------------------------
    def entry_walks(self) -> Iterator[tuple[object, EntryWalk]]:
        """(file, its entries) for every data file up to the end of the log, as DLedger's
        recovery walks them (a problem or a zero size ends it); one file's entries at a
        time."""
        for f in self.queue.files:
            w = self.walk_of(f)
            yield f, w
            if not w.blank:
                return

    def walk_of(self, f, *, chained: bool = True) -> EntryWalk:
        """The entries of data file ``f``.  ``chained``: the index and term of the file
        before carry over when that file was walked already (a walk in order), else the
        file is checked on its own (a file of a distributed job, or one after the end of
        the log, whose entries do not follow the damage before them)."""
        base = f.file_from_offset
        if chained and self._recent is not None and self._recent[0] == base:
            return self._recent[1]
        last = (-1, -1)
        if chained:
            i = self.queue.index_of(f)
            last = self._tails.get(self.queue.files[i - 1].file_from_offset, last) if i else last
        w = walk_entries(f.buf, base, last_index=last[0], last_term=last[1])
        if chained:
            self._tails[base] = (int(w.index[-1]), int(w.term[-1])) if len(w.index) else last
            self._recent = (base, w)
        return w

    def segments_of(self, f, *, chained: bool = True) -> list[EntryWalk]:
        """:meth:`walk_of`, then the walks past its damage (:func:`resume_after`)."""
        first = self.walk_of(f, chained=chained)
        return [first] + resume_after(f.buf, f.file_from_offset, first)

    def checkpoint(self) -> dict[str, str] | None:
        """``dledger-<id>/checkpoint`` (``committedIndex``, ``endIndex``) or None."""
        return read_properties_file(self.dledger_dir / dl.CHECKPOINT_FILE)

    def term_file(self) -> dict[str, str] | None:
        return read_properties_file(self.dledger_dir / dl.TERM_FILE)

    @property
    def index_directory(self) -> Path:
        return self.dledger_dir / dl.INDEX_DIR

    def _index(self) -> MappedFileQueue | None:
        if self._index_queue is None and self.index_directory.is_dir():
            self._index_queue = MappedFileQueue(self.index_directory, None, strict=False)
        return self._index_queue

    def index_units(self, lo: int, hi: int) -> np.ndarray:
        """Units ``[lo, hi)`` of ``index/`` (offset-named files, unit n at n × 32), as far as
        the files hold them (fewer when they end first)."""
        q = self._index()
        out = []
        n = lo
        while q is not None and n < hi:
            f = q.find(n * dl.INDEX_UNIT_SIZE)
            if f is None:
                break
            a = (n * dl.INDEX_UNIT_SIZE - f.file_from_offset) // dl.INDEX_UNIT_SIZE
            b = min(len(f.buf) // dl.INDEX_UNIT_SIZE, a + hi - n)
            if b <= a:
                break
            out.append(np.frombuffer(f.buf, dl.INDEX_UNIT_DTYPE, b - a, a * dl.INDEX_UNIT_SIZE).copy())
            n += b - a
        return np.concatenate(out) if out else np.zeros(0, dl.INDEX_UNIT_DTYPE)

    def index_units_written_from(self, n: int, chunk: int = 1 << 20) -> int:
        """How many units from unit ``n`` on hold something (magic not 0), a chunk at a time."""
        q = self._index()
        end = q.max_file_end // dl.INDEX_UNIT_SIZE if q is not None else 0
        live = 0
        for lo in range(max(n, 0), end, chunk):
            live += int(np.count_nonzero(self.index_units(lo, min(end, lo + chunk))["magic"] != 0))
        return live

    def close(self) -> None:
        if self._index_queue is not None:
            self._index_queue.close()
        super().close()

    # -- the CommitLog walk, entry by entry -------------------------------------------------------
    def walk(self, start: int | None = None, end: int | None = None, *, check_crc: bool = True, read_body: bool = True) -> Iterator[Record | RecordError]:
        for f, w in self.entry_walks():
            base = f.file_from_offset
            for p in w.record_positions.tolist():
                phy = base + p
                if start is not None and phy < start:
                    continue
                if end is not None and phy >= end:
                    return
                try:
                    rec = decode_record(f.buf, p, file=str(f.path), file_base=base, check_crc=check_crc, read_body=read_body)
                except RecordError as err:
                    yield err
                    return
                if rec is None or rec.is_blank:
                    yield RecordError(str(f.path), p, DLEDGER_ENTRY, "the entry's body is not a commitlog record")
                    return
                yield rec
            if w.problem is not None:
                if end is None or base + w.problem[0] < end:  # (past the range asked for, it is not this walk's)
                    yield RecordError(str(f.path), w.problem[0], DLEDGER_ENTRY, w.problem[1])
                return

    def batches(self, start: int | None = None, end: int | None = None, *, include_body: bool = True, columns=None) -> Iterator:
        """The records as Arrow batches (:mod:`rmqlab.scan.decode` at the entries' record
        positions); a CRC mismatch is a row of its kind, damage raises after the rows
        before it, as :meth:`CommitLog.batches`."""
        from ..scan import decode as fd

        for f, w in self.entry_walks():
            base = f.file_from_offset
            P = w.record_positions
            if start is not None:
                P = P[P + base >= start]
            if end is not None:
                P = P[P + base < end]
            if len(P):
                yield from fd.decode_positions(f.buf, P, file_base=base, file=str(f.path), include_body=include_body, columns=columns, crc_mismatch="flag")
            if end is not None and len(w.pos) and base + int(w.pos[-1]) >= end:
                return
            if w.problem is not None:
                if end is not None and base + w.problem[0] >= end:
                    return  # the damage lies past the range asked for
                raise RecordError(str(f.path), w.problem[0], DLEDGER_ENTRY, w.problem[1])

    def max_offset(self) -> int:
        """Where DLedger's recovery ends the log (``processOffset``: the end of the last
        entry; a blank moves it to the end of its file)."""
        end = self.min_offset
        for f, w in self.entry_walks():
            end = f.file_from_offset + (len(f.buf) if w.blank else w.end)
        return end

    def committed_end(self) -> int | None:
        """The end of the entry ``committedIndex`` names (``DLedgerCommitLog.getData``
        serves nothing at or past it), or None without a checkpoint."""
        cp = self.checkpoint()
        try:
            committed = int(cp[dl.COMMITTED_INDEX_KEY]) if cp and dl.COMMITTED_INDEX_KEY in cp else None
        except ValueError:
            committed = None
        if committed is None:
            return None
        end = self.min_offset
        for f, w in self.entry_walks():
            sel = np.flatnonzero(w.index <= committed)
            if len(sel):
                i = int(sel[-1])
                end = f.file_from_offset + int(w.pos[i] + w.size[i])
        return end

    def served_end(self) -> int:
        if callable(self._served_end):
            self._served_end = self._served_end()
        if self._served_end is None:
            committed = self.committed_end()
            self._served_end = self.max_offset() if committed is None else min(committed, self.max_offset())
        return self._served_end
