"""Decoded record batches as JSON lines, serialised in bulk (``rmqlab dump --json``).

Java counterpart: none.  One line per record, the keys and values of
:meth:`rmqlab.format.record.Record.to_dict` exactly as ``json.dumps(...,
ensure_ascii=False)`` writes them (tested record for record against it): integers in
decimal, strings with ``"``, ``\\`` and the control characters escaped (``\\n``,
``\\u001f``...), everything else as UTF-8, the properties an object in disk order,
the body in base64.

Building a dict per record and calling ``json.dumps`` on it ran at ~21,000 records/s;
here one compiled pass writes a whole batch's lines from its Arrow columns into one
buffer.  Message batches only: BLANK and damage rows (rare, in batches of their own)
are the caller's, through ``to_dict``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .kernels import _numba

#: the keys of ``Record.to_dict``, in order: key k is written after fragment k
_KEYS = (
    "physical_offset", "total_size", "magic", "body_crc", "crc_ok", "queue_id", "flag", "queue_offset", "sys_flag",
    "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times", "prepared_transaction_offset",
    "topic", "properties", "body", "msg_id",
)
#: the integer columns, each at its key's number (None: a key of another kind)
_INTS = ("physical_offset", "total_size", "magic", "body_crc", None, "queue_id", "flag", "queue_offset", "sys_flag",
         "born_timestamp", None, "store_timestamp", None, "reconsume_times", "prepared_transaction_offset")
# fragments: '{"physical_offset": ', ', "total_size": ', ... ; '}\n' last
_FRAGMENTS = [("{" if i == 0 else ", ") + f'"{k}": ' for i, k in enumerate(_KEYS)] + ["}\n", "true", "false", "null"]
_TRUE, _FALSE, _NULL = range(len(_KEYS) + 1, len(_KEYS) + 4)  # the fragments of crc_ok's values
_FRAG_BYTES = np.frombuffer("".join(_FRAGMENTS).encode(), np.uint8)
_FRAG_OFFS = np.cumsum([0] + [len(f.encode()) for f in _FRAGMENTS]).astype(np.int64)
_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
#: the control characters json.dumps writes as a letter after the backslash (the others: \u00XX)
_SHORT_ESCAPES = np.zeros(32, np.uint8)
for _c, _e in {"\b": "b", "\t": "t", "\n": "n", "\f": "f", "\r": "r"}.items():
    _SHORT_ESCAPES[ord(_c)] = ord(_e)


_NUMBA = _numba()


def _njit(**kw):
    """numba's njit, or a decorator that leaves the function alone (json_lines then
    refuses: the bulk paths have no slow copy)."""
    return _NUMBA.njit(**kw) if _NUMBA is not None else (lambda f: None)


# module-level functions (not closures): numba keys its on-disk cache on what a
# function refers to, and a closure's cells differ from process to process


@_njit(nogil=True, cache=True)
def _put_frag(out, d, k):  # pragma: no cover - compiled
    # the fragments are module globals, which numba compiles in as constants: with k a
    # literal at every call, each copy is one of known length and bytes (0.55x the
    # kernel's time of a loop over fragments passed as arrays)
    for b in range(_FRAG_OFFS[k], _FRAG_OFFS[k + 1]):
        out[d] = _FRAG_BYTES[b]
        d += 1
    return d


@_njit(nogil=True, cache=True)
def _put_int(out, d, v, tmp):  # pragma: no cover - compiled
    if v == 0:
        out[d] = 48
        return d + 1
    neg = v < 0
    n = 0
    if neg:
        # the most negative int64 cannot be negated: write its digits from the remainders
        while v != 0:
            r = v % 10
            q = v // 10
            if r != 0:  # floor division: step back to truncation
                r = 10 - r
                q += 1
            tmp[n] = 48 + r
            n += 1
            v = q
        out[d] = 45
        d += 1
    else:
        while v != 0:
            tmp[n] = 48 + v % 10
            n += 1
            v //= 10
    for i in range(n - 1, -1, -1):
        out[d] = tmp[i]
        d += 1
    return d


@_njit(nogil=True, cache=True)
def _put_str(out, d, data, a, b):  # pragma: no cover - compiled
    out[d] = 34
    d += 1
    for i in range(a, b):
        c = data[i]
        if c == 34 or c == 92:
            out[d] = 92
            out[d + 1] = c
            d += 2
        elif c < 32:
            out[d] = 92
            e = _SHORT_ESCAPES[c]
            if e:
                out[d + 1] = e
                d += 2
            else:
                out[d + 1] = 117
                out[d + 2] = 48
                out[d + 3] = 48
                out[d + 4] = _HEX[c >> 4]
                out[d + 5] = _HEX[c & 15]
                d += 6
        else:
            out[d] = c
            d += 1
    out[d] = 34
    return d + 1


@_njit(nogil=True, cache=True)
def _lines(ints, crc_ok, s_data, s_offs, p_moffs, k_data, k_offs, v_data, v_offs, b_data, b_offs, out, d, lo, hi):  # pragma: no cover - compiled
    """One JSON line per row ``lo..hi-1`` into ``out`` from ``d``; returns where the
    last ends.  ``ints`` (rows x 15, a column of zeros for non-integer slots), ``s_*``
    the string columns born_host, store_host, topic, msg_id (4 rows of offsets per row),
    ``p_moffs`` each row's pairs in ``k_*``/``v_*``, ``b_*`` the bodies.  The keys are
    written one by one, each fragment's number a literal (see ``_put_frag``)."""
    tmp = np.empty(24, np.uint8)
    for r in range(lo, hi):
        d = _put_int(out, _put_frag(out, d, 0), ints[r, 0], tmp)  # physical_offset
        d = _put_int(out, _put_frag(out, d, 1), ints[r, 1], tmp)  # total_size
        d = _put_int(out, _put_frag(out, d, 2), ints[r, 2], tmp)  # magic
        d = _put_int(out, _put_frag(out, d, 3), ints[r, 3], tmp)  # body_crc
        d = _put_frag(out, d, 4)  # crc_ok
        if crc_ok[r] == 1:
            d = _put_frag(out, d, _TRUE)
        elif crc_ok[r] == 0:
            d = _put_frag(out, d, _FALSE)
        else:
            d = _put_frag(out, d, _NULL)
        d = _put_int(out, _put_frag(out, d, 5), ints[r, 5], tmp)  # queue_id
        d = _put_int(out, _put_frag(out, d, 6), ints[r, 6], tmp)  # flag
        d = _put_int(out, _put_frag(out, d, 7), ints[r, 7], tmp)  # queue_offset
        d = _put_int(out, _put_frag(out, d, 8), ints[r, 8], tmp)  # sys_flag
        d = _put_int(out, _put_frag(out, d, 9), ints[r, 9], tmp)  # born_timestamp
        d = _put_str(out, _put_frag(out, d, 10), s_data[0], s_offs[0, r], s_offs[0, r + 1])  # born_host
        d = _put_int(out, _put_frag(out, d, 11), ints[r, 11], tmp)  # store_timestamp
        d = _put_str(out, _put_frag(out, d, 12), s_data[1], s_offs[1, r], s_offs[1, r + 1])  # store_host
        d = _put_int(out, _put_frag(out, d, 13), ints[r, 13], tmp)  # reconsume_times
        d = _put_int(out, _put_frag(out, d, 14), ints[r, 14], tmp)  # prepared_transaction_offset
        d = _put_str(out, _put_frag(out, d, 15), s_data[2], s_offs[2, r], s_offs[2, r + 1])  # topic
        d = _put_frag(out, d, 16)  # properties
        out[d] = 123
        d += 1
        for j in range(p_moffs[r], p_moffs[r + 1]):
            if j > p_moffs[r]:
                out[d] = 44
                out[d + 1] = 32
                d += 2
            d = _put_str(out, d, k_data, k_offs[j], k_offs[j + 1])
            out[d] = 58
            out[d + 1] = 32
            d += 2
            d = _put_str(out, d, v_data, v_offs[j], v_offs[j + 1])
        out[d] = 125
        d += 1
        d = _put_frag(out, d, 17)  # body
        out[d] = 34
        d += 1
        a = b_offs[r]
        e = b_offs[r + 1]
        while a + 3 <= e:
            x = (np.int64(b_data[a]) << 16) | (np.int64(b_data[a + 1]) << 8) | np.int64(b_data[a + 2])
            out[d] = _B64[x >> 18]
            out[d + 1] = _B64[(x >> 12) & 63]
            out[d + 2] = _B64[(x >> 6) & 63]
            out[d + 3] = _B64[x & 63]
            d += 4
            a += 3
        if e - a == 1:
            x = np.int64(b_data[a]) << 16
            out[d] = _B64[x >> 18]
            out[d + 1] = _B64[(x >> 12) & 63]
            out[d + 2] = 61
            out[d + 3] = 61
            d += 4
        elif e - a == 2:
            x = (np.int64(b_data[a]) << 16) | (np.int64(b_data[a + 1]) << 8)
            out[d] = _B64[x >> 18]
            out[d + 1] = _B64[(x >> 12) & 63]
            out[d + 2] = _B64[(x >> 6) & 63]
            out[d + 3] = 61
            d += 4
        out[d] = 34
        d += 1
        d = _put_str(out, _put_frag(out, d, 18), s_data[3], s_offs[3, r], s_offs[3, r + 1])  # msg_id
        d = _put_frag(out, d, 19)  # the line's end
    return d



