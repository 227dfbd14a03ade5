"""The CommitLog scan that recovery runs, with RocketMQ's acceptance rule, vectorised.

Java: ``CommitLog.checkMessageAndReturnSize`` decides, record by record, whether the
bytes at a position are a record recovery keeps.  Its rule, in its order:

1. fewer than 5 bytes left, or ``totalSize - 4`` more than what is left → fail;
2. magic: V1/V2 go on, BLANK means "next file" (whatever its size), else fail
   (``found a illegal magic code``);
3. the fixed fields, ``bodyLength`` and the body; **the body CRC is checked only when
   bodyLength > 0** (and only with ``checkCRCOnRecover``) → ``CRC check failed``;
4. topic (1-byte length in V1, 2-byte in V2), properties; on ``SCHEDULE_TOPIC_XXXX`` a
   ``DELAY`` that is not a number throws → fail;
5. ``forceVerifyPropCRC`` (off by default): the ``__CRC32#`` whole-record CRC;
6. ``calMsgLength(fields) != totalSize`` → fail (``found a half message``).

Any exception (a read past the buffer, a negative length) is a fail too.

:func:`check_record` is that rule for one position, in Java's order, so the reason
and log line for the record that stops recovery are RocketMQ's.  :func:`scan_file`
applies the same rule to a whole file fast: the compiled walk follows the
``totalSize`` chain and one compiled pass checks every record, its body's CRC-32 taken
in place by ISA-L (:func:`rmqlab.scan.kernels.accept`); on a small file numpy checks
every record's length fields at once and the CRCs are a call per body.  Tests check that both
agree with :func:`~rmqlab.format.record.decode_record` on every reference store.
"""

from __future__ import annotations

import os
import struct
import threading
from dataclasses import dataclass

import numpy as np

from ..format import commitlog as cl
from ..format import hashing, layout
from ..format import properties as props
from .. import rules
from . import kernels
from .uniques import unique
from ..format.record import BAD_MAGIC, BAD_SIZE, BODY_CRC, PROPERTY_CRC, PROPERTY_CRC_TAIL, SIZE_MISMATCH, TRUNCATED, decode_crc_digits

_crc32 = hashing.crc32  # ISA-L's when installed (see rmqlab.format.hashing)
_PREFIX = struct.Struct(">iI")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I8 = struct.Struct(">b")
_V1, _V2, _BLANK = cl.MAGIC_V1, cl.MAGIC_V2, cl.MAGIC_BLANK

SCHEDULE_TOPIC = rules.SCHEDULE_TOPIC.encode()
DELAY_PARSE = "DELAY_PARSE"  # Integer.parseInt(DELAY) threw on SCHEDULE_TOPIC_XXXX
#: a whole record whose physicalOffset lies outside its file (5.5+ recoverAbnormally with
#: checkCommitLogOffsetOnRecover ends its walk there; rmqlab.recovery applies it)
ILLEGAL_OFFSET = "ILLEGAL_OFFSET"


@dataclass
class Check:
    """Java ``DispatchRequest`` reduced to what recovery needs."""

    ok: bool
    size: int  # >0 record size, 0 BLANK, -1 failure (or totalSize for a half message)
    kind: str | None = None  # damage kind when not ok
    message: str = ""
    java_log: str | None = None  # the WARN line RocketMQ logs for this failure, if any
    java_pos: int = 0  # byteBuffer.position() after the check (the "pos=" of the log)


def java_cal_msg_length(v2: bool, sys_flag: int, body_len: int, topic_len: int, props_len: int) -> int:
    """Java ``MessageExtEncoder.calMsgLength`` as ``checkMessageAndReturnSize`` calls it
    on the fields it read: negative body and properties lengths count as 0."""
    return cl.record_size(max(body_len, 0), topic_len, max(props_len, 0), sys_flag, v2)


