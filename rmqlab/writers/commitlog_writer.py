"""The CommitLog, write side (Java ``CommitLog`` + ``MappedFileQueue`` +
``AllocateMappedFileService`` + ``DefaultAppendMessageCallback.doAppend``).

Files of ``mappedFileSizeCommitLog`` bytes named by their start offset.  A record
is written straight into the mapped file at the write position; when
``recordSize + 8`` does not fit in what is left, an 8-byte BLANK
``(bytesLeft, 0xCBD43194)`` closes the file and the record goes to the next one
(Java ``END_OF_FILE``).  The next file is created one step ahead (Java's
allocate service pre-allocates ``nextNextFilePath``) and deleted again on a
clean shutdown, as Java does.

The record layout is packed with the ``struct`` s of :mod:`rmqlab.format.encode`
(formats derived from :data:`rmqlab.format.record.HEADER_FORMAT`, itself derived from
the construct schema); tests check the encoder against ``MessageRecord.build`` and
the engine's records against RocketMQ's own files.
"""

from __future__ import annotations

import errno
import os
import re
import struct
import threading
import zlib
from pathlib import Path

from ..errors import StoreFormatError, StoreLayoutError
from ..files.mapped_file_queue import file_name_for_offset
from ..format import commitlog as cl
from ..format.encode import record_packer
from ..format.record import PROPERTY_CRC_TAIL, encode_crc_digits
from ..rules import fits_in_file
from .mapped_file import WritableMappedFile, fsync_directory

