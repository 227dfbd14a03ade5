"""Hashes and checksums RocketMQ puts on disk.

* :func:`java_string_hash` — Java ``String.hashCode()``: used for consume-queue
  tagsCode (``MessageExtBrokerInner.tagsString2tagsCode``) and index key hashes
  (``IndexFile.indexKeyHashMethod``).
* :func:`body_crc` — Java ``UtilAll.crc32``: CRC-32 (IEEE, zlib) with the top bit
  masked off. Not CRC-32C.
* :data:`crc32` — the raw CRC-32 every bulk path uses: ISA-L's (``isal``, the same
  IEEE polynomial, several times faster on long inputs) when installed, else zlib's;
  zlib's is the quicker call below :data:`ISAL_FROM` bytes.  This is the one place
  that chooses; :func:`rmqlab.scan.crc.crc32_slices` applies the choice to many slices
  of one buffer.
* :func:`crc32c` — CRC-32C (Castagnoli): not RocketMQ's, but what rocketmq-rust's v2
  timer files carry (``storage_format.rs crc32c``), and `rmqlab diff`'s page prints.
"""

from __future__ import annotations

import zlib

_INT_MIN = -(1 << 31)

try:
    from isal.isal_zlib import crc32  # same function as zlib.crc32, SIMD-accelerated
except ImportError:  # pragma: no cover - isal is a declared dependency; zlib is the fallback
    crc32 = zlib.crc32


def crc32c(data) -> int:
    """CRC-32C (Castagnoli) of ``data`` (bytes or a buffer): the ``crc32c`` package's,
    hardware-accelerated where the CPU has it (imported here, on first use: the package
    imports importlib.metadata, ~30 ms of every command's start, for rocketmq-rust's
    timer files and `rmqlab diff` alone)."""
    from crc32c import crc32c as _crc32c

    return _crc32c(data)


#: inputs from this size on go to ISA-L; below it zlib's call is the cheaper one
ISAL_FROM = 1024


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
