"""Vectorised bulk decoding of CommitLog bytes into Arrow record batches.

Java counterpart: none as such — RocketMQ reads one record at a time
(``CommitLog.checkMessageAndReturnSize``, ``MessageDecoder.decode``).  This module
reads *millions* of records per call for scans (Spark, ``bench/bench_scan.py``):

1. **find the record positions** of a byte range.  Walking ``pos += totalSize`` is
   sequential, so a long range is cut into *lanes* that are walked side by side with
   numpy (one numpy step advances every lane by one record).  Each lane starts at a
   *valid position* found by resynchronisation (below) and must land exactly on the
   next lane's start; lane 0 starts at a known boundary, so by induction every
   accepted position is on the true chain.  A lane that does not land falls back to
   the sequential walk from there.  Short ranges use a plain ``struct`` walk.  With
   numba the walk is one compiled loop, run in 32 MiB pieces, the next piece on a
   thread of its own while this one is decoded.
2. **gather the fixed fields** of all records at once: a numpy structured dtype
   *derived from* :data:`~rmqlab.format.commitlog.MessageRecord` (one dtype per
   IPv4/IPv6 host combination) is laid over the buffer with a stride of one byte,
   and fancy indexing with the positions copies each record's fixed part.
3. **validate** every length field against ``totalSize`` vectorised; the first bad
   record is handed to :func:`~rmqlab.format.record.decode_record` (the one record
   parser), which names the damage kind, file and offset.
4. **variable parts without a Python loop**: bodies, topics and properties lie in
   file order, so an Arrow ``binary`` array whose offsets alternate *start, end,
   start, end* over the untouched file buffer holds value, gap, value, gap...;
   taking the even values copies them in C++ at memory speed.  Properties are
   split on ``\\x02``/``\\x01`` into a ``map<string,string>`` (same rules as
   :mod:`rmqlab.format.properties`: empty segments and segments without ``\\x01``
   skipped, a later duplicate name wins): with numba in one compiled pass straight
   from the buffer, else with numpy over the concatenated bytes.
5. **CRCs**: with numba, one compiled loop copies every body into its column and
   checks its CRC with ISA-L (:mod:`rmqlab.scan.kernels`, which also walks the
   chain and splits the properties).  Without it: bodies up to 96 bytes are
   checksummed side by side in numpy (CRC-32 tables, two bytes per step, every body
   at once); longer ones one call each (ISA-L's ``crc32`` when ``isal`` is installed
   — same function, ~3x faster — else ``zlib.crc32``), on memoryview slices.

**Resynchronisation** (split starts, and after damage in lenient mode): a *valid
position* ``p`` is one whose magic is a message magic, whose self-recorded
``physicalOffset`` equals ``file_base + p`` and whose length fields recompute
``totalSize`` — or a BLANK whose ``totalSize`` is exactly the bytes left in the file.
A scan of ``[start, stop)`` owns the chain positions from its first position (``start``
itself when it is 0, else the first valid position at or after it) up to, not
including, the first *valid* position at or after ``stop``.  So adjacent ranges
partition a file's records exactly as one whole-file scan does, damage rows included.
(Assumption, stated: no valid-looking stale record lies *inside* another record's
bytes.  Stores rewritten after recovery can break it; scan such files whole, with
``splitSize`` ≥ the file size.)

Rows equal :meth:`rmqlab.store.commitlog.CommitLog.walk` field for field (tested on
every reference store written by RocketMQ): the columns are the keys of
:meth:`~rmqlab.format.record.Record.to_dict` plus ``file``, ``kind`` and ``error``.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from ..format import commitlog as cl
from ..format import hashing
from ..format import properties as props
from ..format import layout
from ..format.layout import PREFIX_DTYPES
from ..format.msgid import format_host
from .crc import compiled_kernels
from .uniques import unique
from ..format.record import (
    BAD_MAGIC,
    BODY_CRC,
    PROPERTY_CRC,
    PROPERTY_CRC_TAIL,
    RecordError,
    decode_record,
)

__all__ = [
    "ARROW_SCHEMA",
    "NeedMoreBytes",
    "decode_file",
    "decode_positions",
    "decode_table",
    "is_valid_position",
    "scan_range",
]

# ----------------------------------------------------------------------------------------
# dtypes derived from the construct schema (the single source of truth)
# ----------------------------------------------------------------------------------------
# PREFIX_DTYPES (rmqlab.format.layout): the fixed part of a record, one dtype per
# IPv4/IPv6 host combination, index = born_v6 + 2*store_v6
_SYS_FLAG_AT = layout.SYS_FLAG_AT
_PHYS_AT = layout.PHYSICAL_OFFSET_AT
_MAX_PREFIX = max(d.itemsize for d in PREFIX_DTYPES)

_PREFIX = struct.Struct(">iI")  # totalSize, magicCode (Java: the 8 bytes every record starts with)
_I64 = struct.Struct(">q")
_MIN_SIZE = cl.FIXED_SIZE_V1_IPV4

# little-endian patterns of the magic codes, for native-order uint32 comparisons:
# V1 0xDAA320A7 and V2 0xDAA320AB differ only in bits 0x0C of their last byte
_MAGIC_MASK_LE = 0xF3FFFFFF
_MAGIC_MSG_LE = int.from_bytes(struct.pack(">I", cl.MAGIC_V1), "little") & _MAGIC_MASK_LE
_MAGIC_BLANK_LE = int.from_bytes(struct.pack(">I", cl.MAGIC_BLANK), "little")

# ----------------------------------------------------------------------------------------
# the output schema
# ----------------------------------------------------------------------------------------
PROPERTIES_TYPE = pa.map_(pa.string(), pa.string())

#: Columns: the keys of ``Record.to_dict`` (``rmqlab dump --json``) + file, kind, error.
ARROW_SCHEMA = pa.schema(
    [
        ("physical_offset", pa.int64()),
        ("total_size", pa.int32()),
        ("magic", pa.int64()),
        ("body_crc", pa.int32()),
        ("crc_ok", pa.bool_()),
        ("queue_id", pa.int32()),
        ("flag", pa.int32()),
        ("queue_offset", pa.int64()),
        ("sys_flag", pa.int32()),
        ("born_timestamp", pa.int64()),
        ("born_host", pa.string()),
        ("store_timestamp", pa.int64()),
        ("store_host", pa.string()),
        ("reconsume_times", pa.int32()),
        ("prepared_transaction_offset", pa.int64()),
        ("topic", pa.string()),
        ("properties", PROPERTIES_TYPE),
        ("body", pa.binary()),
        ("msg_id", pa.string()),
        ("file", pa.string()),
        ("kind", pa.string()),
        ("error", pa.string()),
    ]
)
COLUMNS = ARROW_SCHEMA.names

KIND_MESSAGE = "MESSAGE"
KIND_BLANK = "BLANK"


def crc_damage(file: str, pos: int, kind: str, physical_offset: int) -> RecordError:
    """The damage a record whose stored CRC does not match is (``BODY_CRC`` or
    ``PROPERTY_CRC``): what a strict scan raises and a lenient row's ``error`` says."""
    return RecordError(file, pos, kind, f"stored CRC does not match the recomputed one (record at physical offset {physical_offset})")


