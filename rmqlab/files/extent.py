"""Where the bytes of a file are: its data regions (holes of a sparse file skipped
without reading), the extent of its non-zero bytes, and runs of zeros in a buffer.

Recovery asks where the non-zero bytes past the new end of the log are (what a cut
removes or leaves); verify asks the same of the log's tail and names the zeroed range
a damaged record lies in (a page zeroed by a crash or a disk).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np


def data_regions(fd: int, start: int, size: int) -> list[tuple[int, int]]:
    """Non-hole regions of a (sparse) file from ``start`` (``SEEK_DATA``/``SEEK_HOLE``);
    the whole range when the file system cannot say."""
    if not hasattr(os, "SEEK_DATA"):
        return [(start, size)]
    out = []
    pos = start
    try:
        while pos < size:
            a = os.lseek(fd, pos, os.SEEK_DATA)
            b = os.lseek(fd, a, os.SEEK_HOLE)
            out.append((a, min(b, size)))
            pos = b
    except OSError as err:
        if err.errno != errno.ENXIO:  # ENXIO: no data after pos; else the file system cannot say
            out.append((pos, size))
    return out


def data_end(path: str | os.PathLike, size: int) -> int:
    """Where a file's written bytes end: past it, up to ``size``, only holes (bytes never
    written read as zero — RocketMQ's pre-allocated file past its last record:
    ``MappedFile`` maps the whole size, nothing writes the rest).  ``size`` when the file
    cannot be opened or the file system cannot say."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return size
    try:
        regions = data_regions(fd, 0, size)
    finally:
        os.close(fd)
    return regions[-1][1] if regions else 0


def nonzero_extent(path: Path, start: int, chunk: int = 8 << 20) -> tuple[int, int] | None:
    """(first, last+1) non-zero byte at or after ``start``, or None.  Holes of a sparse
    file are skipped without reading; data regions are scanned in chunks from each end."""
    size = path.stat().st_size
    if start >= size:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        regions = data_regions(fd, start, size)
        first = last = None
        for a, b in regions:
            for off in range(a, b, chunk):
                data = os.pread(fd, min(chunk, b - off), off)
                nz = np.flatnonzero(np.frombuffer(data, np.uint8))
                if len(nz):
                    first = off + int(nz[0])
                    break
            if first is not None:
                break
        if first is None:
            return None
        for a, b in reversed(regions):
            if b <= first:
                break
            off = b
            while off > max(a, first):
                lo = max(a, first, off - chunk)
                data = os.pread(fd, off - lo, lo)
                nz = np.flatnonzero(np.frombuffer(data, np.uint8))
                if len(nz):
                    last = lo + int(nz[-1]) + 1
                    break
                off = lo
            if last is not None:
                break
        return first, last if last is not None else first + 1
    finally:
        os.close(fd)


def nonzero_past(files, offset: int):
    """Each of ``files`` (the mapped files of one queue, in order) that holds non-zero
    bytes at or past physical ``offset``: ``(file, the in-file position the search
    starts at, (first, last+1) non-zero byte)``."""
    for f in files:
        if f.file_from_offset + f.file_size <= offset:
            continue
        start = max(0, offset - f.file_from_offset)
        ext = nonzero_extent(f.path, start)
        if ext is not None:
            yield f, start, ext


def zero_runs(buf, lo: int, hi: int, min_length: int = 64) -> list[tuple[int, int]]:
    """The runs of at least ``min_length`` zero bytes in ``buf[lo:hi]``, as
    ``(start, end)`` positions of ``buf``, in order."""
    a = np.frombuffer(buf, np.uint8)[lo:hi]
    if not len(a):
        return []
    z = np.concatenate(([False], a == 0, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(z))
    starts, ends = edges[0::2], edges[1::2]
    keep = ends - starts >= min_length
    return [(lo + int(s), lo + int(e)) for s, e in zip(starts[keep], ends[keep])]
