"""CRC-32 of many slices of one buffer, and the loader of the compiled loops.

:func:`crc32_slices` is what the batch put and the bulk decoder use to checksum many
bodies at once; the choice of CRC implementation per slice is
:data:`rmqlab.format.hashing.crc32`'s.
"""

from __future__ import annotations

import zlib

import numpy as np

from ..format.hashing import ISAL_FROM, crc32

#: from this many slices on, :func:`crc32_slices` uses the compiled loop
KERNEL_FROM = 16


def crc32_slices(buf, starts, ends) -> np.ndarray:
    """The raw CRC-32 of ``buf[starts[i]:ends[i]]`` for every i (int64): in one
    compiled loop (:func:`rmqlab.scan.kernels.crc32_slices`) for many slices, else
    one C call per slice on a memoryview (no copies, no Python frame per slice)."""
    n = len(starts)
    if n >= KERNEL_FROM:
        kernels = compiled_kernels()
        if kernels is not None:
            a = np.frombuffer(buf, np.uint8) if not isinstance(buf, np.ndarray) else buf.view(np.uint8).reshape(-1)
            starts = np.asarray(starts, dtype=np.int64)
            got = kernels.crc32_slices(a, starts, np.asarray(ends, dtype=np.int64) - starts)
            if got is not None:
                return got
    mv = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    starts = np.asarray(starts).tolist()
    ends = np.asarray(ends).tolist()
    fn = crc32 if n and (sum(ends) - sum(starts)) >= ISAL_FROM * n else zlib.crc32
    return np.fromiter(map(fn, map(mv.__getitem__, map(slice, starts, ends))), np.int64, n)


def compiled_kernels():
    """:mod:`rmqlab.scan.kernels` when its compiled loops are built, else None (the
    callers' numpy paths give the same answers).  Imported on first use, not with this
    module: numba takes ~0.4 s to import."""
    from . import kernels

    return kernels if kernels.AVAILABLE else None