def check_record(buf, pos: int, *, check_crc: bool = True, force_verify_prop_crc: bool = False) -> Check:
    """Java ``checkMessageAndReturnSize(byteBuffer, checkCRC, false, readBody=true)`` at ``pos``."""
    n = len(buf)
    if n - pos <= 4:
        return Check(False, -1, TRUNCATED, f"{n - pos} bytes left, not even a totalSize", None, pos)
    if n - pos < 8:
        return Check(False, -1, TRUNCATED, "no room for the magic code", None, pos + 4)
    (total,) = _I32.unpack_from(buf, pos)
    if n - pos - 4 < total - 4:
        return Check(False, -1, BAD_SIZE, f"totalSize {total} runs past the end of the file ({n - pos} bytes left)", None, pos + 4)
    (magic,) = struct.unpack_from(">I", buf, pos + 4)
    if magic == _BLANK:
        return Check(True, 0, java_pos=pos + 8)
    if magic not in (_V1, _V2):
        log = f"found a illegal magic code 0x{magic:x}"
        return Check(False, -1, BAD_MAGIC, f"magic code 0x{magic:08X} is not a message or BLANK", log, pos + 8)
    v2 = magic == _V2
    try:
        if total < 0:
            raise IndexError("negative totalSize")  # new byte[totalSize] throws
        (body_crc,) = _I32.unpack_from(buf, pos + layout.BODY_CRC_AT)
        (sys_flag,) = _I32.unpack_from(buf, pos + layout.SYS_FLAG_AT)
        if cl.host_size(sys_flag, cl.FLAG_BORNHOST_V6) > total:
            raise IndexError("host longer than the record buffer")
        p = pos + int(layout.LEN_BODY_AT[layout.host_kind(sys_flag)])  # Java reads the fields in order up to it
        (body_len,) = _I32.unpack_from(buf, p)
        p += 4
        if body_len > 0:
            if body_len > total or p + body_len > n:
                raise IndexError("body past the buffer")
            if check_crc and not force_verify_prop_crc:
                crc = _crc32(memoryview(buf)[p : p + body_len]) & 0x7FFFFFFF
                p += body_len
                if crc != body_crc:
                    return Check(
                        False, -1, BODY_CRC, f"body CRC stored {body_crc}, computed {crc}", f"CRC check failed. bodyCRC={crc}, currentCRC={body_crc}", p
                    )
            else:
                p += body_len
        (topic_len,) = (_I16 if v2 else _I8).unpack_from(buf, p)
        p += 2 if v2 else 1
        if topic_len < 0 or topic_len > total or p + topic_len > n:
            raise IndexError("topic past the buffer")
        topic = bytes(buf[p : p + topic_len])
        p += topic_len
        (props_len,) = _I16.unpack_from(buf, p)
        p += 2
        raw = b""
        if props_len > 0:
            if props_len > total or p + props_len > n:
                raise IndexError("properties past the buffer")
            raw = bytes(buf[p : p + props_len])
            p += props_len
            jp = props.to_java_map(props.decode_pairs(raw))
            if topic == SCHEDULE_TOPIC and props.DELAY in jp:
                if rules.java_parse_int(jp[props.DELAY]) is None:
                    return Check(False, -1, DELAY_PARSE, f"DELAY {jp[props.DELAY]!r} on {SCHEDULE_TOPIC.decode()} is not a number (Java's parseInt throws)", None, p)
        if check_crc and force_verify_prop_crc:
            expected = -1
            tail = raw[-PROPERTY_CRC_TAIL:] if len(raw) >= PROPERTY_CRC_TAIL else b""
            if (props.CRC32 + props.NAME_VALUE_SEPARATOR).encode() in raw and tail[-11:-1].isdigit():
                expected = decode_crc_digits(tail[-11:-1])
            if expected <= 0:
                return Check(False, -1, PROPERTY_CRC, "forceVerifyPropCRC: no __CRC32# property", None, p)
            crc = _crc32(memoryview(buf)[pos : pos + total - PROPERTY_CRC_TAIL]) & 0x7FFFFFFF
            if crc != expected:
                return Check(False, -1, PROPERTY_CRC, f"__CRC32# says {expected}, computed {crc}", None, p)
        read = java_cal_msg_length(v2, sys_flag, body_len, topic_len, props_len)
        if read != total:
            return Check(
                False, total, _size_kind(total),
                f"totalSize {total} but the fields make {read} (bodyLength {body_len}, topicLength {topic_len}, propertiesLength {props_len})",
                "found a half message at {offset}, it will be truncated.", p,
            )
        return Check(True, total, java_pos=p)
    except (struct.error, IndexError, ValueError) as exc:
        return Check(False, -1, _size_kind(total), f"a length field runs past the record or the file ({exc})", None, pos + 8)


