"""Follow a CommitLog a broker is writing: each record as soon as it is whole.

Java counterpart: what ``ReputMessageService.doReput`` does inside the broker — read the
log from a position, one record after another (``CommitLog.checkMessageAndReturnSize``),
a BLANK sending it to the next file — done here from outside, by another process,
strictly read-only: files are opened read-only and memory-mapped read-only (the page
cache the broker writes through), no lock is taken, no byte written, nothing a broker
could notice.  What a live store does, and what :class:`LogFollower` does about it:

* a record still being copied in (``MappedFile.appendMessage`` copies it into the
  mapping; another process may see half of it): a record is given out only when its
  size, magic, own physicalOffset field and body CRC (and ``__CRC32#`` where present)
  all check; until then the follower waits at it, and after ``settle`` seconds of a
  record that does not check while the log has moved on it reports it once
  (:class:`Stalled`) and keeps waiting (a restart's recovery may rewrite it);
* a file rolling: the BLANK at its end (``CommitLog.DefaultAppendMessageCallback``'s
  END_FILE_MIN_BLANK_LENGTH) moves to the next file, which may not exist yet (wait), or
  exist pre-allocated and all zero (wait);
* the broker's clean-up (``CommitLog.deleteExpiredFile``) deleting files not yet read:
  :class:`Skipped` says which bytes, and following goes on at the oldest file left;
* a broker killed and restarted, whose recovery cut the log before what was already
  given out, then wrote new records over it: the bytes of given-out records are
  checked on every poll (the last one, and back through the ones remembered to find
  where the change starts); :class:`Rewritten` says where, and following goes on from
  there with the new records.
"""

from __future__ import annotations

import mmap
import os
import time
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreFormatError, StoreLayoutError
from ..files.extent import data_end
from ..format import commitlog as cl
from ..format.layout import PHYSICAL_OFFSET_AT
from ..format.record import Record, RecordError, decode_record
from ..rules import COMMITLOG_DIR

#: records remembered to find where a recovery's cut starts (offset, size, CRC of bytes)
REMEMBERED = 4096
#: the same for a stream's micro-batch, kept in its offsets (Spark's checkpoint)
RECENT = 64


@dataclass(frozen=True)
class Skipped:
    """Bytes ``[start, end)`` of the log deleted (the broker's clean-up) before they were read."""

    start: int
    end: int

    def __str__(self) -> str:
        return f"skipped {self.end - self.start} bytes [{self.start}, {self.end}) of the log: their files were deleted before they were read (the broker's clean-up)"


@dataclass(frozen=True)
class Rewritten:
    """Records already given out from ``offset`` up to ``given_end`` are no longer in
    the log as they were: a restart's recovery cut the log there (and new records may
    be there now).  ``exact`` is False when the change reaches back past the records
    remembered: the cut is at or before ``offset``."""

    offset: int
    given_end: int
    exact: bool = True

    def __str__(self) -> str:
        at = f"at {self.offset}" if self.exact else f"at or before {self.offset}"
        return (f"the log was cut {at} after records up to {self.given_end} had been given out (a restart's recovery): "
                f"what was given from there on is no longer in the log; reading on from {self.offset}")


@dataclass(frozen=True)
class Stalled:
    """A record at ``offset`` that has not checked for ``seconds`` while the log moved on."""

    offset: int
    why: str
    seconds: float

    def __str__(self) -> str:
        return f"waiting at {self.offset} for {self.seconds:.0f} s: {self.why}"


@dataclass(frozen=True)
class Extent:
    """Whole records from ``start`` to ``end`` (a record boundary: what a micro-batch of a
    stream reads), ``records`` of them; ``recent`` (offset, size, CRC of its bytes) of
    the last ones, to tell later whether the log still holds them and where a cut
    starts; ``skipped`` bytes deleted before ``start`` could be read (the requested
    start moved to the oldest file)."""

    start: int
    end: int
    records: int
    #: (offset, size, CRC of its bytes) of the last records (at most :data:`RECENT`), oldest first
    recent: tuple = ()
    skipped: Skipped | None = None

    @property
    def last(self) -> tuple | None:
        return self.recent[-1] if self.recent else None


