"""The CommitLog, read side (Java ``CommitLog``).

Walks records in commitlog order across files: a BLANK moves to the next file, a
zero tail (or a file that is all zeros) ends the log.  ``walk`` reports damage as
values so callers that must keep going (verify, lenient scans) can; ``iter_records``
raises at the first damaged record with its file and offset.
"""

from __future__ import annotations

import os
from typing import Iterator

import numpy as np

from ..errors import StoreFormatError
from ..files import MappedFileQueue
from ..format.record import Record, RecordError, damage_detail, decode_record


#: how a walk of one file ended (:func:`walk_file`'s return value)
BLANK_ENDED, FILE_ENDED, STOPPED = "blank", "file end", "stopped"


def walk_file(buf, *, file: str, file_base: int, start: int = 0, end: int | None = None, check_crc: bool = True,
              read_body: bool = True) -> Iterator[Record | RecordError]:
    """The record chain of one commitlog file's bytes from in-file position ``start``:
    each :class:`Record` (MESSAGE and BLANK), and at damage one :class:`RecordError`.
    Returns how it ended: :data:`BLANK_ENDED` (the walk goes on in the next file),
    :data:`FILE_ENDED` (the last record ends at the file's last byte), or :data:`STOPPED`
    (the zero tail, damage, or log offset ``end`` reached)."""
    pos = start
    while pos < len(buf):
        if end is not None and file_base + pos >= end:
            return STOPPED
        try:
            rec = decode_record(buf, pos, file=file, file_base=file_base, check_crc=check_crc, read_body=read_body)
        except RecordError as err:
            yield err
            return STOPPED
        if rec is None:  # zero tail: the end of the log
            return STOPPED
        yield rec
        if rec.is_blank:
            return BLANK_ENDED
        pos += rec.total_size
    return FILE_ENDED


