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
applies the same rule to a whole file fast: a Python loop follows only the
``totalSize`` chain, numpy checks every record's length fields at once, and
``zlib.crc32`` runs over each body in place (no copies).  Tests check that both
agree with :func:`~rmqlab.format.record.decode_record` on every reference store.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from dataclasses import dataclass

import numpy as np

from ..format import commitlog as cl
from ..format import properties as props
from ..format.record import BAD_MAGIC, BAD_SIZE, BODY_CRC, PROPERTY_CRC, PROPERTY_CRC_TAIL, SIZE_MISMATCH, TRUNCATED, decode_crc_digits

_PREFIX = struct.Struct(">iI")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I16 = struct.Struct(">h")
_I8 = struct.Struct(">b")
_V1, _V2, _BLANK = cl.MAGIC_V1, cl.MAGIC_V2, cl.MAGIC_BLANK

# Positions inside a record (Java MessageDecoder.*_POSITION), from the schema layout.
SYSFLAG_POSITION = 36
BORN_HOST_POSITION = cl.HEADER_SIZE  # 48: bornHost follows bornTimestamp
SCHEDULE_TOPIC = b"SCHEDULE_TOPIC_XXXX"
DELAY_PARSE = "DELAY_PARSE"  # Integer.parseInt(DELAY) threw on SCHEDULE_TOPIC_XXXX


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
    """Java ``MessageExtEncoder.calMsgLength`` (negative lengths count as 0)."""
    born = 20 if sys_flag & cl.FLAG_BORNHOST_V6 else 8
    store = 20 if sys_flag & cl.FLAG_STOREHOST_V6 else 8
    return (
        4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8 + 4
        + max(body_len, 0) + (2 if v2 else 1) + topic_len + 2 + max(props_len, 0)
    )


def check_record(buf, pos: int, *, check_crc: bool = True, force_verify_prop_crc: bool = False) -> Check:
    """Java ``checkMessageAndReturnSize(byteBuffer, checkCRC, false, readBody=true)`` at ``pos``."""
    n = len(buf)
    if n - pos <= 4:
        return Check(False, -1, TRUNCATED, f"{n - pos} bytes left, not even a totalSize", None, pos)
    (total,) = _I32.unpack_from(buf, pos)
    if n - pos - 4 < total - 4:
        return Check(False, -1, BAD_SIZE, f"totalSize {total} runs past the end of the file ({n - pos} bytes left)", None, pos + 4)
    if n - pos < 8:
        return Check(False, -1, TRUNCATED, "no room for the magic code", None, pos + 4)
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
        p = pos + 8
        (body_crc,) = _I32.unpack_from(buf, p)
        p += 4 + 4 + 4 + 8 + 8  # bodyCRC, queueId, flag, queueOffset, physicOffset
        (sys_flag,) = _I32.unpack_from(buf, p)
        p += 4 + 8  # sysFlag, bornTimestamp
        born = 20 if sys_flag & cl.FLAG_BORNHOST_V6 else 8
        if born > total:
            raise IndexError("host longer than the record buffer")
        p += born
        (store_ts,) = _I64.unpack_from(buf, p)
        p += 8
        store = 20 if sys_flag & cl.FLAG_STOREHOST_V6 else 8
        p += store + 4 + 8  # storeHost, reconsumeTimes, preparedTransactionOffset
        (body_len,) = _I32.unpack_from(buf, p)
        p += 4
        if body_len > 0:
            if body_len > total or p + body_len > n:
                raise IndexError("body past the buffer")
            if check_crc and not force_verify_prop_crc:
                crc = zlib.crc32(memoryview(buf)[p : p + body_len]) & 0x7FFFFFFF
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
                try:
                    int(jp[props.DELAY])
                except ValueError:
                    return Check(False, -1, DELAY_PARSE, f"DELAY {jp[props.DELAY]!r} on {SCHEDULE_TOPIC.decode()} is not a number (Java's parseInt throws)", None, p)
        if check_crc and force_verify_prop_crc:
            expected = -1
            tail = raw[-PROPERTY_CRC_TAIL:] if len(raw) >= PROPERTY_CRC_TAIL else b""
            if (props.CRC32 + props.NAME_VALUE_SEPARATOR).encode() in raw and tail[-11:-1].isdigit():
                expected = decode_crc_digits(tail[-11:-1])
            if expected <= 0:
                return Check(False, -1, PROPERTY_CRC, "forceVerifyPropCRC: no __CRC32# property", None, p)
            crc = zlib.crc32(memoryview(buf)[pos : pos + total - PROPERTY_CRC_TAIL]) & 0x7FFFFFFF
            if crc != expected:
                return Check(False, -1, PROPERTY_CRC, f"__CRC32# says {expected}, computed {crc}", None, p)
        read = java_cal_msg_length(v2, sys_flag, body_len, topic_len, props_len)
        if read != total:
            return Check(
                False, total, SIZE_MISMATCH,
                f"totalSize {total} but the fields make {read} (bodyLength {body_len}, topicLength {topic_len}, propertiesLength {props_len})",
                f"found a half message at {{offset}}, it will be truncated.", p,
            )
        return Check(True, total, java_pos=p)
    except (struct.error, IndexError, ValueError) as exc:
        return Check(False, -1, SIZE_MISMATCH, f"a length field runs past the record or the file ({exc})", None, pos + 8)