def with_crc_errors(batch: pa.RecordBatch, file: str, file_base: int) -> pa.RecordBatch:
    """``batch`` (rows of one file, whose name is ``file`` and first offset
    ``file_base``) with each CRC-mismatch row's ``error`` saying the damage
    (:func:`crc_damage`): what the rows a reader is given say of it, in a Parquet
    export as in Spark's source.  The decoder's own batches leave it null, the record
    being read whole: the walks that take its fields (verify, recovery's scan, the
    summary) tell such a row from one whose bytes stopped the decoder by it."""
    from ..format.record import BODY_CRC, PROPERTY_CRC
    from . import compute as ac

    kind = batch.column("kind")
    crc = ac.and_(ac.is_in(kind, value_set=pa.array([BODY_CRC, PROPERTY_CRC])), ac.is_null(batch.column("error")))
    rows = np.flatnonzero(np.asarray(ac.fill_null(crc, False).to_numpy(zero_copy_only=False), bool))
    if not len(rows):
        return batch
    phys, errors = batch.column("physical_offset").to_pylist(), batch.column("error").to_pylist()
    for i in rows.tolist():
        errors[i] = str(crc_damage(file, phys[i] - file_base, kind[i].as_py(), phys[i]))
    return batch.set_column(batch.schema.get_field_index("error"), "error", pa.array(errors, pa.string()))


class NeedMoreBytes(Exception):
    """The buffer ends before the file does and a record runs past it.

    Raised by :func:`scan_range` after every row before ``position`` was yielded;
    resume with a buffer that covers ``[position, position + needed)`` (or the rest
    of the file) and ``start=position, resync=self.resync``.
    """

    def __init__(self, position: int, needed: int, resync: bool):
        self.position = position
        self.needed = needed
        self.resync = resync
        super().__init__(f"need bytes up to {position + needed} (resume at {position}, resync={resync})")


@dataclass
class _Ctx:
    """One buffer and what it is: ``buf[0]`` is byte ``buf_offset`` of ``file``."""

    a: np.ndarray  # uint8 view of the buffer
    mv: memoryview
    buf_offset: int
    file_base: int
    file_size: int
    file: str
    mode: str
    verify_crc: bool
    include_body: bool
    topics: frozenset | None
    start_time: int | None
    end_time: int | None
    batch_rows: int
    batch_bytes: int
    columns: frozenset | None = None
    java_properties: tuple[str, ...] = ()
    #: file position from which the file holds only holes (never written, zeros
    #: without reading them), or None where that is not known
    data_end: int | None = None

    @property
    def buf_end(self) -> int:  # file position one past the buffer
        return self.buf_offset + len(self.a)

    @property
    def complete(self) -> bool:  # the buffer reaches the end of the file
        return self.buf_end >= self.file_size

    @property
    def filtered(self) -> bool:
        return self.topics is not None or self.start_time is not None or self.end_time is not None

    # strided views: element i is the value whose first byte is buffer byte i
    def view(self, dtype) -> np.ndarray:
        return layout.strided_view(self.a, dtype)

    def gather(self, dtype, file_positions: np.ndarray) -> np.ndarray:
        """Values of ``dtype`` at file positions (clipped into the buffer: callers
        only trust values at positions they checked)."""
        dtype = np.dtype(dtype)
        # fancy indexing copies plain void items much faster than structured ones
        v = self.view(np.dtype((np.void, dtype.itemsize)))
        if len(v) == 0:
            return np.zeros(len(file_positions), dtype)
        idx = np.clip(file_positions - self.buf_offset, 0, len(v) - 1)
        return v[idx].view(dtype)


# ----------------------------------------------------------------------------------------
# resynchronisation
# ----------------------------------------------------------------------------------------
def is_valid_position(buf, pos: int, *, file_base: int = 0, file_size: int | None = None, buf_offset: int = 0) -> bool:
    """A record boundary that resynchronisation may start at (see the module docs).

    ``pos`` is a position in the file; ``buf`` holds file bytes from ``buf_offset``.
    Raises :class:`NeedMoreBytes` when the answer needs bytes the buffer lacks.
    """
    file_size = buf_offset + len(buf) if file_size is None else file_size
    i = pos - buf_offset
    end = len(buf)
    if pos + 8 > file_size:
        return False
    if i + 8 > end:
        raise NeedMoreBytes(pos, 8, True)
    total_size, magic = _PREFIX.unpack_from(buf, i)
    if magic == cl.MAGIC_BLANK:
        return total_size == file_size - pos
    if magic not in cl.MESSAGE_MAGICS or total_size < _MIN_SIZE or pos + total_size > file_size:
        return False
    if i + total_size > end:
        raise NeedMoreBytes(pos, total_size, True)
    if _I64.unpack_from(buf, i + _PHYS_AT)[0] != file_base + pos:
        return False
    try:
        return decode_record(memoryview(buf)[i : i + total_size], 0, check_crc=False, read_body=False) is not None
    except RecordError:
        return False


