"""A read-only view of one store file (Java ``MappedFile``, read side).

The file is memory-mapped ``ACCESS_READ``: nothing can write through it, and
pages are read only when touched, so a 1 GiB commitlog costs nothing to open.
Writes made by another process or by rmqlab's engine through its own shared
mapping are visible here at once (same page cache).
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from ..errors import StoreFormatError
from .extent import data_end


class MappedFile:
    """One file, mapped read-only.  ``file_from_offset`` is the offset its name says."""

    def __init__(self, path: str | os.PathLike, file_from_offset: int = 0):
        self.path = Path(path)
        self.file_from_offset = file_from_offset
        self._mmap: mmap.mmap | None = None
        self._view: memoryview | bytes | None = None
        try:
            self.file_size = self.path.stat().st_size
        except OSError as exc:
            raise StoreFormatError(self.path, None, f"cannot open: {exc.strerror}") from None

    @property
    def buf(self) -> memoryview | bytes:
        """The whole file as a buffer (mapped on first use)."""
        if self._view is None:
            self._map()
        return self._view  # type: ignore[return-value]

    def _map(self) -> None:
        size = self.path.stat().st_size
        self.file_size = size
        if size == 0:
            self._view = b""
            return
        try:
            with open(self.path, "rb") as fh:
                self._mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise StoreFormatError(self.path, None, f"cannot map: {exc}") from None
        self._view = memoryview(self._mmap)

    @property
    def data_end(self) -> int:
        """Where the file's written bytes end: past it only holes, zeros that nothing
        wrote (RocketMQ's pre-allocated file past its last record), which a scan need not
        read (:func:`.extent.data_end`).  Asked of the file system on every use: a writer
        may have written since."""
        return data_end(self.path, self.file_size)

    def refresh(self) -> None:
        """Re-map if the file grew (e.g. a writer extended it)."""
        if self.path.stat().st_size != self.file_size:
            self.close()

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``; errors name the file and offset."""
        buf = self.buf
        if offset < 0 or length < 0 or offset + length > len(buf):
            raise StoreFormatError(self.path, offset, f"read of {length} bytes past the end of the {len(buf)}-byte file")
        return bytes(buf[offset : offset + length])

    def close(self) -> None:
        self._view = None
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:
                # a numpy view still points into the mapping: it is released when
                # that view is garbage-collected; closing now would invalidate it
                pass
            self._mmap = None

    def __repr__(self) -> str:
        return f"MappedFile({str(self.path)!r}, from={self.file_from_offset}, size={self.file_size})"