@dataclass
class FileScan:
    """What the scan of one file found: the records it keeps, and why it stopped."""

    starts: np.ndarray  # in-file positions of kept MESSAGE records (int64)
    sizes: np.ndarray  # their totalSize (int64)
    end: int  # in-file position where the walk stopped (or the BLANK position)
    blank: bool  # True when a BLANK sent the walk to the next file
    stop: Check | None  # the failing check when the walk stopped on a bad record / zero tail
    schedule_idx: np.ndarray | None = None  # indices of records on SCHEDULE_TOPIC_XXXX


def _gather_i32(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Big-endian int32 at every byte position in ``idx`` (one fancy index, then a view)."""
    if not len(idx):
        return np.zeros(0, dtype=np.int64)
    b = a[idx[:, None] + _ARANGE4]
    return b.view(">i4").reshape(-1).astype(np.int64)


_ARANGE4 = np.arange(4, dtype=np.int64)
_ARANGE2 = np.arange(2, dtype=np.int64)


def _gather_i16(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    if not len(idx):
        return np.zeros(0, dtype=np.int64)
    return a[idx[:, None] + _ARANGE2].view(">i2").reshape(-1).astype(np.int64)


def _walk(buf, pos: int, until: int | None = None) -> tuple[list[int], int, str]:
    """Follow the totalSize chain from ``pos`` (Python; the only sequential part).
    Returns (starts, where it stopped, why: "blank", "bad", "end" or "until")."""
    n = len(buf)
    unpack = _PREFIX.unpack_from
    starts: list[int] = []
    while n - pos >= 8:
        if until is not None and pos >= until:
            return starts, pos, "until"
        size, magic = unpack(buf, pos)
        if magic == _V1 or magic == _V2:
            if size < cl.FIXED_SIZE_V1_IPV4 or n - pos < size:
                return starts, pos, "bad"
            starts.append(pos)
            pos += size
        elif magic == _BLANK:
            return starts, pos, "blank"
        else:
            return starts, pos, "bad"
    return starts, pos, "end"


def _chain(buf, a: np.ndarray, hints: np.ndarray | None) -> tuple[np.ndarray, int, bool]:
    """Record starts of the chain from position 0, using ``hints`` (positions the
    consume queues say records start at) to take whole verified runs at once: a run of
    hints where each ``start + totalSize`` equals the next start, each with a message
    magic, is exactly what the sequential walk would visit.  Gaps (records without a
    queue entry: prepared/rolled-back transactions) and the tail are walked in Python."""
    n = len(buf)
    if hints is None or not len(hints):
        starts, pos, why = _walk(buf, 0)
        return np.asarray(starts, dtype=np.int64), pos, why == "blank"
    h = hints[(hints >= 0) & (hints + 8 <= n)]
    if len(h) > 1 and not bool((h[1:] > h[:-1]).all()):
        h = np.unique(h)
    size = _gather_i32(a, h)
    magic_ok = (a[h + 4] == 0xDA) & (a[h + 5] == 0xA3) & (a[h + 6] == 0x20) & ((a[h + 7] == 0xA7) | (a[h + 7] == 0xAB))
    valid = magic_ok & (size >= cl.FIXED_SIZE_V1_IPV4) & (h + size <= n)
    link = np.zeros(len(h), dtype=bool)
    link[:-1] = valid[:-1] & (h[:-1] + size[:-1] == h[1:])
    breaks = np.flatnonzero(~link)  # the last hint is always a break
    parts: list[np.ndarray] = []
    pos = 0
    while True:
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
        starts, pos, why = _walk(buf, pos, nxt)
        if starts:
            parts.append(np.asarray(starts, dtype=np.int64))
        if why != "until":
            return (np.concatenate(parts) if parts else np.zeros(0, np.int64)), pos, why == "blank"


def _crc_range(buf, bs: list, be: list, cs: list, lo: int, hi: int) -> int:
    """First index in [lo, hi) whose body CRC does not match (empty bodies pass), or -1.

    The loop runs entirely in C (``map`` over ``slice`` → ``memoryview.__getitem__`` →
    ``zlib.crc32``); numpy compares the results with the stored values."""
    if hi <= lo:
        return -1
    mv = memoryview(buf)
    crcs = np.fromiter(map(zlib.crc32, map(mv.__getitem__, map(slice, bs[lo:hi], be[lo:hi]))), dtype=np.int64, count=hi - lo)
    del mv
    stored = np.asarray(cs[lo:hi], dtype=np.int64)
    nonempty = np.asarray(be[lo:hi], dtype=np.int64) > np.asarray(bs[lo:hi], dtype=np.int64)
    bad = np.flatnonzero(((crcs & 0x7FFFFFFF) != stored) & nonempty)
    return lo + int(bad[0]) if len(bad) else -1


#: below this many records the CRC pass stays in one process
PARALLEL_CRC_MIN_RECORDS = 20_000


def first_bad_crc(buf, bs: list, be: list, cs: list) -> int:
    """Index of the first record whose body CRC fails, or -1.

    ``zlib.crc32`` keeps the GIL for bodies under 5 KiB, so threads do not help; on a
    large file the second half is checked in a forked child that shares the read-only
    mapping (no copy), which halves the wall time on two cores.  The result is the same
    as the sequential loop's: the first failure wins."""
    n = len(bs)
    if n < PARALLEL_CRC_MIN_RECORDS or not hasattr(os, "fork") or threading.active_count() > 1 or (os.cpu_count() or 1) < 2:
        return _crc_range(buf, bs, be, cs, 0, n)
    mid = n // 2
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: check the second half, report, leave without cleanup
        try:
            os.close(r)
            os.write(w, struct.pack(">q", _crc_range(buf, bs, be, cs, mid, n)))
        finally:
            os._exit(0)
    os.close(w)
    first = _crc_range(buf, bs, be, cs, 0, mid)
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    if first >= 0:
        return first
    if len(data) != 8:  # the child died: do its half here
        return _crc_range(buf, bs, be, cs, mid, n)
    return struct.unpack(">q", data)[0]


def scan_file(buf, *, check_crc: bool = True, force_verify_prop_crc: bool = False, hints: np.ndarray | None = None) -> FileScan:
    """Walk one commitlog file from position 0 with Java's acceptance rule.

    ``hints``: in-file positions where records are believed to start (from the consume
    queues); they only speed the walk up, every link is still verified."""
    n = len(buf)
    a = np.frombuffer(buf, dtype=np.uint8) if n else np.zeros(0, np.uint8)
    s, pos, blank = _chain(buf, a, hints)
    first_bad = len(s)
    sched = None
    if len(s):
        size = _gather_i32(a, s)
        magic_v2 = a[s + 7] == (_V2 & 0xFF)
        sys_flag = _gather_i32(a, s + SYSFLAG_POSITION)
        born = np.where(sys_flag & cl.FLAG_BORNHOST_V6, 20, 8)
        store = np.where(sys_flag & cl.FLAG_STOREHOST_V6, 20, 8)
        body_len_pos = BORN_HOST_POSITION + born + 8 + store + 4 + 8
        magic_ok = (a[s + 4] == 0xDA) & (a[s + 5] == 0xA3) & (a[s + 6] == 0x20) & ((a[s + 7] == 0xA7) | (a[s + 7] == 0xAB))
        ok = magic_ok & (body_len_pos + 4 <= size)
        end = s + size
        bl_idx = np.where(ok, s + body_len_pos, 0)
        body_len = _gather_i32(a, bl_idx)
        body_start = s + body_len_pos + 4
        tlen_pos = body_start + np.maximum(body_len, 0)
        tsz = np.where(magic_v2, 2, 1)
        ok &= (body_len >= 0) & (tlen_pos + tsz <= end)
        ti = np.where(ok, tlen_pos, 0)
        tl8 = a[ti].astype(np.int64)
        tl8 = np.where(tl8 >= 128, tl8 - 256, tl8)
        topic_len = np.where(magic_v2, _gather_i16(a, np.minimum(ti, max(n - 2, 0))), tl8)
        plen_pos = tlen_pos + tsz + np.maximum(topic_len, 0)
        ok &= (topic_len >= 0) & (plen_pos + 2 <= end)
        pi = np.where(ok, plen_pos, 0)
        props_len = _gather_i16(a, pi)
        read = (
            4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8 + 4
            + np.maximum(body_len, 0) + tsz + topic_len + 2 + np.maximum(props_len, 0)
        )
        ok &= read == size
        if not ok.all():
            first_bad = int(np.argmin(ok))
        # 2) body CRCs, in place, up to the first structural failure
        if check_crc and not force_verify_prop_crc:
            crc_stored = _gather_i32(a, s[:first_bad] + 8)
            bs = body_start[:first_bad].tolist()
            be = (body_start[:first_bad] + np.maximum(body_len[:first_bad], 0)).tolist()
            bad = first_bad_crc(buf, bs, be, crc_stored.tolist())
            if bad >= 0:
                first_bad = bad
        # 3) SCHEDULE_TOPIC_XXXX records: Java parses DELAY and may throw
        sched_mask = (topic_len[:first_bad] == len(SCHEDULE_TOPIC))
        if sched_mask.any():
            cand = np.flatnonzero(sched_mask)
            keep = []
            for i in cand.tolist():
                t0 = int(tlen_pos[i] + tsz[i])
                if bytes(buf[t0 : t0 + len(SCHEDULE_TOPIC)]) == SCHEDULE_TOPIC:
                    keep.append(i)
            sched = np.asarray(keep, dtype=np.int64)
        if first_bad < len(s) or force_verify_prop_crc or (sched is not None and len(sched)):
            # confirm (and explain) with the exact per-record rule, in Java's order
            limit = first_bad if first_bad < len(s) else len(s)
            recheck = range(limit) if force_verify_prop_crc else (sched.tolist() if sched is not None else [])
            for i in recheck:
                if i >= limit:
                    break
                c = check_record(buf, int(s[i]), check_crc=check_crc, force_verify_prop_crc=force_verify_prop_crc)
                if not c.ok:
                    first_bad = i
                    break
        if sched is not None:
            sched = sched[sched < first_bad]
        sizes = size[:first_bad]
    else:
        sizes = np.zeros(0, dtype=np.int64)
    if first_bad < len(s):
        stop_pos = int(s[first_bad])
        return FileScan(s[:first_bad], sizes, stop_pos, False, check_record(buf, stop_pos, check_crc=check_crc, force_verify_prop_crc=force_verify_prop_crc), sched)
    if blank:
        return FileScan(s, sizes, pos, True, None, sched)
    return FileScan(s, sizes, pos, False, check_record(buf, pos, check_crc=check_crc, force_verify_prop_crc=force_verify_prop_crc), sched)