def _size_kind(total: int) -> str:
    """The damage kind of a record whose lengths do not add up: BAD_SIZE when its
    totalSize could not hold even the smallest record (the one-record decoder's word
    for it), SIZE_MISMATCH otherwise."""
    return BAD_SIZE if total < cl.FIXED_SIZE_V1_IPV4 else SIZE_MISMATCH


@dataclass
class FileScan:
    """What the scan of one file found: the records it keeps, and why it stopped."""

    starts: np.ndarray  # in-file positions of kept MESSAGE records (int64)
    sizes: np.ndarray  # their totalSize (int64)
    end: int  # in-file position where the walk stopped (or the BLANK position)
    blank: bool  # True when a BLANK sent the walk to the next file
    stop: Check | None  # the failing check when the walk stopped on a bad record / zero tail
    schedule_idx: np.ndarray | None = None  # indices of records on SCHEDULE_TOPIC_XXXX


def _rows(a: np.ndarray, idx: np.ndarray, width: int) -> np.ndarray:
    """``a[i : i + width]`` for every ``i`` in ``idx`` as one (N, width) array; positions
    past the end of ``a`` read the last byte (callers check lengths first)."""
    cols = idx[:, None] + np.arange(width, dtype=np.int64)
    if len(idx) and (int(idx.max()) + width > len(a)):
        np.minimum(cols, len(a) - 1, out=cols)
    return a[cols]


def _col_i32(rows: np.ndarray, off: int) -> np.ndarray:
    return np.ascontiguousarray(rows[:, off : off + 4]).view(">i4").reshape(-1).astype(np.int64)


def _col_i16(rows: np.ndarray, off: int) -> np.ndarray:
    return np.ascontiguousarray(rows[:, off : off + 2]).view(">i2").reshape(-1).astype(np.int64)


#: the fixed-position bytes the check needs from every record, gathered as one row:
#: totalSize, magicCode and bodyCRC, then sysFlag, then bodyLength where an IPv4/IPv4
#: record has it (positions from the schema's layout)
_HEADER_COLS = np.concatenate([
    np.arange(0, layout.BODY_CRC_AT + 4), np.arange(layout.SYS_FLAG_AT, layout.SYS_FLAG_AT + 4),
    np.arange(layout.LEN_BODY_AT[0], layout.LEN_BODY_AT[0] + 4),
]).astype(np.int64)
#: where each field sits in that row
_H_MAGIC, _H_BODY_CRC = layout.MAGIC_AT, layout.BODY_CRC_AT
_H_SYS_FLAG = layout.BODY_CRC_AT + 4
_H_LEN_BODY = _H_SYS_FLAG + 4
_M0, _M1, _M2 = layout.MAGIC_V1_BYTES[:3]  # V1 and V2 differ only in their last byte
_M_V1, _M_V2 = layout.MAGIC_V1_BYTES[3], layout.MAGIC_V2_BYTES[3]


def _magic_ok(rows: np.ndarray, at: int) -> np.ndarray:
    """Rows whose 4 bytes at ``at`` are a message magic (V1 or V2)."""
    last = rows[:, at + 3]
    return (rows[:, at] == _M0) & (rows[:, at + 1] == _M1) & (rows[:, at + 2] == _M2) & ((last == _M_V1) | (last == _M_V2))
#: records checked together: their bytes (a few MiB of log at 1 KiB bodies) stay in
#: cache between the CRC pass and the gathers of the fields near their ends, and the
#: per-chunk numpy overhead stays small
CHUNK = 4096