def _candidates(ctx: _Ctx, lo: int, hi: int) -> np.ndarray:
    """Sorted file positions p in [lo, hi) whose magic field (p+4) looks like a message
    or BLANK magic.  Native uint32 views at the four byte alignments; no per-byte loop."""
    a = ctx.a
    i0 = max(lo - ctx.buf_offset, 0) + 4
    i1 = min(hi - ctx.buf_offset, len(a) - 8) + 4  # magic must fit with its totalSize
    if i1 <= i0:
        return np.zeros(0, np.int64)
    parts = []
    for k in range(4):
        s = i0 + k
        n = (i1 - s + 3) // 4
        if n <= 0 or s + 4 * n > len(a) + 3:
            n = max(0, (len(a) - s) // 4)
            n = min(n, (i1 - s + 3) // 4)
        if n <= 0:
            continue
        u = np.ndarray((n,), "<u4", buffer=a, offset=s, strides=(4,))
        hit = ((u & _MAGIC_MASK_LE) == _MAGIC_MSG_LE) | (u == _MAGIC_BLANK_LE)
        idx = np.flatnonzero(hit)
        if len(idx):
            parts.append(idx * 4 + s)
    if not parts:
        return np.zeros(0, np.int64)
    c = np.sort(np.concatenate(parts)) - 4 + ctx.buf_offset
    return c[(c >= lo) & (c < hi)].astype(np.int64)


def _all_zero(ctx: _Ctx, lo: int, hi: int) -> bool:
    """Whether file bytes [lo, hi) (clipped to the buffer) are all zero; checked
    eight bytes at a time, up to the file's data end where it is known (the holes past
    it are zeros: reading them would fault in a zeroed page for every 4 KiB of them,
    ~0.2 s a GiB, for the unwritten part of the last file of every log)."""
    if ctx.data_end is not None:
        hi = min(hi, ctx.data_end)
    i0 = max(lo - ctx.buf_offset, 0)
    i1 = min(hi - ctx.buf_offset, len(ctx.a))
    if i1 <= i0:
        return True
    a = ctx.a
    head = (-(i0 + a.ctypes.data)) % 8  # bytes before the first 8-aligned address
    j0 = min(i0 + head, i1)
    n64 = (i1 - j0) // 8
    j1 = j0 + n64 * 8
    if a[i0:j0].any() or a[j1:i1].any():
        return False
    if n64 == 0:
        return True
    return not np.ndarray((n64,), np.uint64, buffer=a, offset=j0).any()


def _next_valid(ctx: _Ctx, lo: int, hi: int) -> int | None:
    """First valid position in [lo, hi), or ``None``."""
    window = 1 << 16
    pos = lo
    if ctx.data_end is not None:  # no record starts in the holes (a magic code is not zero)
        hi = min(hi, ctx.data_end)
    while pos < hi:
        end = min(hi, pos + window)
        if _all_zero(ctx, pos, end + 8):  # the unwritten tail of an active file
            pos = end
            window = min(window * 4, 1 << 26)
            continue
        for c in _candidates(ctx, pos, end).tolist():
            if is_valid_position(ctx.a, int(c), file_base=ctx.file_base, file_size=ctx.file_size, buf_offset=ctx.buf_offset):
                return int(c)
        if end >= ctx.buf_end - 7 and not ctx.complete and end < hi:
            raise NeedMoreBytes(end, 8, True)
        pos = end
        window = min(window * 4, 1 << 24)
    return None


# ----------------------------------------------------------------------------------------
# finding chain positions
# ----------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------
# decoding positions into columns
# ----------------------------------------------------------------------------------------
@functools.cache
def _hex_table(digits: int) -> np.ndarray:
    """Every value of ``digits`` hex digits → its upper-case digits, as one unsigned
    integer of ``digits`` bytes in memory order: ``_hex_table(2)`` maps a byte to its two
    digits (uint16), ``_hex_table(4)`` a 16-bit value to its four (uint32).  Built by
    numpy on first use (a Python loop over 65,536 values cost ~25 ms; built at import,
    ~5 ms of every command's start, msgIds or not)."""
    v = np.arange(16 ** digits)
    chars = np.frombuffer(b"0123456789ABCDEF", np.uint8)[np.stack([(v >> (4 * (digits - 1 - k))) & 15 for k in range(digits)], axis=1)]
    return np.ascontiguousarray(chars).view({2: np.uint16, 4: np.uint32}[digits]).reshape(-1)


def _interleaved(ctx: _Ctx, starts: np.ndarray, ends: np.ndarray, keep: np.ndarray | None) -> pa.Array:
    """Binary array of buffer slices [starts[i], ends[i]) (file positions, in order,
    non-overlapping), copied by Arrow's take/filter kernel from the untouched buffer."""
    n = len(starts)
    if n == 0:
        return pa.array([], pa.binary())
    lens = ends - starts
    length = int(lens[0])
    if 0 < length <= _ROWS_MAX and (lens == length).all():
        # one length (fixed-size payloads, same-length names): rows of a matrix,
        # gathered in one fancy-indexing copy; offsets are a multiple of the length
        if keep is not None:
            starts = starts[keep]
            n = len(starts)
        data = _rows(ctx.a, starts - ctx.buf_offset, length) if n else np.zeros((0, length), np.uint8)
        offs = np.arange(n + 1, dtype=np.int32) * length
        return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offs), pa.py_buffer(data)])
    if int(lens.sum()) >= _VIEW_MIN_MEAN * n:
        return _gathered_views(ctx, starts, ends, keep)
    lo = int(starts[0]) - ctx.buf_offset
    hi = int(ends[-1]) - ctx.buf_offset
    offs = np.empty(2 * n + 1, np.int32)
    offs[0 : 2 * n : 2] = starts - ctx.buf_offset - lo
    offs[1 : 2 * n : 2] = ends - ctx.buf_offset - lo
    offs[2 * n] = hi - lo
    data = pa.py_buffer(ctx.a[lo:hi]) if hi > lo else pa.py_buffer(b"")
    arr = pa.Array.from_buffers(pa.binary(), 2 * n, [None, pa.py_buffer(offs), data])
    if keep is None:
        return arr.take(_even_indices(n))
    mask = np.zeros(2 * n, bool)
    mask[0::2] = keep
    return arr.filter(pa.array(mask))


#: values of one length up to this long are gathered as matrix rows
_ROWS_MAX = 4096
#: values this long on average are copied through a binary_view
#: array (one memcpy per value) rather than the take kernel (faster for short ones)
_VIEW_MIN_MEAN = 256


@functools.cache
def _even_indices_table() -> pa.Array:
    """0, 2, ... below 2 M: made at the first use, not at every command's start."""
    return pa.array(np.arange(0, 1 << 21, 2, dtype=np.int32))


def _even_indices(n: int) -> pa.Array:
    """Arrow int32 indices 0, 2, 4, ... (``n`` of them): the values of an interleaved
    value, gap, value, gap ... array.  ``take`` with them copies short values ~30%
    faster than ``filter`` with an alternating mask (measured on property names,
    values and whole properties strings)."""
    if n > 1 << 20:
        return pa.array(np.arange(0, 2 * n, 2, dtype=np.int32))
    return _even_indices_table().slice(0, n)


def _gathered_views(ctx: _Ctx, starts: np.ndarray, ends: np.ndarray, keep: np.ndarray | None) -> pa.Array:
    """Binary array of buffer slices [starts[i], ends[i]) (file positions, in order),
    built as a ``binary_view`` array over the untouched buffer (Arrow's view layout:
    length, then the bytes inline when <= 12, else a 4-byte prefix, buffer 0 and the
    offset) and cast to ``binary``: Arrow copies each value once."""
    if keep is not None:
        starts, ends = starts[keep], ends[keep]
    n = len(starts)
    if n == 0:
        return pa.array([], pa.binary())
    off = ctx.buf_offset
    lo = int(starts[0]) - off
    hi = int(ends[-1]) - off
    rel = starts - off - lo
    lens = ends - starts
    views = np.zeros((n, 4), np.int32)
    views[:, 0] = lens
    long_ = lens > 12
    data = ctx.a[lo:hi]
    if long_.all():
        views[:, 1] = np.ndarray((len(data) - 3,), np.int32, buffer=data, strides=(1,))[rel]
        views[:, 3] = rel
    else:
        li = np.flatnonzero(long_)
        if len(li):
            views[li, 1] = np.ndarray((len(data) - 3,), np.int32, buffer=data, strides=(1,))[rel[li]]
            views[li, 3] = rel[li]
        si = np.flatnonzero(~long_)
        inline = views.view(np.uint8)[:, 4:]  # 12 bytes per row
        for j in range(12):
            has = lens[si] > j
            rows = si[has]
            if not len(rows):
                break
            inline[rows, j] = data[rel[rows] + j]
    dbuf = pa.py_buffer(data) if hi > lo else pa.py_buffer(b"")
    arr = pa.Array.from_buffers(pa.binary_view(), n, [None, pa.py_buffer(views), dbuf])
    return arr.cast(pa.binary())


def _is_ascii(arr: pa.Array) -> bool:
    data = arr.buffers()[2]
    if data is None:
        return True
    d = np.frombuffer(data, np.uint8)
    return not len(d) or int(d.max()) < 0x80


def _to_string(arr: pa.Array) -> pa.Array:
    """binary → string; invalid UTF-8 becomes U+FFFD, as Java (and props.decode_text) do.
    ASCII needs no validation: the bytes are reinterpreted, not copied."""
    if _is_ascii(arr):
        return arr.view(pa.string())
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([None if v is None else props.decode_text(v) for v in arr.to_pylist()], pa.string())


#: value -> the longest constant column built for it (Arrow arrays are immutable, so
#: batches share slices of it).  Every batch has a ``file`` and a ``kind`` column, and
#: usually one store host: rebuilding them cost ~3% of a scan of ~200-byte records.
_CONSTANT_COLUMNS: dict[str, pa.Array] = {}
_CONSTANT_COLUMNS_MAX = 8


def _constant_strings(value: str, n: int) -> pa.Array:
    """A string column holding ``value`` ``n`` times."""
    cached = _CONSTANT_COLUMNS.get(value)
    if cached is not None and len(cached) >= n:
        return cached.slice(0, n)
    b = value.encode("utf-8")
    offs = np.arange(n + 1, dtype=np.int32) * len(b)
    arr = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offs), pa.py_buffer(b * n)])
    if len(b) * n <= 16 << 20:  # bounded memory: one batch's worth for a long value
        if len(_CONSTANT_COLUMNS) >= _CONSTANT_COLUMNS_MAX:
            _CONSTANT_COLUMNS.clear()  # many files in one worker: start over, never grow
        _CONSTANT_COLUMNS[value] = arr
    return arr