class CommitLog:
    """Read-only CommitLog over ``STORE/commitlog`` (Java ``CommitLog``): a record by
    its physical offset, the records in order (:meth:`walk`, Java's
    ``checkMessageAndReturnSize`` loop), or Arrow batches of many (:meth:`batches`).

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     log = store.commitlog
    ...     first = [r for r in log.walk() if not r.is_blank][:2]
    ...     print(log.min_offset, log.served_end(), log.mapped_file_size)
    ...     print([(r.physical_offset, r.topic, r.queue_id, r.total_size) for r in first])
    ...     print(log.read(255).topic, next(log.batches(columns=["topic"])).num_rows)
    0 280240 65536
    [(0, 'Orders', 1, 255), (255, 'Payments', 1, 206)]
    Payments 213
    """

    def __init__(self, directory: str | os.PathLike, mapped_file_size: int | None = None, *, strict: bool = True, served_end: int | None = None):
        self.queue = MappedFileQueue(directory, mapped_file_size, strict=strict)
        self.directory = self.queue.directory
        #: known to a running engine (an int), or asked of the recovery plan on first use
        #: (a function: rmqlab.recovery.next_start.log_end); else found on first use
        self._served_end = served_end

    @property
    def mapped_file_size(self) -> int | None:
        return self.queue.mapped_file_size

    @property
    def min_offset(self) -> int:
        """Java ``getMinOffset``: start of the first file."""
        return self.queue.min_offset

    # -- single records -------------------------------------------------------------------
    def read(self, physical_offset: int, *, check_crc: bool = True) -> Record:
        """The record at ``physical_offset`` (Java ``lookMessageByOffset``)."""
        f = self.queue.find(physical_offset)
        if f is None:
            raise StoreFormatError(self.directory, physical_offset, "no commitlog file holds this physical offset")
        rec = decode_record(f.buf, physical_offset - f.file_from_offset, file=str(f.path), file_base=f.file_from_offset, check_crc=check_crc)
        if rec is None:
            raise StoreFormatError(f.path, physical_offset - f.file_from_offset, "no record here: the bytes are zero (past the end of the log)")
        return rec

    def read_bytes(self, physical_offset: int, length: int) -> bytes:
        f = self.queue.find(physical_offset)
        if f is None:
            raise StoreFormatError(self.directory, physical_offset, "no commitlog file holds this physical offset")
        return f.read(physical_offset - f.file_from_offset, length)

    # -- walking ----------------------------------------------------------------------------
    def walk(
        self, start: int | None = None, end: int | None = None, *, check_crc: bool = True, read_body: bool = True
    ) -> Iterator[Record | RecordError]:
        """Every record from ``start`` (a record boundary) in commitlog order.

        Yields :class:`Record` (MESSAGE and BLANK) and, at damage, one
        :class:`RecordError`, after which the walk stops, as RocketMQ's does.
        A record with a bad CRC is yielded as a Record (``crc_ok`` False): whether
        that ends the log is recovery's decision.
        """
        for f, pos in self._files_from(start):
            how = yield from walk_file(f.buf, file=str(f.path), file_base=f.file_from_offset, start=pos, end=end, check_crc=check_crc, read_body=read_body)
            if how != BLANK_ENDED and not (how == FILE_ENDED and len(f.buf) >= (self.mapped_file_size or 0)):
                return  # the zero tail, damage, ``end``, or a short last file: the end of the walk

    def iter_records(
        self, start: int | None = None, end: int | None = None, *, check_crc: bool = True, include_blank: bool = False, read_body: bool = True
    ) -> Iterator[Record]:
        """Records in order; raises :class:`RecordError` (file + offset) at damage."""
        for item in self.walk(start, end, check_crc=check_crc, read_body=read_body):
            if isinstance(item, RecordError):
                raise item
            if item.is_blank and not include_blank:
                continue
            yield item

    def _files_from(self, start: int | None):
        """The files a walk from ``start`` (a record boundary; the log's start when
        None) passes, each with the in-file position it starts at."""
        files = self.queue.files
        start = self.min_offset if start is None else start
        first = self.queue.find(start) if files else None
        if first is None:
            return
        for i in range(self.queue.index_of(first), len(files)):
            f = files[i]
            yield f, start - f.file_from_offset if f is first else 0

    def batches(self, start: int | None = None, end: int | None = None, *, include_body: bool = True, columns=None) -> Iterator:
        """The records :meth:`walk` yields (MESSAGE and BLANK, a bad CRC flagged, not
        a stop), decoded in bulk by :mod:`rmqlab.scan.decode` as Arrow record batches
        of its ``ARROW_SCHEMA``: the same walk at the decoder's speed, a batch at a
        time.  Raises :class:`RecordError` (file + offset) at damage, after the
        batches of the records before it."""
        import pyarrow.compute as pc

        from ..scan import decode as fd

        for f, pos in self._files_from(start):
            base = f.file_from_offset
            a = np.frombuffer(f.buf, np.uint8)
            expected = base + pos
            blank = False
            gen = fd.scan_range(a, file_base=base, file=str(f.path), start=expected - base, resync=False, mode="lenient", include_body=include_body, columns=columns,
                                data_end=f.data_end)
            try:
                for batch in gen:
                    phy = np.asarray(batch.column("physical_offset").to_numpy(zero_copy_only=False), np.int64)
                    size = np.asarray(batch.column("total_size").fill_null(0).to_numpy(zero_copy_only=False), np.int64)
                    # the walk's chain: a row not where the last one ended lies past zeros
                    # the decoder skipped (the zero tail: the end of the log)
                    breaks = np.flatnonzero(phy != np.concatenate(([expected], phy[:-1] + size[:-1])))
                    n = int(breaks[0]) if len(breaks) else len(phy)
                    if end is not None:
                        n = min(n, int(np.searchsorted(phy, end)))
                    damaged = np.flatnonzero(np.asarray(batch.column("error").slice(0, n).is_valid().to_numpy(zero_copy_only=False), bool))
                    if len(damaged):
                        d = int(damaged[0])
                        if d:
                            yield batch.slice(0, d)
                        kind = batch.column("kind")[d].as_py()
                        raise RecordError(str(f.path), int(phy[d]) - base, kind, damage_detail(batch.column("error")[d].as_py(), kind))
                    if n:
                        yield batch.slice(0, n) if n < len(phy) else batch
                        expected = int(phy[n - 1] + size[n - 1])
                    if n < len(phy):
                        return
                    blank |= bool(pc.any(pc.equal(batch.column("kind"), fd.KIND_BLANK)).as_py())
            finally:
                gen.close()
            if end is not None and expected >= end:
                return
            if not blank and (expected < base + len(a) or len(a) < (self.mapped_file_size or 0)):
                return  # the zero tail, or a short last file: the end of the log

    def max_offset(self) -> int:
        """End of the last valid record (Java ``getMaxOffset`` after recovery, in a
        store that needs none).  Walks the last files only when possible."""
        end = self.min_offset
        for item in self.walk(check_crc=False, read_body=False):
            if isinstance(item, RecordError):
                break
            end = item.physical_offset + (item.total_size if not item.is_blank else 0)
            if item.is_blank:
                f = self.queue.find(item.physical_offset)
                end = f.file_from_offset + (self.mapped_file_size or f.file_size)
        return end

    def served_end(self) -> int:
        """Where RocketMQ serves the log up to: the end of the log.  Given by whoever
        opened the reader (a running engine knows it; the commands ask the recovery plan:
        where the store's next start ends the log, :mod:`rmqlab.recovery.next_start`).
        Where nothing gives it: the end of the record chain of the last file that holds a
        record, up to the first record whose body CRC fails (Java
        ``MappedFile.selectMappedBuffer`` refuses a position at or past the file's write
        position, and after a recovery only the last file is written short, at a record
        its checkCRCOnRecover scan refused).  One bulk pass over one file, once."""
        if callable(self._served_end):
            self._served_end = self._served_end()
        if self._served_end is None:
            files = self.queue.files
            last = next((f for f in reversed(files) if len(f.buf) >= 4 and bytes(f.buf[:4]) != b"\0\0\0\0"), None)
            end = self.min_offset
            if last is not None:
                from ..scan.acceptance import scan_file  # numpy and the CRC loops: loaded on first use

                s = scan_file(last.buf)
                end = last.file_from_offset + (len(last.buf) if s.blank else s.end)
            self._served_end = end
        return self._served_end

    def close(self) -> None:
        self.queue.close()