def _chain_from(buf, a: np.ndarray, hints: np.ndarray | None, start: int, until: int | None) -> tuple[np.ndarray, int, str]:
    """Record starts of the chain from ``start``, using ``hints`` (positions the consume
    queues say records start at) to take whole verified runs at once: a run of hints
    where each ``start + totalSize`` equals the next start, each with a message magic,
    is exactly what the sequential walk would visit.  Gaps (records without a queue
    entry: prepared/rolled-back transactions) and the tail are walked in Python.
    Stops at a BLANK, a bad record, the end, or at the first boundary at or past
    ``until`` (why = "blank", "bad", "end", "until")."""
    n = len(buf)
    if hints is None or not len(hints):
        starts, pos, why = _walk(buf, start, until)
        return np.asarray(starts, dtype=np.int64), pos, why
    # only the hints before ``until``: gathering the headers past it would touch (and fault
    # in) pages that another process walks (_split_scan's child: the file's second half)
    h = hints[(hints >= start) & (hints + 8 <= n) & ((hints < until) if until is not None else True)]
    if len(h) > 1 and not bool((h[1:] > h[:-1]).all()):
        h = unique(h)
    P = _rows(a, h, _PREFIX.size)
    size = _col_i32(P, 0)
    magic_ok = _magic_ok(P, layout.MAGIC_AT)
    valid = magic_ok & (size >= cl.FIXED_SIZE_V1_IPV4) & (h + size <= n)
    link = np.zeros(len(h), dtype=bool)
    link[:-1] = valid[:-1] & (h[:-1] + size[:-1] == h[1:])
    if until is not None:
        link[:-1] &= h[1:] < until  # a run never reaches ``until``: it ends on the record before
    breaks = np.flatnonzero(~link)  # the last hint is always a break
    parts: list[np.ndarray] = []
    pos = start
    done = lambda why: ((np.concatenate(parts) if parts else np.zeros(0, np.int64)), pos, why)  # noqa: E731
    while True:
        if until is not None and pos >= until:
            return done("until")
        i = int(np.searchsorted(h, pos))
        if i < len(h) and h[i] == pos and valid[i]:
            j = int(breaks[np.searchsorted(breaks, i)])
            if valid[j]:
                parts.append(h[i : j + 1])
                pos = int(h[j] + size[j])
            else:  # the run leads into a hint that is not a record: stop before it
                parts.append(h[i:j])
                pos = int(h[j])
            continue
        k = i + 1 if i < len(h) and h[i] == pos else i
        nxt = int(h[k]) if k < len(h) else None
        if until is not None and (nxt is None or nxt > until):
            nxt = until
        starts, pos, why = _walk(buf, pos, nxt)
        if len(starts):
            parts.append(starts)
        if why != "until":
            return done(why)


def _sizes(buf, s: np.ndarray, end: int | None = None) -> np.ndarray:
    """Record sizes of a contiguous chain: each record ends where the next one starts."""
    size = np.empty(len(s), dtype=np.int64)
    if len(s):
        size[:-1] = np.diff(s)
        size[-1] = (end - int(s[-1])) if end is not None else _I32.unpack_from(buf, int(s[-1]))[0]
    return size


#: what the compiled check (:func:`rmqlab.scan.kernels.accept`) needs of the layout: where
#: magicCode, bodyCRC and sysFlag sit, the host flags, the smallest record; bodyLength's
#: place by host kind; the magics' shared bytes and their last ones; the schedule topic
_ACCEPT_AT = np.asarray([layout.MAGIC_AT, layout.BODY_CRC_AT, layout.SYS_FLAG_AT, cl.FLAG_BORNHOST_V6 & 0xFF, cl.FLAG_STOREHOST_V6 & 0xFF,
                        cl.FIXED_SIZE_V1_IPV4], dtype=np.int64)
_ACCEPT_MAGIC = np.asarray([_M0, _M1, _M2, _M_V1, _M_V2], dtype=np.uint8)
_SCHEDULE_TOPIC_BYTES = np.frombuffer(SCHEDULE_TOPIC, np.uint8)


