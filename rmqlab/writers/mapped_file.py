"""A writable memory-mapped store file (Java ``MappedFile``, write side).

The file is created at its full configured size (sparse, zero-filled: Java
``RandomAccessFile.setLength``) and mapped ``MAP_SHARED``, so every byte written
here is in the page cache at once and visible to the read-only mappings of
:class:`rmqlab.files.MappedFile` and to any other process.

Durability is a separate step: :meth:`flush` forces the dirty pages to disk with
``fdatasync`` on the file descriptor.  On Linux that is what ``msync(MS_SYNC)``
(Java ``MappedByteBuffer.force``) does too — both end in ``vfs_fsync_range``
over the file's page cache, and pages dirtied through a shared mapping are
tracked there — but ``os.fdatasync`` releases the GIL while it waits, which is
what lets producers keep appending during a group commit.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from ..errors import StoreFormatError


def fsync_directory(directory: str | os.PathLike) -> None:
    """Make a file creation/rename/deletion in ``directory`` durable."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class WritableMappedFile:
    """One store file mapped read-write.

    ``wrote_position`` is where the next append goes (Java ``wrotePosition``),
    ``flushed_position`` how far it is known to be on disk (Java ``flushedPosition``).
    """

    __slots__ = ("path", "file_from_offset", "file_size", "fd", "mm", "wrote_position", "flushed_position", "store_timestamp", "created", "populated")

    def __init__(self, path: str | os.PathLike, file_size: int, file_from_offset: int = 0, *, create: bool = True):
        self.path = Path(path)
        self.file_size = file_size
        self.file_from_offset = file_from_offset
        self.created = False
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        try:
            existed = self.path.exists()
            self.fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise StoreFormatError(self.path, None, f"cannot open for writing: {exc.strerror}") from None
        try:
            size = os.fstat(self.fd).st_size
            if size < file_size:
                # Java MappedFile.init: setLength(fileSize) — sparse, reads as zeros
                os.ftruncate(self.fd, file_size)
                self.created = not existed or size == 0
            elif size > file_size:
                raise StoreFormatError(self.path, None, f"file is {size} bytes, larger than the configured {file_size}")
            self.mm = mmap.mmap(self.fd, file_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(self.fd)
            raise
        self.wrote_position = 0
        self.flushed_position = 0
        self.populated = 0  # pages below this were pre-faulted for writing
        self.store_timestamp = 0  # Java MappedFile.storeTimestamp: of the last record appended

    # -- positions ------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.path.name

    @property
    def is_full(self) -> bool:
        """Java ``isFull``: ``wrotePosition == fileSize``."""
        return self.wrote_position >= self.file_size

    @property
    def free(self) -> int:
        return self.file_size - self.wrote_position

    # -- writing --------------------------------------------------------------------------
    def append(self, data: bytes) -> int:
        """Java ``appendMessage(byte[])``: write at ``wrote_position``; returns the position."""
        pos = self.wrote_position
        end = pos + len(data)
        if end > self.file_size:
            raise StoreFormatError(self.path, pos, f"append of {len(data)} bytes does not fit in the {self.file_size}-byte file")
        self.mm[pos:end] = data
        self.wrote_position = end
        return pos

    def flush(self, *, data_only: bool = True) -> int:
        """Force everything written so far to disk (Java ``MappedFile.flush(0)``);
        returns the new ``flushed_position``."""
        target = self.wrote_position
        if target > self.flushed_position:
            (os.fdatasync if data_only else os.fsync)(self.fd)
            self.flushed_position = target
        return self.flushed_position

    def close(self) -> None:
        """Unmap and close (Java ``MappedFile.shutdown``/``cleanup``); no flush."""
        mm, self.mm = getattr(self, "mm", None), None
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass  # a numpy view still exists: released with it
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def destroy(self) -> None:
        """Java ``MappedFile.destroy``: close and delete the file."""
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def __repr__(self) -> str:
        return f"WritableMappedFile({self.path.name}, from={self.file_from_offset}, wrote={self.wrote_position}, flushed={self.flushed_position})"