_LINES = _lines


def _binary_parts(arr) -> tuple[np.ndarray, np.ndarray]:
    """(data bytes, int64 offsets from 0) of an Arrow string/binary array."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        arr = arr.fill_null(b"" if pa.types.is_binary(arr.type) else "")
    n = len(arr)
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], np.int32, count=n + 1, offset=arr.offset * 4).astype(np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and n else np.zeros(1, np.uint8)
    return data, offs


#: rows from which a batch's lines are written by two threads, half each (the thread
#: hand-off costs ~0.1 ms; 4,096 rows take ~6 ms)
SPLIT_FROM_ROWS = 4096


class LineBuffer:
    """The memory one caller's batches of lines are written into, batch after batch:
    :func:`json_line_pieces` given it reuses one buffer (grown when a batch needs more
    room) where it would take a new one for each batch, whose pages the kernel hands
    out, zeroed, at their first touch (``dump --json`` of the generated 1 GiB store:
    0.89× its time, 1.44 → 0.58 s of system time, 4 pairs).  A batch's pieces view the
    buffer until the next batch's lines are written into it: write them out first."""

    def __init__(self):
        self.buf = np.empty(0, np.uint8)

    def room(self, need: int) -> np.ndarray:
        if len(self.buf) < need:
            self.buf = np.empty(need + need // 4, np.uint8)  # some room to spare: the next batch may need a little more
        return self.buf


def json_lines(batch: pa.RecordBatch) -> bytes:
    """The message rows of a decoded batch (:data:`rmqlab.scan.decode.ARROW_SCHEMA`,
    every column built) as JSON lines, ``Record.to_dict`` of each."""
    return b"".join(json_line_pieces(batch))


def json_line_pieces(batch: pa.RecordBatch, into: LineBuffer | None = None) -> list[memoryview]:
    """:func:`json_lines` as the buffers that hold it, in order, without joining them
    (a large batch's two halves are written by two threads into one buffer, each from
    where the room of the rows before it ends): views of ``into``'s buffer when given
    (valid until its next use), else of a buffer of their own."""
    if _LINES is None:
        from .kernels import UNAVAILABLE_BECAUSE

        raise ImportError(UNAVAILABLE_BECAUSE)
    n = batch.num_rows
    if n == 0:
        return []
    ints = np.zeros((n, 15), np.int64)
    for k, name in enumerate(_INTS):
        if name is not None:
            ints[:, k] = np.asarray(batch.column(name).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    crc = batch.column("crc_ok")
    crc_ok = np.where(np.asarray(crc.is_null().to_numpy(zero_copy_only=False), bool), -1,
                      np.asarray(crc.fill_null(False).to_numpy(zero_copy_only=False), np.int8)).astype(np.int8)
    strings = [_binary_parts(batch.column(c)) for c in ("born_host", "store_host", "topic", "msg_id")]
    width = max(len(d) for d, _ in strings)
    s_data = np.zeros((4, width), np.uint8)
    s_offs = np.zeros((4, n + 1), np.int64)
    for i, (d, o) in enumerate(strings):
        s_data[i, : len(d)] = d
        s_offs[i] = o
    props = batch.column("properties")
    if isinstance(props, pa.ChunkedArray):
        props = props.combine_chunks()
    if props.offset:  # a slice: its keys and items would start mid-child
        props = props.take(pa.array(np.arange(n)))
    if props.null_count:
        props = props.fill_null([])  # pragma: no cover - message rows always have a map
    moffs = np.frombuffer(props.buffers()[1], np.int32, count=n + 1, offset=props.offset * 4).astype(np.int64)
    moffs -= moffs[0]
    k_data, k_offs = _binary_parts(props.keys)
    v_data, v_offs = _binary_parts(props.items)
    b_data, b_offs = _binary_parts(batch.column("body"))

    def room(lo: int, hi: int) -> int:
        """Bytes rows lo..hi-1 may need: every string byte may become six (an escaped
        control character), bodies 4/3, the fixed parts and 15 integers of 21 digits per row."""
        text = sum(int(o[hi] - o[lo]) for _, o in strings)
        p0, p1 = int(moffs[lo]), int(moffs[hi])
        text += int(k_offs[p1] - k_offs[p0]) + int(v_offs[p1] - v_offs[p0])
        return 6 * text + (int(b_offs[hi] - b_offs[lo]) * 4) // 3 + (hi - lo) * (len(_FRAG_BYTES) + 15 * 21 + 32) + 8 * (p1 - p0) + 64

    from . import kernels

    args = (ints, crc_ok, s_data, s_offs, moffs, k_data, k_offs, v_data, v_offs, b_data, b_offs)
    cut = n // 2 if n >= SPLIT_FROM_ROWS and kernels.threads() > 1 else n
    first = room(0, cut)
    need = first + (room(cut, n) if cut < n else 0)
    out = into.room(need) if into is not None else np.empty(need, np.uint8)
    if cut < n:
        other = kernels._pool().submit(_LINES, *args, out, first, cut, n)
        d = _LINES(*args, out, 0, 0, cut)  # releases the GIL: the other half is written meanwhile
        e = other.result()
        return [memoryview(out[:d]), memoryview(out[first:e])]
    d = _LINES(*args, out, 0, 0, n)
    return [memoryview(out[:d])]