def _validate(buf, a: np.ndarray, s: np.ndarray, size: np.ndarray, lo: int, hi: int, check_crc: bool) -> tuple[int, list[int]]:
    """Java's rule for records ``s[lo:hi]`` (known to chain and fit the file): in a file
    of :data:`KERNEL_FROM` bytes or more one compiled pass (:func:`rmqlab.scan.kernels.accept`),
    else vectorised here.  Returns (index of the first record that fails, or -1; indices
    of SCHEDULE_TOPIC_XXXX records before it, which the caller re-checks one by one)."""
    n = len(a)
    if n >= KERNEL_FROM:
        got = kernels.accept(a, s, size, lo, hi, check_crc, _ACCEPT_AT, layout.LEN_BODY_AT, _ACCEPT_MAGIC, _SCHEDULE_TOPIC_BYTES)
        if got is not None:
            return got
    last = n - 1
    mv = memoryview(buf)
    crc32 = _crc32
    sched: list[int] = []
    for i in range(lo, hi, CHUNK):
        j = min(hi, i + CHUNK)
        sc, sz = s[i:j], size[i:j]
        cols = sc[:, None] + _HEADER_COLS
        np.minimum(cols, last, out=cols)
        H = a[cols]
        magic_ok = _magic_ok(H, _H_MAGIC)
        v2 = H[:, _H_MAGIC + 3] == _M_V2
        sys_flag = _col_i32(H, _H_SYS_FLAG)
        blp = layout.LEN_BODY_AT[layout.host_kind(sys_flag)]
        body_len = _col_i32(H, _H_LEN_BODY)
        v6 = np.flatnonzero(blp != layout.LEN_BODY_AT[0])
        if len(v6):  # IPv6 hosts move bodyLength: read those few where they are
            body_len[v6] = _col_i32(_rows(a, sc[v6] + blp[v6], 4), 0)
        end = sc + sz
        body_start = sc + blp + 4
        tlen_pos = body_start + np.maximum(body_len, 0)
        tsz = np.where(v2, 2, 1)
        # a negative bodyLength is an empty body to Java (calMsgLength counts it as 0)
        ok = magic_ok & (blp + 4 <= sz) & (tlen_pos + tsz <= end)
        if check_crc:
            be = tlen_pos.tolist()
            crcs = np.fromiter(map(crc32, map(mv.__getitem__, map(slice, body_start.tolist(), be))), dtype=np.int64, count=j - i)
            ok &= ((crcs & 0x7FFFFFFF) == _col_i32(H, _H_BODY_CRC)) | (body_len <= 0)  # Java: CRC only for a non-empty body
        T = _rows(a, np.where(ok, tlen_pos, 0), 2)
        tl8 = T[:, 0].astype(np.int64)
        topic_len = np.where(v2, _col_i16(T, 0), np.where(tl8 >= 128, tl8 - 256, tl8))
        plen_pos = tlen_pos + tsz + np.maximum(topic_len, 0)
        ok &= (topic_len >= 0) & (plen_pos + 2 <= end)
        props_len = _col_i16(_rows(a, np.where(ok, plen_pos, 0), 2), 0)
        # calMsgLength: the IPv4/V1 size, +1 for V2's topic length, + the hosts' extra
        # bytes (exactly how far they move bodyLength)
        read = cl.record_size(np.maximum(body_len, 0), topic_len, np.maximum(props_len, 0)) + v2 + (blp - layout.LEN_BODY_AT[0])
        ok &= read == sz
        for k in np.flatnonzero(ok & (topic_len == len(SCHEDULE_TOPIC))).tolist():
            t0 = int(tlen_pos[k] + tsz[k])
            if bytes(buf[t0 : t0 + len(SCHEDULE_TOPIC)]) == SCHEDULE_TOPIC:
                sched.append(i + k)
        if not ok.all():
            bad = i + int(np.argmin(ok))
            del mv
            return bad, [x for x in sched if x < bad]
    del mv
    return -1, sched


#: below this many records the check stays in one process
PARALLEL_MIN_RECORDS = 20_000
#: from a range (walk) or file (CRCs) this large on, the compiled loops do the work; below
#: it, the Python loop and a call per body, which cost less than loading the loops does
#: (~0.5 s: rmqlab.scan.kernels._load) on the small stores a command often opens
KERNEL_FROM = 4 << 20