_NAME = re.compile(r"^\d{20}$")
_BLANK = struct.Struct(">iI")
class CommitLogWriter:
    """``commitlog/`` as a queue of writable mapped files.

    ``max_offset`` is the end of the last record written (Java ``getMaxOffset``),
    ``flushed_where`` how far everything is known to be on disk and
    ``flushed_timestamp`` the store timestamp of the newest record there: by this
    writer's own :meth:`flush`, or by the C group commit when one is attached
    (:meth:`attach_forcer`).
    """

    def __init__(self, directory: str | os.PathLike, mapped_file_size: int, *, preallocate: bool = True):
        self.directory = Path(directory)
        self.mapped_file_size = mapped_file_size
        self.preallocate = preallocate
        self.files: list[WritableMappedFile] = []
        self.next_file: WritableMappedFile | None = None  # pre-allocated, not yet written
        self.max_offset = 0
        self._flushed_where = 0
        self._flushed_timestamp = 0
        self._forcer = None  # rmqlab.engine._group_commit.GroupCommit, forcing from its own thread
        self.store_timestamp = 0  # of the last record appended (Java MappedFile.storeTimestamp)
        self._flush_lock = threading.Lock()  # flush service and explicit flushes
        self.directory.mkdir(parents=True, exist_ok=True)

    # -- loading ---------------------------------------------------------------------------
    def existing_files(self) -> list[Path]:
        return sorted(p for p in self.directory.iterdir() if p.is_file() and _NAME.match(p.name))

    def load(self, end_offset: int) -> None:
        """Map the existing files and put the write position at ``end_offset`` (where
        recovery says the log ends).  Files wholly past it are deleted, the one holding
        it is positioned there (Java ``MappedFileQueue.truncateDirtyFiles``); the bytes
        after it are left as they are, as Java leaves them."""
        paths = self.existing_files()
        prev = None
        for p in paths:
            start = int(p.name)
            size = p.stat().st_size
            if size == 0 and p == paths[-1]:
                p.unlink()
                continue
            if size != self.mapped_file_size:
                raise StoreLayoutError(p, None, f"commitlog file is {size} bytes, expected mappedFileSizeCommitLog={self.mapped_file_size}")
            if prev is not None and start != prev + self.mapped_file_size:
                raise StoreLayoutError(p, None, f"name says offset {start}, but the previous file starts at {prev}")
            prev = start
            if start > end_offset:
                p.unlink()  # wholly past the end of the log
                continue
            f = WritableMappedFile(p, self.mapped_file_size, start, create=False)
            f.wrote_position = f.flushed_position = min(self.mapped_file_size, end_offset - start)
            self.files.append(f)
        self.max_offset = self.flushed_where = end_offset
        fsync_directory(self.directory)

    # -- files -------------------------------------------------------------------------------
    @property
    def flushed_where(self) -> int:
        forcer = self._forcer
        return self._flushed_where if forcer is None else max(self._flushed_where, forcer.flushed)

    @flushed_where.setter
    def flushed_where(self, value: int) -> None:
        self._flushed_where = value

    @property
    def flushed_timestamp(self) -> int:
        """Store timestamp of the newest record known to be on disk (Java
        ``MappedFileQueue.getStoreTimestamp``): what the checkpoint's physicMsgTimestamp
        may say."""
        forcer = self._forcer
        return self._flushed_timestamp if forcer is None else max(self._flushed_timestamp, forcer.flushed_timestamp)

    def attach_forcer(self, forcer) -> None:
        """Let a group commit that forces from its own thread (the C module
        :mod:`rmqlab.engine._group_commit`) know every file: those mapped now, and from
        here on each file as it joins or leaves the queue."""
        for f in self.files:
            forcer.add_file(f.file_from_offset, f.fd)
        self._forcer = forcer

    def detach_forcer(self) -> None:
        """After the forcer stopped: take over how far it got, and forget its files."""
        forcer, self._forcer = self._forcer, None
        if forcer is not None:
            self._flushed_where = max(self._flushed_where, forcer.flushed)
            self._flushed_timestamp = max(self._flushed_timestamp, forcer.flushed_timestamp)
            for f in self.files:
                forcer.remove_file(f.file_from_offset)

    @property
    def min_offset(self) -> int:
        return self.files[0].file_from_offset if self.files else 0

    def _create(self, start: int) -> WritableMappedFile:
        path = self.directory / file_name_for_offset(start)
        try:
            f = WritableMappedFile(path, self.mapped_file_size, start)
        except OSError as exc:
            raise StoreFormatError(path, None, f"cannot create commitlog file: {exc}") from None
        fsync_directory(self.directory)  # the new name must survive a crash too
        return f

    def _new_file(self) -> WritableMappedFile:
        """Java ``getLastMappedFile(0)``: the next file (pre-allocated if it is ready)."""
        last = self.files[-1] if self.files else None
        start = last.file_from_offset + self.mapped_file_size if last is not None else self.max_offset - self.max_offset % self.mapped_file_size
        nxt = self.next_file
        if nxt is not None and nxt.file_from_offset == start:
            f = nxt
            self.next_file = None
        else:
            if nxt is not None:
                nxt.destroy()
                self.next_file = None
            f = self._create(start)
        self.files.append(f)
        if self._forcer is not None:
            self._forcer.add_file(start, f.fd)
        if self.preallocate:
            self.next_file = self._create(start + self.mapped_file_size)
        return f

    def last_file(self) -> WritableMappedFile:
        f = self.files[-1] if self.files else None
        if f is None or f.is_full:
            f = self._new_file()
        return f

    def room_for(self, f: WritableMappedFile, pos: int, total: int) -> WritableMappedFile:
        """The file a record of ``total`` bytes goes into when ``f`` is written up to
        ``pos``: ``f`` itself when it fits (:func:`rmqlab.rules.fits_in_file`), else
        the next file, ``f`` closed with a BLANK first (Java ``END_OF_FILE``).  Every
        put path asks this; the C put hands the roll back to Python."""
        if fits_in_file(total, f.file_size - pos):
            return f
        f.wrote_position = pos
        return self.roll(f) if pos < f.file_size else self.last_file()

    def roll(self, f: WritableMappedFile) -> WritableMappedFile:
        """Close ``f`` with a BLANK record (Java ``END_OF_FILE``) and return the next file."""
        left = f.file_size - f.wrote_position
        if left >= cl.BLANK_SIZE:
            _BLANK.pack_into(f.mm, f.wrote_position, left, cl.MAGIC_BLANK)
        f.wrote_position = f.file_size
        self.max_offset = f.file_from_offset + f.file_size
        return self._new_file()

    PREFAULT_CHUNK = 4 << 20
    _MADV_POPULATE_WRITE = getattr(__import__("mmap"), "MADV_POPULATE_WRITE", 23)  # Linux 5.14+

    def prefault(self, f: WritableMappedFile, upto: int) -> None:
        """Fault the next pages in for writing in one call (``MADV_POPULATE_WRITE``),
        so appends do not take a page fault every 4 KiB — the job Java's
        ``warmMappedFile`` does by writing zeros — with :attr:`populate` where one is
        given, which also has a thread of its own keep faulting ahead of the writes
        (:class:`_PrefaultAhead`): a put then seldom waits for a fault at all.  Without
        kernel support it becomes a no-op that just moves the mark."""
        start = f.populated
        end = min(f.file_size, max(upto, start + self.PREFAULT_CHUNK))
        if self._prefault_ok:
            try:
                if self.populate is not None:
                    self.populate(f.mm, start, end - start)
                else:
                    f.mm.madvise(self._MADV_POPULATE_WRITE, start, end - start)
            except (OSError, ValueError, AttributeError):
                CommitLogWriter._prefault_ok = False
        f.populated = end
        if self._prefault_ok and self.populate is not None and end < f.file_size:
            if self._ahead is None:
                self._ahead = _PrefaultAhead(self.populate, self.PREFAULT_CHUNK)
            self._ahead.follow(f)

    _prefault_ok = True
    #: ``populate(mm, start, length)`` doing :meth:`prefault`'s ``madvise`` with the GIL
    #: released (the engine's C module gives it: ``rmqlab.engine._put.populate``), or None
    populate = None
    _ahead = None

    # -- appending ------------------------------------------------------------------------------
    @staticmethod
    def write_parts(f: WritableMappedFile, pos: int, parts, total: int) -> None:
        """Write a record's ``parts`` (``total`` bytes) at ``pos`` of ``f`` with one
        ``pwritev``, into the page cache the mapping shows (big bodies: no copy to join
        the parts, no page fault per 4 KiB).  A failed or short write raises ``OSError``
        naming the file and offset, as the C put does; the caller counts nothing as written."""
        try:
            n = os.pwritev(f.fd, parts, pos)
        except OSError as exc:
            raise OSError(exc.errno, f"{f.path} @ offset {pos}: cannot write {total} bytes: {exc.strerror}") from None
        if n != total:
            raise OSError(errno.EIO, f"{f.path} @ offset {pos}: short write, {n} of {total} bytes")

    def append(
        self,
        total: int,
        magic: int,
        body_crc: int,
        queue_id: int,
        flag: int,
        queue_offset: int,
        sys_flag: int,
        born_timestamp: int,
        born_host: tuple[bytes, int],
        store_timestamp: int,
        store_host: tuple[bytes, int],
        reconsume_times: int,
        prepared_transaction_offset: int,
        body: bytes,
        tail: bytes,
        prop_crc: bool,
    ) -> int:
        """Java ``doAppend``: write one record (``tail`` = topic length, topic,
        properties length, properties, and the 20-byte ``__CRC32#`` placeholder when
        ``prop_crc``); returns its physical offset.  The caller holds the put lock."""
        f = self.files[-1] if self.files else None
        if f is None or f.is_full:
            f = self._new_file()
        f = self.room_for(f, f.wrote_position, total)
        pos = f.wrote_position
        phy = f.file_from_offset + pos
        mm = f.mm
        packer = record_packer(len(born_host[0]), len(store_host[0]))
        try:
            packer.pack_into(
                mm, pos, total, magic, body_crc, queue_id, flag, queue_offset, phy, sys_flag, born_timestamp,
                born_host[0], born_host[1], store_timestamp, store_host[0], store_host[1],
                reconsume_times, prepared_transaction_offset, len(body),
            )
        except (struct.error, TypeError):
            mm[pos : pos + packer.size] = bytes(packer.size)  # pack_into may have written a prefix
            raise
        p = pos + packer.size
        if body:
            q = p + len(body)
            mm[p:q] = body
            p = q
        mm[p : p + len(tail)] = tail
        end = pos + total
        if prop_crc:
            # Java: CRC over the record up to the property, written after queue offset,
            # physical offset and store timestamp are in place
            crc = zlib.crc32(memoryview(mm)[pos : end - PROPERTY_CRC_TAIL]) & 0x7FFFFFFF
            mm[end - 11 : end - 1] = encode_crc_digits(crc)
        f.wrote_position = end
        f.store_timestamp = store_timestamp
        self.store_timestamp = store_timestamp
        self.max_offset = phy + total
        return phy

    # -- flushing ------------------------------------------------------------------------------
    def flush(self, store_timestamp: int = 0) -> int:
        """Force every record written so far to disk (Java ``MappedFileQueue.flush(0)``);
        returns the new ``flushed_where``.  Safe to call from the flush thread while
        producers append: it covers at least what was written when it started.

        ``store_timestamp`` is that of the newest record written before the call (the
        caller reads it under the lock its appends take, so the record is whole); it
        becomes ``flushed_timestamp``."""
        with self._flush_lock:
            target = self.max_offset
            if target <= self.flushed_where:
                self._flushed_timestamp = max(self._flushed_timestamp, store_timestamp)
                return self.flushed_where
            for f in list(self.files):
                end = f.file_from_offset + f.file_size
                if end <= self.flushed_where or f.fd < 0:
                    continue
                if f.file_from_offset >= target:
                    break
                os.fdatasync(f.fd)
                f.flushed_position = min(f.file_size, target - f.file_from_offset)
            self.flushed_where = max(self.flushed_where, target)
            self._flushed_timestamp = max(self._flushed_timestamp, store_timestamp)
            return self.flushed_where

    def dirty_bytes(self) -> int:
        return self.max_offset - self.flushed_where

    # -- cleanup -------------------------------------------------------------------------------
    def delete_expired(self, expired_before_ms: int, *, force: bool = False, max_files: int = 10, keep_from: int | None = None) -> list[str]:
        """Java ``MappedFileQueue.deleteExpiredFileByTime``: oldest first, never the
        active (last) file, stop at the first file still within its reserved time, or
        holding offset ``keep_from`` or later (records not dispatched yet)."""
        gone = []
        while len(self.files) > 1 and len(gone) < max_files:
            f = self.files[0]
            if keep_from is not None and f.file_from_offset + f.file_size > keep_from:
                break
            mtime_ms = int(os.stat(f.path).st_mtime * 1000)
            if not force and mtime_ms >= expired_before_ms:
                break
            gone.append(f.name)
            if self._forcer is not None:
                self._forcer.remove_file(f.file_from_offset)
            f.destroy()
            self.files.pop(0)
        return gone

    def close(self, *, delete_preallocated: bool = True) -> None:
        if self._ahead is not None:  # before the files it faults in are closed
            self._ahead.stop()
            self._ahead = None
        if self.next_file is not None:
            if delete_preallocated:
                self.next_file.destroy()  # Java AllocateMappedFileService.shutdown
            else:
                self.next_file.close()
            self.next_file = None
        self.detach_forcer()
        for f in self.files:
            f.close()
        self.files = []


