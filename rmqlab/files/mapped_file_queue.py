"""A directory of files named by their start offset (Java ``MappedFileQueue``).

CommitLog and ConsumeQueue directories hold files whose names are the 20-digit,
zero-padded offset of their first byte.  Every file but the last must have the
configured size; a zero-length last file is ignored (Java ``MappedFileQueue.load``
skips it); names are one file size apart, and where one is missing (a file deleted) the
queue is read as RocketMQ reads it: the gap is listed, the other files served.

A log may be spread over several directories (Java ``MultiPathMappedFileQueue``, a
broker's ``storePathCommitLog=/d1/commitlog,/d2/commitlog`` plus
``readOnlyCommitLogStorePaths``): its ``load`` lists the files of every directory
and loads them as one queue, ordered by name, so a queue here takes a list of
directories too.  The same name in two directories is a problem (RocketMQ would map
both and fail the order check).
"""

from __future__ import annotations

import bisect
import os
import re
from pathlib import Path
from typing import Sequence

from ..errors import StoreLayoutError
from .mapped_file import MappedFile

_NAME = re.compile(r"^\d{20}$")
NAME_MAX = 255  # a file name's bytes on Linux's filesystems, where the store's own cannot say


def name_max(directory: str | os.PathLike) -> int:
    """The bytes a file name may have in ``directory``'s filesystem (``NAME_MAX``): a
    queue's directory is named by its topic (``consumequeue/<topic>/<queueId>``), and a
    topic longer than this has none."""
    try:
        return int(os.pathconf(os.fspath(directory) or ".", "PC_NAME_MAX"))
    except (OSError, ValueError):
        return NAME_MAX


def unmakeable(name: str | bytes, most: int) -> bool:
    """Whether no directory can be named ``name`` where file names have at most ``most``
    bytes (:func:`name_max`): a topic's queue directory, which Java's
    ``UtilAll.ensureDirOK`` fails to make (mkdir Failed)."""
    return len(name.encode("utf-8") if isinstance(name, str) else name) > most


def file_name_for_offset(offset: int) -> str:
    """Java ``UtilAll.offset2FileName``: 20 digits, zero-padded."""
    return f"{offset:020d}"


class MappedFileQueue:
    """Read-only queue of offset-named files.

    ``mapped_file_size`` may be ``None``: it is then inferred from the gap between
    the first two names, or from the length of a single file.  ``problems`` lists
    what does not follow the rules (in strict mode the first one is raised).
    ``contiguous=False``: the names need not follow one another (a compaction queue's
    files are named after the log files they index; Java's ``load`` checks lengths only).
    """

    def __init__(self, directory: str | os.PathLike | Sequence[str | os.PathLike], mapped_file_size: int | None = None, *, strict: bool = True,
                 contiguous: bool = True):
        dirs = [Path(directory)] if isinstance(directory, (str, os.PathLike)) else [Path(d) for d in directory]
        if not dirs:
            raise ValueError("a mapped file queue needs at least one directory")
        #: every directory the files come from; ``directory``: the first (the only one, usually)
        self.directories = dirs
        self.directory = dirs[0]
        self.problems: list[StoreLayoutError] = []
        #: those of ``problems`` that are a gap between two names (a file missing), not a length
        self.gaps: list[StoreLayoutError] = []
        #: the offsets ``[start, end)`` of each gap: no file holds them
        self.missing: list[tuple[int, int]] = []
        self.ignored: list[Path] = []
        #: ``(start, path, length)`` of each file whose length is not the configured size
        #: (Java ``MappedFileQueue.load`` refuses the queue: the broker does not start)
        self.misfits: list[tuple[int, Path, int]] = []
        self.files: list[MappedFile] = []
        entries = []
        seen: dict[int, Path] = {}
        for d in dirs:
            if not d.is_dir():
                raise StoreLayoutError(d, None, "not a directory")
            for p in sorted(d.iterdir()):
                if p.is_file() and _NAME.match(p.name):
                    start = int(p.name)
                    if start in seen:
                        self._problem(p, None, f"{seen[start]} has the same name: one offset in two directories of the log", strict)
                        self.ignored.append(p)
                        continue
                    seen[start] = p
                    entries.append((start, p))
                elif p.is_file():
                    self.ignored.append(p)
        entries.sort()
        self.mapped_file_size = mapped_file_size or self._infer_size(entries)
        for i, (start, path) in enumerate(entries):
            size = path.stat().st_size
            last = i == len(entries) - 1
            if last and size == 0:
                self.ignored.append(path)
                continue
            if self.mapped_file_size and size != self.mapped_file_size:
                self._problem(path, None, f"file is {size} bytes, expected the configured {self.mapped_file_size}", strict)
                self.misfits.append((start, path, size))
            if contiguous and self.files and start != self.files[-1].file_from_offset + self.mapped_file_size:
                prev = self.files[-1].file_from_offset
                # a gap is no load failure in Java (MappedFileQueue.load checks lengths only,
                # checkSelf logs it, findMappedFileByOffset looks for the file that holds an
                # offset): the queue is read as RocketMQ reads it, even in strict mode, and
                # the gap is listed (a problem, and in ``gaps`` and ``missing``)
                self._problem(path, None, f"name says offset {start}, but the previous file starts at {prev} and holds {self.mapped_file_size} bytes", False)
                self.gaps.append(self.problems[-1])
                self.missing.append((prev + self.mapped_file_size, start))
            self.files.append(MappedFile(path, start))
        self._starts = [f.file_from_offset for f in self.files]

    @staticmethod
    def _infer_size(entries: list[tuple[int, Path]]) -> int | None:
        """The files' own length where they agree with the names (every gap between two
        names a whole number of them: a larger gap is a missing file, not a larger
        size); else the gap between the first two names; else a single file's length."""
        from collections import Counter

        gaps = [b - a for (a, _), (b, _) in zip(entries, entries[1:]) if b > a]
        lengths = Counter(n for n in (p.stat().st_size for _, p in entries) if n)
        if gaps and gaps[0] in lengths:
            return gaps[0]
        for n, _ in lengths.most_common():
            if gaps and all(g % n == 0 for g in gaps):
                return n
        if gaps:
            return gaps[0]
        return next(iter(lengths), None)

    def _problem(self, path: Path, offset: int | None, message: str, strict: bool) -> None:
        err = StoreLayoutError(path, offset, message)
        if strict:
            raise err
        self.problems.append(err)

    # -- lookup -------------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        return self.files[0].file_from_offset if self.files else 0

    @property
    def max_file_end(self) -> int:
        """End offset of the last file's mapping (not the end of the data in it)."""
        return self.files[-1].file_from_offset + self.files[-1].file_size if self.files else 0

    def find(self, offset: int) -> MappedFile | None:
        """The file holding ``offset`` (Java ``findMappedFileByOffset``), or ``None``."""
        i = bisect.bisect_right(self._starts, offset) - 1
        if i < 0:
            return None
        f = self.files[i]
        if offset < f.file_from_offset + max(f.file_size, self.mapped_file_size or 0):
            return f
        return None

    def index_of(self, mapped_file: MappedFile) -> int:
        return self._starts.index(mapped_file.file_from_offset)

    def close(self) -> None:
        for f in self.files:
            f.close()

    def __iter__(self):
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)