class LogFollower:
    """Records of the log under ``root`` (a store root or its ``commitlog/``), in log
    order, as they become whole.  ``start``: ``"earliest"`` (the oldest file),
    ``"latest"`` (where the log ends now) or a physical offset (a record boundary).
    :meth:`poll` reads what is there now; :meth:`follow` polls on."""

    def __init__(self, root: str | os.PathLike, start: str | int = "earliest", *, settle: float = 5.0):
        root = Path(root)
        self.directory = root / COMMITLOG_DIR if (root / COMMITLOG_DIR).is_dir() else root
        if not self.directory.is_dir():
            raise StoreLayoutError(root, None, f"no {COMMITLOG_DIR}/ directory to follow")
        self.root = root
        self.settle = settle
        self.position: int | None = None
        self._start = start
        self._maps: dict[int, tuple[str, mmap.mmap | None, int]] = {}  # base -> (path, mapping, size)
        self._given: deque[tuple[int, int, int]] = deque(maxlen=REMEMBERED)
        self._waiting: tuple[int, float, bool] | None = None  # (offset, since, reported)

    # -- files --------------------------------------------------------------------------
    def _files(self) -> dict[int, str]:
        """The log's files now: base offset → path (a file deleted and made again under
        its name — a restart's recovery — is a new file: its inode tells)."""
        out = {}
        with os.scandir(self.directory) as it:
            for e in it:
                if len(e.name) == 20 and e.name.isdigit():
                    out[int(e.name)] = f"{e.path}#{e.inode()}"
        return out

    def _map(self, base: int, path: str):
        """The read-only mapping of a file (None while it is empty)."""
        got = self._maps.get(base)
        if got is not None and got[0] == path and got[1] is not None:
            return got[1], got[2]
        try:
            fd = os.open(path.rsplit("#", 1)[0], os.O_RDONLY)
        except FileNotFoundError:
            return None, 0
        try:
            size = os.fstat(fd).st_size
            mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else None
        finally:
            os.close(fd)
        self._maps[base] = (path, mm, size)
        return mm, size

    def _forget(self, keep: dict[int, str]) -> None:
        for base in [b for b in self._maps if b not in keep or self._maps[b][0] != keep[b]]:
            mm = self._maps.pop(base)[1]
            if mm is not None:
                mm.close()

    def close(self) -> None:
        self._forget({})

    def __enter__(self) -> "LogFollower":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- where to start -----------------------------------------------------------------
    def first_position(self) -> int | None:
        """Where following starts (``start`` resolved against the files now), or None
        while the log has no file."""
        files = self._files()
        return self._first_position(files) if files else None

    def _first_position(self, files: dict[int, str]) -> int:
        if self._start == "earliest":
            return min(files)
        if self._start == "latest":
            return self._end_of_records(files)
        return self._boundary(files, int(self._start))

    def _boundary(self, files: dict[int, str], offset: int) -> int:
        """``offset`` when a record (or a BLANK, or the unwritten end) starts there;
        else an error naming the file and offset."""
        base = self._base_of(files, offset)
        if base is None:
            return offset  # deleted already: the first poll says what was skipped
        mm, size = self._map(base, files[base])
        at = offset - base
        if mm is None or at + 8 > size or mm[at : at + 8] == bytes(8):
            return offset  # the end of what is written: wait there
        magic = self._header(mm, at)[1]
        if magic == cl.MAGIC_BLANK or (magic in cl.MESSAGE_MAGICS and at + PHYSICAL_OFFSET_AT + 8 <= size
                                       and int.from_bytes(mm[at + PHYSICAL_OFFSET_AT : at + PHYSICAL_OFFSET_AT + 8], "big", signed=True) == offset):
            return offset
        raise StoreFormatError(self._maps[base][0].rsplit("#", 1)[0], at, f"no record starts at offset {offset}: start at a record boundary (`rmqlab dump` lists them)")

    def _end_of_records(self, files: dict[int, str]) -> int:
        """Where the records end now: the last file whose first bytes are written, walked
        record by record (as ``CommitLog.recoverNormally`` walks its last file)."""
        for base in sorted(files, reverse=True):
            mm, size = self._map(base, files[base])
            if mm is None or size < 8 or mm[:8] == bytes(8):
                continue
            return base + self.walk_records(mm, 0, size)[1]
        return min(files)

    # -- the log's bytes as given out ---------------------------------------------------
    def _bytes_crc(self, files: dict[int, str], offset: int, size: int) -> int | None:
        base = self._base_of(files, offset)
        if base is None:
            return None
        mm, fsize = self._map(base, files[base])
        at = offset - base
        if mm is None or at + size > fsize:
            return None
        return zlib.crc32(mm[at : at + size])

    @staticmethod
    def _base_of(files: dict[int, str], offset: int) -> int | None:
        bases = [b for b in files if b <= offset]
        return max(bases) if bases else None

    def _check_given(self, files: dict[int, str]) -> Rewritten | None:
        """Whether the records given out still hold the bytes they had (the last first;
        then back to where the change starts)."""
        if not self._given:
            return None
        off, size, crc = self._given[-1]
        if self._bytes_crc(files, off, size) == crc:
            return None
        given = list(self._given)
        lo, hi = 0, len(given) - 1  # the first changed record: the changes are a suffix
        while lo < hi:
            mid = (lo + hi) // 2
            o, s, c = given[mid]
            if self._bytes_crc(files, o, s) == c:
                lo = mid + 1
            else:
                hi = mid
        first = given[lo]
        exact = lo > 0 or len(given) < REMEMBERED
        while self._given and self._given[-1][0] >= first[0]:
            self._given.pop()
        return Rewritten(first[0], off + size, exact)

    # -- reading ------------------------------------------------------------------------
    def poll(self, max_records: int | None = None) -> list:
        """What the log holds now past the position: records (:class:`Record`), and
        :class:`Skipped`, :class:`Rewritten`, :class:`Stalled` events, in order."""
        files = self._files()
        self._forget(files)
        if not files:
            return []
        out: list = []
        if self.position is None:
            self.position = self._first_position(files)
        changed = self._check_given(files)
        if changed is not None:
            out.append(changed)
            self.position = changed.offset
        n = 0
        while max_records is None or n < max_records:
            pos = self.position
            first = min(files)
            if pos < first:
                out.append(Skipped(pos, first))
                self.position = pos = first
            base = self._base_of(files, pos)
            mm, size = self._map(base, files[base])
            at = pos - base
            if mm is None or at + 8 > size:
                if at >= size and (base + size) in files:  # past a file's end: the next one
                    self.position = base + size
                    continue
                break
            total, magic = self._header(mm, at)
            if magic == cl.MAGIC_BLANK and total == size - at:
                nxt = base + size
                if nxt not in files:
                    break  # the next file is not there yet
                self.position = nxt
                continue
            rec, why = self._record(mm, size, base, at, total, magic)
            if rec is None:
                stalled = self._wait_at(pos, why, files)
                if stalled is not None:
                    out.append(stalled)
                break
            self._waiting = None
            self._given.append((pos, rec.total_size, zlib.crc32(mm[at : at + rec.total_size])))
            self.position = pos + rec.total_size
            out.append(rec)
            n += 1
        return out

    def _record(self, mm, size: int, base: int, at: int, total: int, magic: int) -> tuple[Record | None, str]:
        """The record at ``at`` when it is whole and checks, else (None, why not yet)."""
        if total == 0 and magic == 0:
            return None, "nothing written here yet"
        if magic not in cl.MESSAGE_MAGICS or total <= 0 or at + total > size:
            return None, f"no record starts here (size {total}, magic {magic:#x})"
        try:
            rec = decode_record(mm, at, file=self._maps[base][0].rsplit("#", 1)[0], file_base=base, check_crc=True)
        except RecordError as err:
            return None, str(err)
        if rec is None or rec.is_blank:
            return None, "nothing written here yet"
        if rec.stored_physical_offset != base + at:
            return None, f"the record here says physicalOffset {rec.stored_physical_offset}: not yet written over"
        if not rec.crc_ok:
            return None, "its CRC does not match (still being copied in?)"
        return rec, ""

    def _wait_at(self, pos: int, why: str, files: dict[int, str]) -> Stalled | None:
        now = time.monotonic()
        if self._waiting is None or self._waiting[0] != pos:
            self._waiting = (pos, now, False)
            return None
        since, reported = self._waiting[1], self._waiting[2]
        if reported or now - since < self.settle or why == "nothing written here yet" and not self._written_past(pos, files):
            return None
        self._waiting = (pos, since, True)
        return Stalled(pos, why, now - since)

    def _written_past(self, pos: int, files: dict[int, str]) -> bool:
        """Whether the log holds bytes past ``pos`` (a later file with data)."""
        return any(b > pos and (self._map(b, p)[0] or b"\0" * 8)[:8] != bytes(8) for b, p in files.items())

    def extent(self, start: int, *, max_records: int | None = None, max_bytes: int | None = None) -> Extent:
        """How far the whole records from ``start`` go now, within ``max_records`` and
        ``max_bytes`` (at least one record when there is one): headers are walked (sizes,
        magics, files rolled at their BLANK), and the last record's CRCs checked — a
        single writer appends under a lock, so the records before a whole one are whole.
        The position is not moved."""
        import numpy as np

        files = self._files()
        self._forget(files)
        if not files:
            return Extent(start, start, 0)
        skipped = None
        pos = start
        if pos < min(files):
            skipped, pos = Skipped(pos, min(files)), min(files)
        begin, n = pos, 0
        tail: deque[int] = deque(maxlen=RECENT + 1)
        while (max_records is None or n < max_records) and (max_bytes is None or pos - begin < max_bytes):
            base = self._base_of(files, pos)
            mm, size = self._map(base, files[base])
            at = pos - base
            if mm is None or at + 8 > size:
                if at >= size and (base + size) in files:
                    pos = base + size
                    continue
                break
            total, magic = self._header(mm, at)
            if magic == cl.MAGIC_BLANK and total == size - at:
                if base + size not in files:
                    break
                pos = base + size
                continue
            positions, stop_at = self.walk_records(mm, at, size)
            if not len(positions):
                break
            ends = np.append(positions[1:], stop_at)
            keep = len(positions)
            if max_records is not None:
                keep = min(keep, max_records - n)
            if max_bytes is not None:
                over = np.flatnonzero(base + ends - begin > max_bytes)
                if len(over):
                    keep = min(keep, max(int(over[0]), 1 if n == 0 and int(over[0]) == 0 else int(over[0])))
            keep = max(keep, 0)
            if not keep:
                break
            n += keep
            tail.extend((base + positions[max(0, keep - RECENT - 1) : keep]).tolist())
            pos = base + int(ends[keep - 1])
            if keep < len(positions) or stop_at < size and not (stop_at + 8 <= size and int.from_bytes(mm[stop_at + 4 : stop_at + 8], "big") == cl.MAGIC_BLANK):
                break  # a limit, or the end of what is written
        if tail:
            at = tail[-1]
            base = self._base_of(files, at)
            mm, size = self._map(base, files[base])
            rec, _ = self._record(mm, size, base, at - base, *self._header(mm, at - base))
            if rec is None:  # still being copied in: the batch ends before it
                pos, n = tail.pop(), n - 1
        recent = []
        for at in list(tail)[-RECENT:]:
            base = self._base_of(files, at)
            mm, size = self._map(base, files[base])
            total = self._header(mm, at - base)[0]
            recent.append((at, total, zlib.crc32(mm[at - base : at - base + total])))
        return Extent(begin, pos, n, tuple(recent), skipped)

    @staticmethod
    def _header(mm, at: int) -> tuple[int, int]:
        """(totalSize, magicCode) of the record at ``at``."""
        return int.from_bytes(mm[at : at + 4], "big", signed=True), int.from_bytes(mm[at + 4 : at + 8], "big")

    @staticmethod
    def walk_records(buf, at: int, stop: int):
        """(positions, where the walk stopped) of the message records of the file
        ``buf`` from ``at`` while ``< stop`` (sizes and magics: Java's record loop;
        compiled where it can be)."""
        import numpy as np

        from ..scan import kernels

        a = np.frombuffer(buf, np.uint8)
        got = kernels.walk(a, at, stop, len(a), 0, cl.FIXED_SIZE_V1_IPV4, (cl.MAGIC_V1, cl.MAGIC_V2))
        if got is not None:
            return got
        out, size = [], len(a)
        while at + 8 <= size and at < stop:
            total, magic = int.from_bytes(a[at : at + 4].tobytes(), "big", signed=True), int.from_bytes(a[at + 4 : at + 8].tobytes(), "big")
            if magic not in cl.MESSAGE_MAGICS or total < cl.FIXED_SIZE_V1_IPV4 or at + total > size:
                break
            out.append(at)
            at += total
        return np.asarray(out, np.int64), at

    def first_changed(self, recent) -> int | None:
        """Of ``recent`` records (an :class:`Extent`'s, oldest first), the index of the
        first whose bytes the log no longer holds (the changes are a suffix: a cut and
        what was written after it), or None when the last one is as it was."""
        if not recent:
            return None
        files = self._files()
        self._forget(files)
        if self._bytes_crc(files, *recent[-1][:2]) == recent[-1][2]:
            return None
        lo, hi = 0, len(recent) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._bytes_crc(files, *recent[mid][:2]) == recent[mid][2]:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def file_start(self, offset: int) -> int:
        """The first offset of the file that holds ``offset`` (a record boundary)."""
        files = self._files()
        base = self._base_of(files, offset)
        return offset if base is None else base

    def follow(self, interval: float = 0.2, *, stop=None, idle_exit: float | None = None):
        """Poll every ``interval`` seconds, yielding what each poll finds; ``stop()``
        true ends it, and so do ``idle_exit`` seconds without anything new."""
        last = time.monotonic()
        while stop is None or not stop():
            got = self.poll()
            yield from got
            if got:
                last = time.monotonic()
            elif idle_exit is not None and time.monotonic() - last >= idle_exit:
                return
            if not got:
                time.sleep(interval)

    def log_end(self) -> int | None:
        """How far the log's files hold written bytes (the last file's data, as the file
        system reports it; page-granular): for how far behind the follower is."""
        files = self._files()
        if not files:
            return None
        base = max(files)
        path = files[base].rsplit("#", 1)[0]
        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            return None
        return base + data_end(path, size)
