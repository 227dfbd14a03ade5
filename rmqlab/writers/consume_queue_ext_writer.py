"""ConsumeQueueExt, write side (Java ``ConsumeQueueExt``, ``enableConsumeQueueExt``).

One :class:`ConsumeQueueExtWriter` per ``consumequeue_ext/<topic>/<queueId>/``, owned by
that queue's :class:`~rmqlab.writers.consume_queue_writer.ConsumeQueueWriter`.  Each
unit (:data:`~rmqlab.format.consumequeue.CqExtUnit`: size, tagsCode, store time, bitmap
size, bitmap) is appended at the write position; the queue's unit holds its address
(``decorate``: offset + ``Long.MIN_VALUE``) where the tagsCode goes.  A unit that does
not fit before the file's last 4 bytes ends the file with a short -1
(``fullFillToEnd``) and goes to the next file.

Java's recovery of these files is odd and kept so: ``recover`` only moves the write
position to where the last file's units end, ``truncateByMaxAddress`` then deletes the
files past the unit of the queue's last valid entry (its bytes after that unit stay,
to be overwritten); a queue that has no file loads no ext file either, so its units
start again at offset 0 of the first ext file.  Nothing is zeroed.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from ..format.consumequeue import EXT_END_BLANK_DATA_LENGTH, EXT_UNIT_MIN_SIZE, ext_offset, is_ext_addr
from .mapped_file import MappedFilesWriter, WritableMappedFile
_HEAD = struct.Struct(">hqqh")  # size, tagsCode, msgStoreTime, bitMapSize (CqExtUnit.write)
assert _HEAD.size == EXT_UNIT_MIN_SIZE
#: Java CqExtUnit.MAX_EXT_UNIT_SIZE
MAX_EXT_UNIT_SIZE = 32767
#: Java ConsumeQueueExt.put's answer when it cannot write (not an ext address: the tagsCode stays)
NO_ADDRESS = 1
_LONG_MIN = -(1 << 63)


class ConsumeQueueExtWriter(MappedFilesWriter):
    """One queue's ext files, writable.  ``load``: the files on disk, every one
    positioned at its end (``MappedFileQueue.load``); without it (a queue dispatch
    creates) none is known and the first put opens file 0."""

    WHAT = "mappedFileSizeConsumeQueueExt"

    def __init__(self, directory: str | os.PathLike, mapped_file_size: int, *, load: bool = True):
        super().__init__(directory, mapped_file_size)
        if load:
            self.load()

    # -- recovery ------------------------------------------------------------------------------
    def recover(self) -> None:
        """Java ``ConsumeQueueExt.recover``: every file from the first, unit by unit
        while the size is positive; the write position goes where the last file's
        units end (``truncateDirtyFiles`` there: no file is deleted)."""
        if not self.files:
            return
        last = self.files[-1]
        pos = 0
        while pos + 2 <= self.mapped_file_size:
            size = int.from_bytes(last.mm[pos : pos + 2], "big", signed=True)
            if size <= 0:
                break
            pos += size
        self._truncate_files(last.file_from_offset + min(pos, self.mapped_file_size))

    def truncate_by_max_address(self, address: int) -> list[Path]:
        """Java ``truncateByMaxAddress``: the files past the unit at ``address`` go, the
        one holding it is positioned after it; nothing when ``address`` is not an ext
        address or no unit is there.  Returns the files deleted."""
        if not is_ext_addr(address):
            return []
        real = ext_offset(address)
        f = next((f for f in self.files if f.file_from_offset <= real < f.file_from_offset + self.mapped_file_size), None)
        if f is None:
            return []  # "[BUG] address ... of consume queue extend not found!"
        at = real - f.file_from_offset
        size = int.from_bytes(f.mm[at : at + 2], "big", signed=True) if at + 2 <= self.mapped_file_size else 0
        if size < EXT_UNIT_MIN_SIZE:
            return []
        return self._truncate_files(real + size)

    # -- writing -------------------------------------------------------------------------------
    def put(self, tags_code: int, store_timestamp: int, bitmap: bytes = b"") -> int:
        """Java ``ConsumeQueueExt.put``: the new unit's address, or 1 when it cannot
        be written (too big: the queue keeps the tagsCode itself)."""
        size = EXT_UNIT_MIN_SIZE + len(bitmap)
        if size > MAX_EXT_UNIT_SIZE:
            return NO_ADDRESS
        for _ in range(3):  # Java's retryTimes: a full file is filled to its end and the next taken
            f = self.files[-1] if self.files else None
            if f is None or f.is_full:
                f = self._next_file()
            blank = self.mapped_file_size - f.wrote_position - EXT_END_BLANK_DATA_LENGTH
            if size > blank:
                # fullFillToEnd: a short -1 where the next unit would start; the file is full
                f.mm[f.wrote_position : f.wrote_position + 2] = (-1).to_bytes(2, "big", signed=True)
                f.wrote_position = self.mapped_file_size
                continue
            pos = f.wrote_position
            f.mm[pos : pos + EXT_UNIT_MIN_SIZE] = _HEAD.pack(size, tags_code, store_timestamp, len(bitmap))
            f.mm[pos + EXT_UNIT_MIN_SIZE : pos + size] = bitmap
            f.wrote_position = pos + size
            self.dirty = True
            return pos + f.file_from_offset + _LONG_MIN  # decorate
        return NO_ADDRESS

    def _next_file(self) -> WritableMappedFile:
        """Java ``getLastMappedFile(0)``: after the last file, or file 0 when none is known
        (an existing one is opened as it is, positioned at 0)."""
        return self._create_file(self.files[-1].file_from_offset + self.mapped_file_size if self.files else 0)


__all__ = ["ConsumeQueueExtWriter", "NO_ADDRESS"]