def _strings_from_codes(codes: np.ndarray, texts: list[str]) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(texts, pa.string())).cast(pa.string())


def _hosts(addr_rows: np.ndarray, ports: np.ndarray) -> pa.Array:
    """``host:port`` strings (msgid.format_host) through a dictionary of distinct hosts."""
    n = len(ports)
    alen = addr_rows.shape[1]
    if n == 0:
        return pa.array([], pa.string())
    if alen == 4:  # IPv4: address and port packed in one uint64, hashed by Arrow
        packed = (np.ascontiguousarray(addr_rows).view(">u4")[:, 0].astype(np.uint64) << np.uint64(32)) | ports.astype(np.uint32).astype(np.uint64)
        if (packed == packed[0]).all():
            return _constant_strings(format_host(bytes(addr_rows[0]), int(ports[0])), n)
        d = pa.array(packed).dictionary_encode()
        texts = [format_host((u >> 32).to_bytes(4, "big"), struct.unpack(">i", (u & 0xFFFFFFFF).to_bytes(4, "big"))[0]) for u in d.dictionary.to_pylist()]
        return pa.DictionaryArray.from_arrays(d.indices, pa.array(texts, pa.string())).cast(pa.string())
    key = np.zeros((n, 24), np.uint8)
    key[:, :alen] = addr_rows
    key[:, 20:24] = ports.astype(">i4").view(np.uint8).reshape(n, 4)
    words = key.view(np.uint64)  # (n, 3)
    if (words == words[0]).all():
        text = format_host(bytes(key[0, :alen]), int(ports[0]))
        return _constant_strings(text, n)
    if alen == 4:
        packed = (key[:, :4].view(">u4")[:, 0].astype(np.uint64) << np.uint64(32)) | ports.astype(np.uint32).astype(np.uint64)
        uniq, inverse = unique(packed, return_inverse=True)
        texts = [format_host(int(u >> np.uint64(32)).to_bytes(4, "big"), struct.unpack(">i", int(u & np.uint64(0xFFFFFFFF)).to_bytes(4, "big"))[0]) for u in uniq]
        return pa.DictionaryArray.from_arrays(pa.array(inverse.astype(np.int32)), pa.array(texts, pa.string())).cast(pa.string())
    fsb = pa.Array.from_buffers(pa.binary(24), n, [None, pa.py_buffer(np.ascontiguousarray(key))])
    d = fsb.dictionary_encode()
    texts = [format_host(raw[:alen], struct.unpack(">i", raw[20:24])[0]) for raw in d.dictionary.to_pylist()]
    return pa.DictionaryArray.from_arrays(d.indices, pa.array(texts, pa.string())).cast(pa.string())


def _msg_ids(addr_port_raw: np.ndarray, positions: np.ndarray) -> pa.Array:
    """Offset msgIds (Java ``MessageDecoder.createMessageId``): hex of store address,
    port and the record's physical offset, all rows the same width here."""
    n = len(positions)
    w = addr_port_raw.shape[1]
    if n and (addr_port_raw == addr_port_raw[0]).all():
        # one store host (the usual case): its hex once, then the offsets' 16 digits
        # as four lookups of four digits (w is 8 or 20, so the uint32 view lines up)
        row = 2 * (w + 8)
        hexed = np.empty((n, row), np.uint8)
        hexed[:, : 2 * w] = _hex_table(2)[addr_port_raw[0]].view(np.uint8)
        hexed.view(np.uint32)[:, w // 2 :] = _hex_table(4)[positions.astype(">i8").view(">u2").reshape(n, 4)]
        offs = np.arange(n + 1, dtype=np.int32) * row
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offs), pa.py_buffer(hexed)])
    raw = np.empty((n, addr_port_raw.shape[1] + 8), np.uint8)
    raw[:, : addr_port_raw.shape[1]] = addr_port_raw
    raw[:, addr_port_raw.shape[1] :] = positions.astype(">i8").view(np.uint8).reshape(n, 8)
    hexed = _hex_table(2)[raw]  # (n, w) two ASCII digits per byte
    w = hexed.shape[1] * 2
    offs = np.arange(n + 1, dtype=np.int32) * w
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offs), pa.py_buffer(hexed)])


def _as_string(b: pa.Array, non_ascii: bool) -> pa.Array:
    """Binary as string: a free view when every byte is ASCII, else a validating cast
    (``ArrowInvalid`` on invalid UTF-8)."""
    return b.cast(pa.string()) if non_ascii else b.view(pa.string())


def _strings(keys_b: pa.Array, vals_b: pa.Array, non_ascii: bool) -> tuple[pa.Array, pa.Array] | None:
    """Names and values (binary) as strings (:func:`_as_string`); None on invalid UTF-8
    (the caller then decodes in Python with U+FFFD, as Java does)."""
    try:
        return _as_string(keys_b, non_ascii), _as_string(vals_b, non_ascii)
    except pa.ArrowInvalid:
        return None


def _map_of_pairs(moffs: np.ndarray, keys_b: pa.Array, vals_b: pa.Array, non_ascii: bool) -> pa.Array | None:
    """The properties column from the compiled split (:func:`kernels.property_pairs`);
    None on invalid UTF-8."""
    kv = _strings(keys_b, vals_b, non_ascii)
    return None if kv is None else pa.MapArray.from_arrays(pa.array(moffs), *kv)


def _properties_at(ctx: _Ctx, starts: np.ndarray, ends: np.ndarray, keep: np.ndarray | None) -> pa.Array:
    """The properties column of the buffer slices ``[starts[i], ends[i])`` (file
    positions): split by the compiled pass straight from the buffer (no copy of the
    properties strings first); a batch with invalid UTF-8 goes record by record."""
    k = _kern()
    s, e = (starts, ends) if keep is None else (starts[keep], ends[keep])
    mapped = _map_of_pairs(*k.property_pairs(ctx.a, s - ctx.buf_offset, e - ctx.buf_offset))
    return mapped if mapped is not None else _properties_python(_interleaved(ctx, starts, ends, keep))


def _properties_python(parr: pa.Array) -> pa.Array:
    """Slow path for batches with invalid UTF-8 (decoded with U+FFFD, as Java does)."""
    rows = []
    for raw in parr.to_pylist():
        rows.append(list(props.to_ordered_dict(props.decode_pairs(raw or b"")).items()))
    return pa.array(rows, PROPERTIES_TYPE)


_crc32 = hashing.crc32  # ISA-L's when installed (see rmqlab.format.hashing)


