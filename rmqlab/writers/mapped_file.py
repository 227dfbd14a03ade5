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
import re
from pathlib import Path

from ..errors import StoreFormatError, StoreLayoutError
from ..files.mapped_file_queue import file_name_for_offset


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


_NAME = re.compile(r"^\d{20}$")


class MappedFilesWriter:
    """The offset-named files of one directory, writable (Java ``MappedFileQueue``, write
    side): :meth:`load` maps them as ``MappedFileQueue.load`` does (an empty last file is
    dropped, a file of another size refused, every file positioned at its end),
    :meth:`_truncate_files` is ``truncateDirtyFiles``, :meth:`_create_file` adds the
    next file.  ``WHAT`` names the size setting in errors."""

    WHAT = "mappedFileSize"

    def __init__(self, directory: str | os.PathLike, mapped_file_size: int):
        self.directory = Path(directory)
        self.mapped_file_size = mapped_file_size
        self.files: list[WritableMappedFile] = []
        self.dirty = False

    def load(self) -> None:
        try:
            if not self.directory.is_dir():
                return
        except OSError as exc:  # a name too long for the filesystem (a topic's queue), no permission
            raise StoreFormatError(self.directory, None, f"cannot read the directory: {exc.strerror}") from None
        names = sorted(p for p in self.directory.iterdir() if p.is_file() and _NAME.match(p.name))
        for p in names:
            size = p.stat().st_size
            if size == 0 and p == names[-1]:
                p.unlink()  # Java MappedFileQueue.load: an empty last file is dropped
                continue
            if size != self.mapped_file_size:
                raise StoreLayoutError(p, None, f"file is {size} bytes, {self.WHAT} is {self.mapped_file_size}: RocketMQ's load fails")
            f = WritableMappedFile(p, self.mapped_file_size, int(p.name), create=False)
            f.wrote_position = f.flushed_position = self.mapped_file_size
            self.files.append(f)

    def _truncate_files(self, offset: int) -> list[Path]:
        """Java ``MappedFileQueue.truncateDirtyFiles``: files past ``offset`` go (their
        paths are returned), the one holding it is positioned there."""
        keep, gone = [], []
        for f in self.files:
            if f.file_from_offset + self.mapped_file_size > offset:
                if offset >= f.file_from_offset:
                    f.wrote_position = f.flushed_position = offset - f.file_from_offset
                    keep.append(f)
                else:
                    gone.append(f.path)
                    f.destroy()
            else:
                keep.append(f)
        self.files = keep
        return gone

    def _create_file(self, create_offset: int) -> WritableMappedFile:
        """A new last file starting at ``create_offset`` (Java ``MappedFileQueue.tryCreateMappedFile``;
        an existing file of that name is opened as it is, positioned at 0)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a name too long for the filesystem (a topic's queue), no permission, no room
            raise StoreFormatError(self.directory, None, f"cannot create the directory for the file at offset {create_offset}: {exc.strerror}") from None
        f = WritableMappedFile(self.directory / file_name_for_offset(create_offset), self.mapped_file_size, create_offset)
        fsync_directory(self.directory)
        self.files.append(f)
        return f

    def flush(self) -> None:
        """Force every written byte to disk (Java ``flush``).  Safe while another thread
        appends: the flag is cleared first, so an append marks the files dirty again."""
        self.dirty = False
        for f in list(self.files):
            if f.wrote_position > f.flushed_position and f.fd >= 0:
                f.flush()

    def close(self) -> None:
        for f in self.files:
            f.close()
        self.files = []