class _PrefaultAhead:
    """A thread that keeps the pages of the file being written faulted in
    :data:`MARGIN` bytes ahead of its write position, a chunk at a time, with a
    ``populate`` that releases the GIL: the faults (on a machine that hands freed memory
    back to its host, ~3 µs a KiB) are taken on the other core while the puts and the
    dispatch go on, instead of in the put that reaches an unfaulted page.

    ``populated`` is only a hint to the put (a page past it is faulted in by the put,
    as without this thread; one before it that is not yet is faulted by the copy into
    it), so the thread moves it without the put lock.  It polls the write position
    while the writes go on and sleeps once they stop, until the next put that reaches
    its mark wakes it (:meth:`follow`)."""

    MARGIN = 16 << 20
    POLL = 0.002

    def __init__(self, populate, chunk: int):
        self._populate = populate
        self._chunk = chunk
        self._file: WritableMappedFile | None = None
        self._stopped = False
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="rmqlab-prefault-ahead", daemon=True)
        self._thread.start()

    def follow(self, f: WritableMappedFile) -> None:
        """Fault ahead in ``f`` (the file now written) from its ``populated`` mark on."""
        with self._wake:
            self._file = f
            self._wake.notify()

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()
        self._thread.join()

    def _run(self) -> None:
        last_written = -1
        while True:
            with self._wake:
                if self._stopped:
                    return
                f = self._file
                if f is None or f.mm is None or f.populated >= f.file_size or f.populated - f.wrote_position >= self.MARGIN:
                    moving = f is not None and f.wrote_position != last_written and f.populated < f.file_size
                    last_written = f.wrote_position if f is not None else -1
                    self._wake.wait(self.POLL if moving else None)  # idle: until the next put that reaches the mark
                    continue
            start = f.populated
            end = min(f.file_size, start + self._chunk)
            try:
                self._populate(f.mm, start, end - start)
            except (OSError, ValueError, TypeError):  # the file closed meanwhile (its mapping gone)
                with self._wake:
                    if self._file is f:
                        self._file = None
                continue
            if f.populated == start:  # the put has not moved it meanwhile
                f.populated = end