def _rows(a: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """``a[s : s + length]`` for each start, as an ``(n, length)`` matrix."""
    v = np.ndarray((len(a) - length + 1,), np.dtype((np.void, length)), buffer=a, strides=(1,))
    return v[starts].view(np.uint8).reshape(len(starts), length)


#: "__CRC32#", the first 8 bytes of the property Java appends last, as a native uint64
_CRC32_NAME_U8 = np.frombuffer(props.CRC32.encode(), "<u8")[0]


#: the compiled loops (one loader for the package: crc.compiled_kernels)
_kern = compiled_kernels


def _check_crcs(ctx: _Ctx, P, total, body_crc, props_len, computed):
    """``(body_ok, prop_state)``: prop_state 0 = no __CRC32# property, 1 ok, 2 bad
    (Java ``enabledAppendPropCRC``: last 20 bytes of the properties).  ``computed``:
    the bodies' CRCs (from the compiled pass)."""
    mv = ctx.mv
    off = ctx.buf_offset
    crc = _crc32
    body_ok = (computed & 0x7FFFFFFF) == body_crc
    prop_state = np.zeros(len(P), np.int8)
    cand = np.flatnonzero(props_len >= PROPERTY_CRC_TAIL)
    if len(cand):
        # one 8-byte compare per record first: few records end with the property
        cand = cand[ctx.gather("<u8", P[cand] + total[cand] - PROPERTY_CRC_TAIL) == _CRC32_NAME_U8]
    if len(cand):
        tail_at = P[cand] + total[cand] - PROPERTY_CRC_TAIL
        tails = ctx.gather(np.dtype((np.void, PROPERTY_CRC_TAIL)), tail_at)
        tails = tails.view(np.uint8).reshape(-1, PROPERTY_CRC_TAIL)
        prefix = np.frombuffer((props.CRC32 + props.NAME_VALUE_SEPARATOR).encode(), np.uint8)
        has = (tails[:, : len(prefix)] == prefix).all(axis=1) & (tails[:, -1] == 2)
        for i in np.flatnonzero(has).tolist():
            r = int(cand[i])
            digits = bytes(tails[i, -11:-1])
            if not digits.isdigit():
                prop_state[r] = 2
                continue
            p = int(P[r]) - off
            want = int(digits[::-1].decode("ascii"))
            got = crc(mv[p : p + int(total[r]) - PROPERTY_CRC_TAIL]) & 0x7FFFFFFF
            prop_state[r] = 1 if want == got else 2
    return body_ok, prop_state


def _decode_positions(ctx: _Ctx, P: np.ndarray) -> tuple[pa.RecordBatch | None, int | None]:
    """Decode message records at positions ``P`` (all within the buffer).  Returns the
    batch of the records before the first structurally bad one, and that one's index
    (``None`` when all are good)."""
    n = len(P)
    # the IPv4/IPv4 prefix of every record: sysFlag sits before the hosts, so it is
    # right whatever the variant, and the usual batch needs no other gather
    recs0 = ctx.gather(PREFIX_DTYPES[0], P)
    sys_flag = recs0["sys_flag"].astype(np.int32)
    v6_bits = sys_flag & (cl.FLAG_BORNHOST_V6 | cl.FLAG_STOREHOST_V6)
    if not v6_bits.any():
        variant = np.zeros(n, np.int8)
        present = np.zeros(1, np.int8)
    else:
        variant = ((sys_flag & cl.FLAG_BORNHOST_V6) != 0).astype(np.int8) + 2 * ((sys_flag & cl.FLAG_STOREHOST_V6) != 0).astype(np.int8)
        present = unique(variant)
    cols: dict[str, np.ndarray] = {}
    born_addr = np.zeros((n, 16), np.uint8)
    store_addr = np.zeros((n, 16), np.uint8)
    prefix_size = np.empty(n, np.int64)
    for v in present.tolist():
        dt = PREFIX_DTYPES[v]
        sel = slice(None) if len(present) == 1 else np.flatnonzero(variant == v)
        recs = recs0[sel] if v == 0 else ctx.gather(dt, P[sel])
        for name in dt.names:
            if name.endswith("_address"):
                target = born_addr if name.startswith("born") else store_addr
                target[sel, : dt[name].shape[0]] = recs[name]
                continue
            col = cols.get(name)
            if col is None:
                col = cols[name] = np.empty(n, dt[name].newbyteorder("="))
            col[sel] = recs[name]
        prefix_size[sel] = dt.itemsize
    total = cols["total_size"].astype(np.int64)
    magic = cols["magic"].astype(np.int64)
    # Java reads no body for a bodyLength <= 0 and calMsgLength counts a negative one
    # as 0 (likewise propertiesLength): such a record over an empty body is accepted
    len_body = np.maximum(cols["len_body"].astype(np.int64), 0)
    v2 = magic == cl.MAGIC_V2
    tl = np.where(v2, 2, 1)
    rec_end = P + total
    body_start = P + prefix_size
    body_end = body_start + len_body
    ok = (total >= prefix_size + 3) & (body_end + tl <= rec_end)
    topic_len = ctx.gather("i1", body_end).astype(np.int64)
    if v2.any():
        topic_len = np.where(v2, ctx.gather(">i2", body_end).astype(np.int64), topic_len)
    topic_start = body_end + tl
    topic_end = topic_start + topic_len
    ok &= (topic_len >= 0) & (topic_end + 2 <= rec_end)
    props_len = np.maximum(ctx.gather(">i2", topic_end).astype(np.int64), 0)
    props_start = topic_end + 2
    ok &= props_start + props_len == rec_end
    bad = None
    if not ok.all():
        bad = int(np.argmin(ok))
        if bad == 0:
            return None, 0
        return _decode_positions(ctx, P[:bad])[0], bad
    # filters (applied before the heavy columns are built)
    keep = None
    topic_bin = _interleaved(ctx, topic_start, topic_end, None)
    if ctx.filtered:
        keep = np.ones(n, bool)
        if ctx.topics is not None:
            import pyarrow.compute as pc

            keep &= np.asarray(pc.is_in(topic_bin, value_set=pa.array(sorted(ctx.topics), pa.binary())).to_numpy(zero_copy_only=False), bool)
        st = cols["store_timestamp"]
        if ctx.start_time is not None:
            keep &= st >= ctx.start_time
        if ctx.end_time is not None:
            keep &= st < ctx.end_time
        if keep.all():
            keep = None
        else:
            topic_bin = topic_bin.filter(pa.array(keep))

    def k(x):
        return x if keep is None else x[keep]

    Pk = k(P)
    phys = Pk + ctx.file_base
    m = len(Pk)
    store_is_v6 = k(variant >= 2)
    born_is_v6 = k((variant & 1) == 1)
    cols_wanted = ctx.columns

    def want(name):
        return cols_wanted is None or name in cols_wanted

    # hosts and msgId (host strings through a dictionary of the few distinct hosts)
    def host_column(addr, port, is_v6):
        if is_v6.any() and not is_v6.all():
            h4 = _hosts(addr[:, :4], port).to_numpy(zero_copy_only=False)
            h6 = _hosts(addr, port).to_numpy(zero_copy_only=False)
            return pa.array(np.where(is_v6, h6, h4), pa.string())
        w = 16 if (m and is_v6[0]) else 4
        return _hosts(addr[:, :w], port)

    store_addr_k = k(store_addr)
    store_port_k = k(cols["store_host_port"])
    store_host = host_column(store_addr_k, store_port_k, store_is_v6) if want("store_host") else pa.nulls(m, pa.string())
    born_host = host_column(k(born_addr), k(cols["born_host_port"]), born_is_v6) if want("born_host") else pa.nulls(m, pa.string())
    if not want("msg_id"):
        msg_id = pa.nulls(m, pa.string())
    else:
        port_bytes = store_port_k.astype(">i4").view(np.uint8).reshape(-1, 4)
        if store_is_v6.any() and not store_is_v6.all():
            ids4 = _msg_ids(np.concatenate([store_addr_k[:, :4], port_bytes], 1), phys).to_numpy(zero_copy_only=False)
            ids6 = _msg_ids(np.concatenate([store_addr_k, port_bytes], 1), phys).to_numpy(zero_copy_only=False)
            msg_id = pa.array(np.where(store_is_v6, ids6, ids4), pa.string())
        else:
            w = 16 if (m and store_is_v6[0]) else 4
            msg_id = _msg_ids(np.concatenate([store_addr_k[:, :w], port_bytes], 1), phys)
    # variable parts
    topic = _to_string(topic_bin) if want("topic") else pa.nulls(m, pa.string())
    # checks
    body_crc = cols["body_crc"].astype(np.int64)
    crc_ok = None
    kinds = None
    bodies_all = None
    body_wanted = ctx.include_body and want("body")
    kern = _kern()
    if ctx.verify_crc:
        if not body_wanted:  # the CRCs alone, straight from the buffer
            computed = kern.crc32_slices(ctx.a, body_start - ctx.buf_offset, body_end - body_start)
        else:  # the body column and its CRCs in one pass
            bodies_all, computed = kern.bodies_and_crcs(ctx.a, body_start - ctx.buf_offset, body_end - body_start)
        body_ok, prop_state = _check_crcs(ctx, P, total, body_crc, props_len, computed)
        body_ok = body_ok | (body_end == body_start)  # Java checks the body CRC only where there is a body
        crc_ok = body_ok & (prop_state != 2)
        if not crc_ok.all():
            first = int(np.argmin(crc_ok))
            kind = BODY_CRC if not body_ok[first] else PROPERTY_CRC
            if ctx.mode == "strict":
                raise crc_damage(ctx.file, int(P[first]), kind, ctx.file_base + int(P[first]))
            kinds = np.where(body_ok, np.where(prop_state == 2, 2, 0), 1)
    # after the bodies: a 4 KiB record's properties are then still in the cache
    # (~5% on 4 KiB records, measured A/B)
    properties = _properties_at(ctx, props_start, rec_end, keep) if want("properties") else pa.nulls(m, PROPERTIES_TYPE)
    java = _java_values(ctx, k(props_start), k(rec_end)) if ctx.java_properties else []
    if not body_wanted:
        body = pa.nulls(m, pa.binary())
    elif bodies_all is not None:
        body = bodies_all if keep is None else bodies_all.filter(pa.array(keep))
    else:  # the compiled copy (both cores for large batches)
        body = kern.bodies_and_crcs(ctx.a, k(body_start) - ctx.buf_offset, k(body_end) - k(body_start), with_crc=False)[0]
    if kinds is None:
        kind = _constant_strings(KIND_MESSAGE, m)
    else:
        kind = _strings_from_codes(k(kinds), [KIND_MESSAGE, BODY_CRC, PROPERTY_CRC])
    arrays = [
        pa.array(phys, pa.int64()),
        pa.array(k(total).astype(np.int32), pa.int32()),
        pa.array(k(magic), pa.int64()),
        pa.array(k(cols["body_crc"]), pa.int32()),
        pa.array(k(crc_ok), pa.bool_()) if crc_ok is not None else pa.nulls(m, pa.bool_()),
        pa.array(k(cols["queue_id"]), pa.int32()),
        pa.array(k(cols["flag"]), pa.int32()),
        pa.array(k(cols["queue_offset"]), pa.int64()),
        pa.array(k(sys_flag), pa.int32()),
        pa.array(k(cols["born_timestamp"]), pa.int64()),
        born_host,
        pa.array(k(cols["store_timestamp"]), pa.int64()),
        store_host,
        pa.array(k(cols["reconsume_times"]), pa.int32()),
        pa.array(k(cols["prepared_transaction_offset"]), pa.int64()),
        topic,
        properties,
        body,
        msg_id,
        _constant_strings(ctx.file, m) if want("file") else pa.nulls(m, pa.string()),
        kind,
        pa.nulls(m, pa.string()),
    ]
    if java:
        return pa.RecordBatch.from_arrays(arrays + java, schema=java_schema(ctx.java_properties)), bad
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA), bad


