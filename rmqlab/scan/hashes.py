"""Java's hashes of many strings at once: ``String.hashCode`` over UTF-16 code units
(tagsCode, index keys), ``topic#key`` hashes from a topic prefix and a key, and the
index slot hash (``IndexFile.indexKeyHashMethod``), as numpy and Arrow columns.

The one-string forms are :mod:`rmqlab.format.hashing`'s; tests compare the two.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


_POW31 = np.ones(1, dtype=np.uint32)


def _pow31(n: int) -> np.ndarray:
    global _POW31
    if len(_POW31) < n:
        p = np.empty(max(n, 2 * len(_POW31)), dtype=np.uint32)
        p[0] = 1
        with np.errstate(over="ignore"):
            for i in range(1, len(p)):  # 32-bit wrap, as Java int arithmetic
                p[i] = p[i - 1] * np.uint32(31)
        _POW31 = p
    return _POW31


def java_string_hashes(keys: Sequence[str]) -> np.ndarray:
    """Java ``String.hashCode()`` of every key as int32, vectorised.

    ``h = Σ c[i]·31^(n-1-i) mod 2^32`` over UTF-16 code units; equal to
    :func:`rmqlab.format.hashing.java_string_hash` key for key (tested).
    """
    if not keys:
        return np.zeros(0, dtype=np.int32)
    joined = "".join(keys)
    if joined.isascii():
        codes = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).astype(np.uint32)
        lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    else:
        codes = np.frombuffer(joined.encode("utf-16-be", errors="surrogatepass"), dtype=">u2").astype(np.uint32)
        lengths = np.fromiter((len(k.encode("utf-16-be", errors="surrogatepass")) // 2 for k in keys), dtype=np.int64, count=len(keys))
    return _hash_code_units(codes, lengths).view(np.int32)


def _hash_code_units(codes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Java ``String.hashCode`` (uint32) of consecutive keys given as their UTF-16 code
    units ``codes`` (uint32) cut into ``lengths``."""
    n = len(lengths)
    if n == 0 or len(codes) == 0:
        return np.zeros(n, dtype=np.uint32)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    lmin, lmax = int(lengths.min()), int(lengths.max())
    if lmin == lmax and lmax <= 64:
        # keys of one length (UNIQ_KEY is always 32 hex digits): a matrix of code
        # units times the powers of 31, summed per row
        with np.errstate(over="ignore"):
            return (codes.reshape(n, lmax) * _pow31(lmax + 1)[lmax - 1 :: -1]).sum(axis=1, dtype=np.uint32)
    # exponent of each code unit: distance to the end of its own key
    exponent = np.repeat(ends, lengths) - 1 - np.arange(len(codes), dtype=np.int64)
    with np.errstate(over="ignore"):
        terms = codes * _pow31(int(lengths.max()) + 1)[exponent]
    out = np.zeros(n, dtype=np.uint32)
    nonempty = lengths > 0
    if nonempty.any():
        out[nonempty] = np.add.reduceat(terms, starts[nonempty], dtype=np.uint32)
    return out


def ascii_hashes_vectorised(data: np.ndarray, offs: np.ndarray, out: np.ndarray) -> None:
    """:func:`rmqlab.scan.kernels.ascii_hashes`'s answer by numpy (:func:`_hash_code_units`):
    what runs while the compiled loops are not loaded, where the loop interpreted costs
    ~1 µs a byte (~70 ms of a sample store's verify for its ~2,000 index keys; this, ~1 ms)."""
    out[:] = _hash_code_units(data[offs[0] : offs[-1]].astype(np.uint32), np.diff(offs))


def java_string_hashes_arrow(arr) -> tuple[np.ndarray, np.ndarray]:
    """Java ``String.hashCode`` (as uint32) and length in UTF-16 code units of every
    value of an Arrow string array (or chunked array); nulls count as ``""``.

    ASCII chunks are hashed straight from the Arrow data buffer (no Python strings);
    others go through :func:`java_string_hashes`.  Lengths let a caller prefix a
    constant: ``hash(p + s) = hash(p)·31^len(s) + hash(s)`` (see :func:`prefixed_hashes`).
    """
    import pyarrow as pa

    from .compute import fill_null

    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    hs, ls = [], []
    for c in chunks:
        n = len(c)
        if n == 0:
            continue
        if c.null_count:
            c = fill_null(c, "")
        bufs = c.buffers()
        offs = np.frombuffer(bufs[1], np.int32, count=n + 1, offset=c.offset * 4).astype(np.int64)
        data = np.frombuffer(bufs[2], np.uint8)[offs[0] : offs[-1]] if bufs[2] is not None else np.zeros(0, np.uint8)
        lengths = np.diff(offs)
        if len(data) == 0 or int(data.max()) < 0x80:
            from .kernels import ascii_hashes  # numba: loaded by bulk paths only

            hs.append(ascii_hashes(data, offs - offs[0], plain=ascii_hashes_vectorised))
            ls.append(lengths)
        else:
            keys = c.to_pylist()
            hs.append(java_string_hashes(keys).view(np.uint32))
            ls.append(np.fromiter((len(k.encode("utf-16-be", errors="surrogatepass")) // 2 for k in keys), dtype=np.int64, count=n))
    if not hs:
        return np.zeros(0, np.uint32), np.zeros(0, np.int64)
    return np.concatenate(hs), np.concatenate(ls)


def prefixed_hashes(prefix_hashes: np.ndarray, hashes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``hash(prefix + s)`` (uint32) from ``hash(prefix)``, ``hash(s)`` and ``len(s)``
    (Java int arithmetic: ``h·31^n + hash(s)`` with 32-bit wrap)."""
    if len(hashes) == 0:
        return np.zeros(0, np.uint32)
    pw = _pow31(int(lengths.max()) + 1)[lengths]
    with np.errstate(over="ignore"):
        return prefix_hashes.astype(np.uint32) * pw + hashes.astype(np.uint32)


def index_hashes_from_java(h: np.ndarray) -> np.ndarray:
    """Java ``IndexFile.indexKeyHashMethod`` from ``String.hashCode`` values (any 32-bit
    integer array): ``abs(hashCode)``, 0 for ``Integer.MIN_VALUE``; as int64."""
    h = np.asarray(h).astype(np.uint32).view(np.int32).astype(np.int64)
    h = np.abs(h)
    h[h == 2**31] = 0
    return h


def index_key_hashes(keys: Sequence[str]) -> np.ndarray:
    """Java ``IndexFile.indexKeyHashMethod`` for many keys: ``abs(hashCode)``, 0 for
    ``Integer.MIN_VALUE``; as int64."""
    return index_hashes_from_java(java_string_hashes(keys))
