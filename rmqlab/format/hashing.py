"""Hashes and checksums RocketMQ puts on disk.

* :func:`java_string_hash` — Java ``String.hashCode()``: used for consume-queue
  tagsCode (``MessageExtBrokerInner.tagsString2tagsCode``) and index key hashes
  (``IndexFile.indexKeyHashMethod``).
* :func:`body_crc` — Java ``UtilAll.crc32``: CRC-32 (IEEE, zlib) with the top bit
  masked off. Not CRC-32C.
* :data:`crc32` — the raw CRC-32 every bulk path uses: ISA-L's (``isal``, the same
  IEEE polynomial, several times faster on long inputs) when installed, else zlib's;
  zlib's is the quicker call below :data:`ISAL_FROM` bytes.  This is the one place
  that chooses; :func:`crc32_slices` applies the choice to many slices of one buffer.
"""

from __future__ import annotations

import zlib

import numpy as np

_INT_MIN = -(1 << 31)

try:
    from isal.isal_zlib import crc32  # same function as zlib.crc32, SIMD-accelerated
except ImportError:  # pragma: no cover - isal is a declared dependency; zlib is the fallback
    crc32 = zlib.crc32

#: inputs from this size on go to ISA-L; below it zlib's call is the cheaper one
ISAL_FROM = 1024


def crc32_slices(buf, starts, ends) -> np.ndarray:
    """The raw CRC-32 of ``buf[starts[i]:ends[i]]`` for every i (int64): in one
    compiled loop (:func:`rmqlab.format.kernels.crc32_slices`) for many slices, else
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


#: from this many slices on, :func:`crc32_slices` uses the compiled loop
KERNEL_FROM = 16


def compiled_kernels():
    """:mod:`rmqlab.format.kernels` when its compiled loops are built, else None (the
    callers' numpy paths give the same answers).  Imported on first use, not with this
    module: numba takes ~0.4 s to import."""
    from . import kernels

    return kernels if kernels.AVAILABLE else None


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()``: ``h = 31*h + c`` over UTF-16 code units, 32-bit wrap."""
    h = 0
    data = s.encode("utf-16-be", errors="surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def index_key_hash(key: str) -> int:
    """Java ``IndexFile.indexKeyHashMethod``: ``abs(hashCode)``, 0 when that overflows."""
    h = java_string_hash(key)
    return 0 if h == _INT_MIN else abs(h)


def tags_code(tags: str | None) -> int:
    """Java ``tagsString2tagsCode``: hashCode of the whole TAGS string, 0 without tags."""
    if not tags:
        return 0
    return java_string_hash(tags)


def body_crc(body: bytes) -> int:
    """Java ``UtilAll.crc32(body)``: ``zlib.crc32 & 0x7FFFFFFF``."""
    return crc32(body) & 0x7FFFFFFF