#: the column holding the Java map's value of a property (``decode_positions(java_properties=...)``)
JAVA_PROPERTY_PREFIX = "java_property:"


def java_schema(names: tuple[str, ...]) -> pa.Schema:
    """:data:`ARROW_SCHEMA` plus a string column per name (see :func:`decode_positions`)."""
    return pa.schema(list(ARROW_SCHEMA) + [pa.field(JAVA_PROPERTY_PREFIX + name, pa.string()) for name in names])


def _java_values(ctx: _Ctx, starts: np.ndarray, ends: np.ndarray) -> list[pa.Array]:
    """The ``java_property:`` columns of the records whose properties are the buffer
    slices ``[starts[i], ends[i])`` (file positions)."""
    got = _kern().java_property_values(ctx.a, starts - ctx.buf_offset, ends - ctx.buf_offset, ctx.java_properties)
    try:
        return [_as_string(arr, non_ascii) for arr, non_ascii in got]
    except pa.ArrowInvalid:
        pass  # invalid UTF-8: Java reads U+FFFD there, as decode_text does, record by record
    maps = [props.to_java_map(props.decode_pairs(ctx.mv[s - ctx.buf_offset : e - ctx.buf_offset].tobytes())) for s, e in zip(starts.tolist(), ends.tolist())]
    return [pa.array([mp.get(name) for mp in maps], pa.string()) for name in ctx.java_properties]


def _rows_batch(rows: list[dict], java_properties: tuple[str, ...] = ()) -> pa.RecordBatch:
    """A small batch from Python rows (BLANK, damage, a range read record by record)."""
    schema = java_schema(java_properties) if java_properties else ARROW_SCHEMA
    cols = {name: [r.get(name) for r in rows] for name in schema.names}
    cols["properties"] = [None if v is None else list(v.items()) for v in cols["properties"]]
    return pa.RecordBatch.from_pydict(cols, schema=schema)


def _record_row(ctx: _Ctx, rec) -> dict:
    """A decoded record as a row of :data:`ARROW_SCHEMA` (``Record.to_dict``'s values,
    the body as bytes): a column ``columns`` leaves out, or the body without
    ``include_body``, is None and not computed, as the bulk path builds them."""
    if rec.is_blank:
        return {"physical_offset": rec.physical_offset, "total_size": rec.total_size, "magic": rec.magic, "file": ctx.file, "kind": rec.kind}
    want = ctx.columns
    row = {
        "physical_offset": rec.physical_offset,
        "total_size": rec.total_size,
        "magic": rec.magic,
        "body_crc": rec.body_crc,
        "crc_ok": rec.crc_ok if ctx.verify_crc else None,
        "queue_id": rec.queue_id,
        "flag": rec.flag,
        "queue_offset": rec.queue_offset,
        "sys_flag": rec.sys_flag,
        "born_timestamp": rec.born_timestamp,
        "store_timestamp": rec.store_timestamp,
        "reconsume_times": rec.reconsume_times,
        "prepared_transaction_offset": rec.prepared_transaction_offset,
        "kind": rec.kind,
    }
    if want is None or "born_host" in want:
        row["born_host"] = format_host(*rec.born_host)
    if want is None or "store_host" in want:
        row["store_host"] = format_host(*rec.store_host)
    if want is None or "msg_id" in want:
        row["msg_id"] = rec.msg_id
    if want is None or "topic" in want:
        row["topic"] = rec.topic
    if want is None or "properties" in want:
        row["properties"] = rec.properties
    if ctx.include_body and (want is None or "body" in want):
        row["body"] = rec.body
    if want is None or "file" in want:
        row["file"] = ctx.file
    return row