def _validate_all(buf, a: np.ndarray, s: np.ndarray, size: np.ndarray, check_crc: bool) -> tuple[int, list[int]]:
    """:func:`_validate` over every record; on a large file the second half runs in a
    forked child that shares the read-only mapping (two processes halve the wall time on
    two cores).  The first failure wins, exactly as in the sequential walk."""
    n = len(s)
    if n < PARALLEL_MIN_RECORDS or not hasattr(os, "fork") or threading.active_count() > 1 or (os.cpu_count() or 1) < 2:
        return _validate(buf, a, s, size, 0, n, check_crc)
    mid = (n // 2) // CHUNK * CHUNK
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: the second half; report and leave without any cleanup
        try:
            os.close(r)
            bad, sched = _validate(buf, a, s, size, mid, n, check_crc)
            os.write(w, np.asarray([bad] + sched, dtype=np.int64).tobytes())
        finally:
            os._exit(0)
    os.close(w)
    bad, sched = _validate(buf, a, s, size, 0, mid, check_crc)
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    if bad >= 0:
        return bad, sched
    if len(data) < 8:  # the child died: do its half here
        b2, s2 = _validate(buf, a, s, size, mid, n, check_crc)
    else:
        got = np.frombuffer(data, dtype=np.int64).tolist()
        b2, s2 = got[0], got[1:]
    return b2, sched + s2


def _walk(buf, pos: int, until: int | None = None) -> tuple[np.ndarray, int, str]:
    """Follow the totalSize chain from ``pos`` (the only sequential part).
    Returns (starts, where it stopped, why: "blank", "bad", "end" or "until").

    In a range of :data:`KERNEL_FROM` bytes or more the run of message records is walked
    by the compiled loop (:func:`rmqlab.scan.kernels.walk`: it stops at anything but a
    whole message record of at least the smallest size); what stopped it is judged
    here, in Python, by the same rule as every record of a smaller range.  The starts
    are an int64 array (the compiled run's as it gave them: a Python int per record of
    a 1 GiB file was ~200 MiB)."""
    n = len(buf)
    unpack = _PREFIX.unpack_from
    head = _NO_STARTS
    starts: list[int] = []
    if (n if until is None else until) - pos >= KERNEL_FROM:
        run = kernels.walk(np.frombuffer(buf, dtype=np.uint8), pos, n if until is None else until, n, 0, cl.FIXED_SIZE_V1_IPV4, (_V1, _V2))
        if run is not None:
            head, pos = run[0], run[1]
    while n - pos >= 8:
        if until is not None and pos >= until:
            return _joined(head, starts), pos, "until"
        size, magic = unpack(buf, pos)
        if magic == _V1 or magic == _V2:
            if size < cl.FIXED_SIZE_V1_IPV4 or n - pos < size:
                return _joined(head, starts), pos, "bad"
            starts.append(pos)
            pos += size
        elif magic == _BLANK:
            # Java compares totalSize with the bytes left before the magic: a BLANK
            # claiming more than the file holds fails like any record
            return _joined(head, starts), pos, ("bad" if size > n - pos else "blank")
        else:
            return _joined(head, starts), pos, "bad"
    return _joined(head, starts), pos, "end"


_NO_STARTS = np.zeros(0, np.int64)


def _joined(head: np.ndarray, tail: list[int]) -> np.ndarray:
    return np.concatenate((head, np.asarray(tail, dtype=np.int64))) if tail else np.asarray(head, dtype=np.int64)


def _split_scan(buf, a: np.ndarray, hints: np.ndarray, check_crc: bool):
    """Chain *and* check the two halves of a file at once, the second half in a forked
    child that starts at a hint near the middle.  Both halves read (and, on a cold
    cache, wait for) their own pages, so the I/O overlaps the checking.

    The result is used only if the parent's chain lands exactly on the child's start
    (the hint really is a record boundary); otherwise ``None`` and the caller scans
    sequentially.  Returns (starts, sizes, end pos, blank, first bad or -1, sched)."""
    m = int(hints[len(hints) // 2])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: the chain from m, checked; report and leave without cleanup
        try:
            os.close(r)
            s2, pos2, why2 = _chain_from(buf, a, hints, m, None)
            bad2, sched2 = _validate(buf, a, s2, _sizes(buf, s2), 0, len(s2), check_crc)
            head = np.asarray([pos2, 1 if why2 == "blank" else 0, bad2, len(s2), len(sched2)], dtype=np.int64)
            payload = head.tobytes() + s2.astype(np.int64).tobytes() + np.asarray(sched2, dtype=np.int64).tobytes()
            with os.fdopen(w, "wb") as fh:
                fh.write(payload)
        finally:
            os._exit(0)
    os.close(w)
    try:
        s1, pos1, why1 = _chain_from(buf, a, hints, 0, m)
        joined = why1 == "until" and pos1 == m
        size1 = _sizes(buf, s1, m if joined else None)
        bad1, sched1 = _validate(buf, a, s1, size1, 0, len(s1), check_crc)
    finally:
        with os.fdopen(r, "rb") as fh:
            data = fh.read()
        os.waitpid(pid, 0)
    if bad1 >= 0 or why1 != "until":
        # the log stops in the first half: the child's part does not count
        return s1, size1, pos1, why1 == "blank", bad1, sched1
    if not joined or len(data) < 40:
        return None
    head = np.frombuffer(data[:40], dtype=np.int64)
    pos2, blank2, bad2, n2, k2 = (int(x) for x in head)
    s2 = np.frombuffer(data[40 : 40 + 8 * n2], dtype=np.int64)
    sched2 = np.frombuffer(data[40 + 8 * n2 : 40 + 8 * (n2 + k2)], dtype=np.int64).tolist()
    s = np.concatenate([s1, s2])
    size = np.concatenate([size1, _sizes(buf, s2)])
    off = len(s1)
    return s, size, pos2, bool(blank2), (off + bad2 if bad2 >= 0 else -1), sched1 + [off + x for x in sched2]


def scan_file(buf, *, check_crc: bool = True, force_verify_prop_crc: bool = False, hints: np.ndarray | None = None, start: int = 0) -> FileScan:
    """Walk one commitlog file from position 0 with Java's acceptance rule (or from
    ``start``, a record's start the caller knows: the walk from 0 reaches it and goes
    on from there alike).

    ``hints``: in-file positions where records are believed to start (from the consume
    queues); they only speed the walk up, every link is still verified."""
    n = len(buf)
    a = np.frombuffer(buf, dtype=np.uint8) if n else np.zeros(0, np.uint8)
    split = None
    if (
        not start and hints is not None and len(hints) >= PARALLEL_MIN_RECORDS and not force_verify_prop_crc
        and hasattr(os, "fork") and threading.active_count() == 1 and (os.cpu_count() or 1) >= 2
    ):
        split = _split_scan(buf, a, np.asarray(hints, dtype=np.int64), check_crc)
    first_bad = 0
    sched = None
    if split is not None:
        s, size, pos, blank, bad, sched_list = split
    else:
        s, pos, why = _chain_from(buf, a, hints, start, None)
        blank = why == "blank"
        size = _sizes(buf, s)
        bad, sched_list = _validate_all(buf, a, s, size, check_crc and not force_verify_prop_crc) if len(s) else (-1, [])
    first_bad = len(s)
    if len(s):
        if bad >= 0:
            first_bad = bad
        sched = np.asarray(sched_list, dtype=np.int64)
        if force_verify_prop_crc or len(sched):
            # confirm with the exact per-record rule, in Java's order: the whole-record CRC
            # (forceVerifyPropCRC), and DELAY parsing on SCHEDULE_TOPIC_XXXX
            recheck = range(first_bad) if force_verify_prop_crc else sched.tolist()
            for i in recheck:
                if i >= first_bad:
                    break
                c = check_record(buf, int(s[i]), check_crc=check_crc, force_verify_prop_crc=force_verify_prop_crc)
                if not c.ok:
                    first_bad = i
                    break
        sched = sched[sched < first_bad]
    sizes = size[:first_bad]
    if first_bad < len(s):
        stop_pos = int(s[first_bad])
        return FileScan(s[:first_bad], sizes, stop_pos, False, check_record(buf, stop_pos, check_crc=check_crc, force_verify_prop_crc=force_verify_prop_crc), sched)
    if blank:
        return FileScan(s, sizes, pos, True, None, sched)
    return FileScan(s, sizes, pos, False, check_record(buf, pos, check_crc=check_crc, force_verify_prop_crc=force_verify_prop_crc), sched)


def shift_scan(s: FileScan, by: int) -> FileScan:
    """The scan of ``buf[by:]`` in the positions of ``buf`` (a walk that began ``by``
    bytes into its file)."""
    stop = None if s.stop is None else Check(s.stop.ok, s.stop.size, s.stop.kind, s.stop.message, s.stop.java_log, s.stop.java_pos + by)
    return FileScan(s.starts + by, s.sizes, s.end + by, s.blank, stop, s.schedule_idx)
