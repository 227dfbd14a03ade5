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
        a = np.frombuffer(buf, np.uint8) if not isinstance(buf, np.ndarray) else buf.view(np.uint8).reshape(-1)
        starts = np.asarray(starts, dtype=np.int64)
        return compiled_kernels().crc32_slices(a, starts, np.asarray(ends, dtype=np.int64) - starts)
    mv = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    starts = np.asarray(starts).tolist()
    ends = np.asarray(ends).tolist()
    fn = crc32 if n and (sum(ends) - sum(starts)) >= ISAL_FROM * n else zlib.crc32
    return np.fromiter(map(fn, map(mv.__getitem__, map(slice, starts, ends))), np.int64, n)


def compiled_kernels():
    """:mod:`rmqlab.scan.kernels`, the compiled loops every bulk pass runs on.  Imported
    on first use, not with this module: numba takes ~0.4 s to import.  numba and isal
    are dependencies of rmqlab; without them the bulk passes cannot run, and this says
    so (there is no slower copy of them to fall back on)."""
    from . import kernels

    if not kernels.AVAILABLE:
        raise ImportError(f"rmqlab's bulk decoder needs numba and isal (ISA-L), which are not usable here: {kernels.UNAVAILABLE_BECAUSE}")
    return kernels