# ----------------------------------------------------------------------------------------
# the scan
# ----------------------------------------------------------------------------------------
def scan_range(
    buf,
    *,
    buf_offset: int = 0,
    file_base: int = 0,
    file_size: int | None = None,
    file: str = "<bytes>",
    start: int = 0,
    stop: int | None = None,
    resync: bool | None = None,
    mode: str = "strict",
    verify_crc: bool = True,
    include_body: bool = True,
    topics: Iterable[str] | None = None,
    start_time: int | None = None,
    end_time: int | None = None,
    batch_rows: int = 1 << 15,
    batch_bytes: int = 16 << 20,
    columns: Iterable[str] | None = None,
    java_properties: Iterable[str] = (),
    data_end: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches (:data:`ARROW_SCHEMA`) of the records a scan of ``[start, stop)``
    of one commitlog file owns (see the module docs).

    ``buf`` holds the file's bytes from position ``buf_offset`` (a whole mapped file,
    or a window of it); ``file_base`` is the file's start physical offset (its name);
    ``file_size`` the file's length.  ``mode='strict'`` raises
    :class:`~rmqlab.format.record.RecordError` (file + offset) at the first damaged
    record; ``'lenient'`` emits it as a row whose ``kind`` is the damage kind and
    resynchronises.  CRC mismatches (``verify_crc``) count as damage (kind
    ``BODY_CRC``/``PROPERTY_CRC``; the row is fully decoded).  BLANK rows are emitted
    only without filters.  Damage rows are emitted whatever the filters.
    ``columns`` names the columns worth building; the others are null (the schema
    stays :data:`ARROW_SCHEMA`), which saves most of the work for narrow scans.
    ``data_end`` is the file position from which the file holds only holes (a sparse
    file's unwritten rest, :attr:`rmqlab.files.MappedFile.data_end`): the zeros there
    are known without reading them.
    ``java_properties`` adds message batches the ``java_property:NAME`` columns of
    :func:`decode_positions` (BLANK and damage rows come in batches without them).
    ``batch_rows`` and ``batch_bytes`` bound a batch.  32,768 rows decode ~7% faster
    than 65,536 on ~200-byte records: a batch's dozens of per-row numpy arrays (8
    bytes a row each) then stay nearer the 2 MiB L2 cache; fewer rows pay more
    per-batch overhead.  ``batch_bytes`` bounds the bytes a batch spans (keeping int32
    Arrow offsets safe); 16 MiB because glibc serves allocations above 32 MiB with a
    fresh ``mmap`` every time, and faulting in a new 64 MiB body column cost more than
    copying the bodies into it (4 KiB records: 0.55 s -> 0.49 s per GiB).
    """
    if mode not in ("strict", "lenient"):
        raise ValueError(f"mode must be 'strict' or 'lenient', not {mode!r}")
    a = np.frombuffer(buf, np.uint8) if not isinstance(buf, np.ndarray) else buf.view(np.uint8).reshape(-1)
    file_size = buf_offset + len(a) if file_size is None else file_size
    stop = file_size if stop is None else min(stop, file_size)
    ctx = _Ctx(
        a=a,
        mv=memoryview(a),
        buf_offset=buf_offset,
        file_base=file_base,
        file_size=file_size,
        file=file,
        mode=mode,
        verify_crc=verify_crc,
        include_body=include_body,
        topics=frozenset(t.encode("utf-8") for t in topics) if topics is not None else None,
        start_time=start_time,
        end_time=end_time,
        batch_rows=batch_rows,
        batch_bytes=batch_bytes,
        columns=frozenset(columns) if columns is not None else None,
        java_properties=tuple(java_properties),
        data_end=data_end,
    )
    if resync is None:
        resync = start != 0
    pos: int | None = start
    if resync:
        pos = _next_valid(ctx, start, stop)
    if pos is not None and ctx.buf_offset == 0 and ctx.complete and stop - pos <= SMALL_RANGE:
        pos = yield from _small_range(ctx, pos, stop)
    while pos is not None and pos < stop:
        restart = None
        end = pos
        pieces = _walk_pieces(ctx, pos, stop)
        try:
            for positions, end in pieces:
                # decode in batches
                i = 0
                while i < len(positions):
                    j = _batch_end(ctx, positions, i)
                    chunk = positions[i:j]
                    batch, bad = _decode_positions(ctx, chunk)
                    if batch is not None and batch.num_rows:
                        yield batch
                    if bad is not None:
                        restart = int(chunk[bad])
                        break
                    i = j
                if restart is not None:
                    break
        finally:
            pieces.close()  # a walk still in flight on the buffer ends first
        if restart is not None:
            pos = yield from _event(ctx, restart, stop)
            continue
        pos = end
        if pos >= stop:
            break
        pos = yield from _event(ctx, pos, stop)
    # past the end: chain positions that are not valid positions still belong here
    while pos is not None and pos >= stop and pos < file_size:
        if is_valid_position(ctx.a, pos, file_base=file_base, file_size=file_size, buf_offset=buf_offset):
            break
        pos = yield from _event(ctx, pos, stop)


#: a range of at most this many bytes is read record by record with the one record
#: parser (same rows): loading the compiled loops costs ~0.5 s, more than reading it
SMALL_RANGE = 1 << 20


def _small_range(ctx: _Ctx, pos: int, stop: int):
    """The rows of ``[pos, stop)`` read record by record (generator: yields batches,
    returns where the caller's end-of-range rule goes on: ``None`` or a position at
    or past ``stop``).  The bulk path's rules: damage raised (strict) or a row and a
    resynchronisation (lenient), zeros skipped, a BLANK ends the file, filters and
    ``columns`` applied."""
    rows: list[dict] = []
    view = ctx.mv[: ctx.file_size]
    while pos is not None and pos < stop:
        try:
            rec = decode_record(view, pos, file=ctx.file, file_base=ctx.file_base, check_crc=ctx.verify_crc, read_body=ctx.include_body)
        except RecordError as err:
            if ctx.mode == "strict":
                if rows:
                    yield _rows_batch(rows, ctx.java_properties)
                raise
            total = magic = None
            if ctx.file_size - pos >= 8:
                total, magic = _PREFIX.unpack_from(ctx.a, pos)
            if err.total_size is not None:
                total = err.total_size
            rows.append({"physical_offset": ctx.file_base + pos, "total_size": total, "magic": magic, "file": ctx.file, "kind": err.kind, "error": str(err)})
            pos = _next_valid(ctx, pos + 1, stop)
            continue
        if rec is None:  # zeros where a record should start
            pos = _next_valid(ctx, pos + 1, stop)
            continue
        if rec.is_blank:
            if not ctx.filtered:
                rows.append(_record_row(ctx, rec))
            pos = None
            break
        kind = KIND_MESSAGE
        if ctx.verify_crc and not rec.crc_ok:
            kind = BODY_CRC if not rec.body_crc_ok else PROPERTY_CRC
            if ctx.mode == "strict":
                if rows:
                    yield _rows_batch(rows, ctx.java_properties)
                raise crc_damage(ctx.file, pos, kind, ctx.file_base + pos)
        keep = (ctx.topics is None or rec.topic.encode("utf-8") in ctx.topics) and (ctx.start_time is None or rec.store_timestamp >= ctx.start_time) and (
            ctx.end_time is None or rec.store_timestamp < ctx.end_time)
        if keep:
            row = _record_row(ctx, rec)
            row["kind"] = kind
            if ctx.java_properties:
                jp = rec.java_properties
                for name in ctx.java_properties:
                    row[JAVA_PROPERTY_PREFIX + name] = jp.get(name)
            rows.append(row)
            if len(rows) >= ctx.batch_rows:
                yield _rows_batch(rows, ctx.java_properties)
                rows = []
        pos += rec.total_size
    if rows:
        yield _rows_batch(rows, ctx.java_properties)
    return pos


def _walk_pieces(ctx: _Ctx, pos: int, stop: int):
    """The chain from ``pos`` as ``(positions, end)`` pieces, walked by the compiled
    loop, the next piece on another thread while this one is decoded."""
    return _kern().walk_pieces(ctx.a, pos, stop, min(ctx.buf_end, ctx.file_size), ctx.buf_offset, _MIN_SIZE, (cl.MAGIC_V1, cl.MAGIC_V2))


def _batch_end(ctx: _Ctx, positions: np.ndarray, i: int) -> int:
    j = min(len(positions), i + ctx.batch_rows)
    # keep a batch's byte span (and so int32 Arrow offsets) bounded
    span_limit = int(positions[i]) + ctx.batch_bytes
    if j < len(positions) and int(positions[j - 1]) > span_limit:
        j = max(i + 1, int(np.searchsorted(positions, span_limit, side="right")))
    return j


def _event(ctx: _Ctx, pos: int, stop: int):
    """Look at one position the fast path stopped at (generator: yields rows, returns
    where to continue, or ``None`` when the range is done)."""
    off = ctx.buf_offset
    i = pos - off
    left_file = ctx.file_size - pos
    if not ctx.complete and ctx.buf_end - pos < 8:
        raise NeedMoreBytes(pos, 8, False)
    if not ctx.complete and left_file >= 8:
        size = _PREFIX.unpack_from(ctx.a, i)[0]
        if size > ctx.buf_end - pos and size <= left_file:
            raise NeedMoreBytes(pos, size, False)
    view = ctx.mv[: min(len(ctx.a), ctx.file_size - off)]
    try:
        rec = decode_record(view, i, file=ctx.file, file_base=ctx.file_base + off, check_crc=ctx.verify_crc, read_body=ctx.include_body)
    except RecordError as err:
        if off:
            msg = err.message.split(": ", 1)[1] if ": " in err.message else err.message
            err = RecordError(err.file, err.offset + off if err.offset is not None else None, err.kind, msg, err.total_size)
        if ctx.mode == "strict":
            raise err
        magic = total = None
        if left_file >= 8 and ctx.buf_end - pos >= 8:
            total, magic = _PREFIX.unpack_from(ctx.a, i)
        if err.total_size is not None:
            total = err.total_size
        yield _rows_batch(
            [{"physical_offset": ctx.file_base + pos, "total_size": total, "magic": magic, "file": ctx.file, "kind": err.kind, "error": str(err)}]
        )
        return _next_valid(ctx, pos + 1, stop)
    if rec is None:  # zeros where a record should start: resynchronise past them
        return _next_valid(ctx, pos + 1, stop)
    if rec.is_blank:
        if not ctx.filtered:
            yield _rows_batch([_record_row(ctx, rec)])
        return None  # a BLANK ends the file (Java: continue at the next file)
    # a message the fast path did not take (e.g. past ``stop`` with a wrong self-offset)
    if ctx.verify_crc and not rec.crc_ok:
        kind = BODY_CRC if not rec.body_crc_ok else PROPERTY_CRC
        if ctx.mode == "strict":
            raise crc_damage(ctx.file, pos, kind, ctx.file_base + pos)
    batch, bad = _decode_positions(ctx, np.array([pos], np.int64))
    if batch is not None and batch.num_rows:
        yield batch
    return pos + rec.total_size


def decode_positions(
    buf,
    positions,
    *,
    file_base: int = 0,
    file: str = "<bytes>",
    verify_crc: bool = True,
    include_body: bool = True,
    columns: Iterable[str] | None = None,
    batch_rows: int = 1 << 15,
    batch_bytes: int = 16 << 20,
    java_properties: Iterable[str] = (),
    crc_mismatch: str = "raise",
) -> Iterator[pa.RecordBatch]:
    """Record batches (:data:`ARROW_SCHEMA`) of the message records that start at the
    in-file ``positions`` (sorted, distinct) of one commitlog file, for callers that
    already know where records start (a walk done before, consume-queue entries, the
    engine's reput): the chain is not walked.

    ``java_properties`` names properties to add as string columns
    ``java_property:NAME`` (:func:`java_schema`): the value RocketMQ's own map holds
    (``MessageDecoder.string2messageProperties``: pairs with an empty name or value
    skipped, a later pair wins; :func:`rmqlab.format.properties.to_java_map`), null
    when it holds none.  That is what the engine's dispatch reads, without building the
    ``properties`` column (leave it out of ``columns``).

    ``crc_mismatch="flag"`` keeps a record whose CRC does not match as a row of its kind
    (``BODY_CRC``/``PROPERTY_CRC``, ``crc_ok`` false), as a lenient scan does, instead of
    raising at it.

    ``buf`` holds the file from position 0.  Strict: the first position where no valid
    message record starts (or, with ``verify_crc``, whose CRC does not match) raises
    :class:`~rmqlab.format.record.RecordError` naming the file and offset, after the
    batches of the records before it.
    """
    a = np.frombuffer(buf, np.uint8) if not isinstance(buf, np.ndarray) else buf.view(np.uint8).reshape(-1)
    P = np.asarray(positions, dtype=np.int64)
    if len(P) and (int(P[0]) < 0 or int(P[-1]) >= len(a) or (len(P) > 1 and not (P[1:] > P[:-1]).all())):
        raise ValueError("positions must be sorted, distinct and inside the buffer")
    if crc_mismatch not in ("raise", "flag"):
        raise ValueError(f"crc_mismatch is 'raise' or 'flag', not {crc_mismatch!r}")
    ctx = _Ctx(
        a=a, mv=memoryview(a), buf_offset=0, file_base=file_base, file_size=len(a), file=file, mode="strict" if crc_mismatch == "raise" else "lenient",
        verify_crc=verify_crc, include_body=include_body, topics=None, start_time=None, end_time=None, batch_rows=batch_rows, batch_bytes=batch_bytes,
        columns=frozenset(columns) if columns is not None else None, java_properties=tuple(java_properties),
    )
    i = 0
    while i < len(P):
        j = _batch_end(ctx, P, i)
        batch, bad = _decode_positions(ctx, P[i:j])
        if batch is not None and batch.num_rows:
            yield batch
        if bad is not None:
            pos = int(P[i + bad])
            rec = decode_record(a, pos, file=file, file_base=file_base, check_crc=verify_crc, read_body=include_body)  # raises the exact damage
            if rec is not None and not rec.is_blank and verify_crc and not rec.crc_ok:
                raise crc_damage(file, pos, BODY_CRC if not rec.body_crc_ok else PROPERTY_CRC, file_base + pos)
            raise RecordError(file, pos, BAD_MAGIC, "no message record starts here")
        i = j


# ----------------------------------------------------------------------------------------
# conveniences
# ----------------------------------------------------------------------------------------
def decode_file(buf, file_base: int = 0, **kwargs) -> Iterator[pa.RecordBatch]:
    """Batches of every record of one whole commitlog file held in ``buf`` (a
    memory map, bytes, or a numpy array).  Single-process; no Spark needed::

        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            for batch in decode_file(m, int(os.path.basename(path)), file=path):
                ...
    """
    return scan_range(buf, file_base=file_base, **kwargs)


def decode_table(buf, file_base: int = 0, **kwargs) -> pa.Table:
    """:func:`decode_file` collected into one ``pyarrow.Table``."""
    return pa.Table.from_batches(list(decode_file(buf, file_base, **kwargs)), schema=ARROW_SCHEMA)
