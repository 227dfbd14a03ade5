"""Compiled loops for the bulk decoder, where numpy needs several passes or Python a
call per record.

Java counterpart: none — RocketMQ reads one record at a time
(``CommitLog.checkMessageAndReturnSize``).

* :func:`walk` — Java's record loop (``pos += totalSize`` while the magic is a
  message's), the positions of a whole range in one pass, reading ahead of the chain
  (:data:`WALK_AHEAD`); :func:`walk_pieces` the
  same in pieces, the next walked on a thread of its own (its page faults then run
  on the other core while the caller decodes).
* :func:`bodies_and_crcs` — each body copied into the Arrow ``binary`` column's data
  buffer and its CRC-32 computed by ISA-L's ``crc32_gzip_refl`` (the same IEEE CRC as
  :func:`rmqlab.format.hashing.crc32`), with the GIL released and large batches split
  across two threads.  One Python call per 4 KiB body cost more than ISA-L's CRC
  itself (~13 GB/s).
* :func:`java_property_values` — the few property values the engine's dispatch needs
  (TAGS, KEYS, UNIQ_KEY, DELAY), with Java's map rules, without building the map.
* :func:`crc32_slices` — the CRCs alone, for the batch put (one Python call per
  128-byte body cost ~0.6 µs, the CRC itself ~0.03).
* :func:`index_chains` — every hash slot's chain of an index file followed once
  (verify: which entries a lookup reaches, from which slot, and the cycles);
  :func:`merge_find` and :func:`join_keys` — queue and index entries joined with the
  records they point at, one linear merge of two sorted columns;
  :func:`ascii_hashes` — Java ``String.hashCode`` of many ASCII keys (index keys).
* :func:`property_pairs` — every record's properties split into name/value pairs by
  the rules of :mod:`rmqlab.format.properties` and copied into the Arrow columns in
  the same pass, duplicates settled there too (straight from the commitlog buffer).

:func:`set_threads` limits them to one thread (Spark's readers: a task per core
already).

numba and isal are dependencies of rmqlab, and the bulk passes have no other copy (the
index loops and the queue check are plain functions, compiled when loaded and run
interpreted while a process has given them little to do: :data:`INTERPRETED_BELOW`; one
source either way): where
either cannot be loaded, :data:`AVAILABLE` is False, :data:`UNAVAILABLE_BECAUSE` says
why, and :func:`rmqlab.scan.crc.compiled_kernels` refuses with that reason.  (The
one-record decoder, :func:`rmqlab.format.record.decode_record`, is the slow reference
the tests compare these loops with.)  All loops are cached on disk by numba (the CRC loops call ISA-L by symbol name, see
:func:`_external_functions`), and numba is imported and the loops loaded on the first
call of one (:func:`_load`): a command on a small store, whose reads go record by
record, never loads them.
"""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np
import pyarrow as pa


def _external_functions():
    """ISA-L's ``crc32_gzip_refl(init, buf, len)`` (zlib's CRC-32) and libc's
    ``memcpy`` as numba external functions, or None without isal.  The library is
    loaded into the process and the compiled loops call the symbols by name, so numba
    caches them on disk like the others (a ctypes pointer is a per-process constant,
    which cost a ~0.5 s compile in every process).  Only ISA-L: without it the loops
    are not built at all, so no cached code can name a symbol that is not there."""
    try:
        import llvmlite.binding as ll
        from isal import isal_zlib
        from numba import types

        ctypes.CDLL(isal_zlib.__file__).crc32_gzip_refl  # noqa: B018 - present, or AttributeError
        ll.load_library_permanently(isal_zlib.__file__)
    except (ImportError, OSError, AttributeError, RuntimeError):
        return None
    crc = types.ExternalFunction("crc32_gzip_refl", types.uint32(types.uint32, types.voidptr, types.uint64))
    memcpy = types.ExternalFunction("memcpy", types.voidptr(types.voidptr, types.voidptr, types.uintp))
    return crc, memcpy


def _numba():
    """numba, or None when it cannot be imported."""
    try:
        import numba
    except ImportError:
        return None
    return numba


_CRC_EXT = _MEMCPY_EXT = None  # set by _load()


def _compile():
    numba = _numba()
    if numba is None:
        return None
    if _CRC_EXT is None:
        return None
    # the loops name the two as module globals: closure variables would go into
    # numba's cache key by pickle, which differs from process to process

    @numba.njit(nogil=True, cache=True)
    def copy_and_crc(src, starts, lens, dst, dst_offs, crcs, lo, hi, with_crc):  # pragma: no cover - compiled
        s0 = src.ctypes.data
        d0 = dst.ctypes.data
        for i in range(lo, hi):
            n = lens[i]
            if n:
                _MEMCPY_EXT(d0 + dst_offs[i], s0 + starts[i], n)
                if with_crc:
                    crcs[i] = _CRC_EXT(0, d0 + dst_offs[i], n)

    @numba.njit(nogil=True, cache=True)
    def crcs_of(src, starts, lens, crcs):  # pragma: no cover - compiled
        s0 = src.ctypes.data
        for i in range(len(starts)):
            crcs[i] = _CRC_EXT(0, s0 + starts[i], lens[i])

    @numba.njit(nogil=True, cache=True)
    def accept(a, s, size, lo, hi, check_crc, at, len_body_at, magic, sched_topic, sched):  # pragma: no cover - compiled
        """Java's acceptance rule (rmqlab.scan.acceptance._validate's, record by record)
        for the records ``s[lo:hi]`` (known to chain and fit ``a``): (index of the first
        that fails or -1, how many SCHEDULE_TOPIC_XXXX records before it went to
        ``sched``).  ``at``: where magicCode, bodyCRC and sysFlag sit; ``len_body_at``
        bodyLength's place by host kind; ``magic``: V1's and V2's last byte after their
        three shared ones."""
        n = len(a)
        a0 = a.ctypes.data
        ns = 0
        for i in range(lo, hi):
            p = s[i]
            sz = size[i]
            end = p + sz
            if p + at[2] + 4 > n:
                return i, ns
            m = p + at[0]
            last = a[m + 3]
            ok = a[m] == magic[0] and a[m + 1] == magic[1] and a[m + 2] == magic[2] and (last == magic[3] or last == magic[4])
            v2 = 1 if last == magic[4] else 0
            f = a[p + at[2] + 3]
            blp = len_body_at[(1 if f & at[3] else 0) + (2 if f & at[4] else 0)]
            if not ok or blp + 4 > sz:
                return i, ns
            b = p + blp
            body_len = (np.int64(a[b]) << 24) | (np.int64(a[b + 1]) << 16) | (np.int64(a[b + 2]) << 8) | np.int64(a[b + 3])
            if body_len >= 1 << 31:
                body_len -= 1 << 32
            body_start = b + 4
            tlen_pos = body_start + max(body_len, 0)
            tsz = 2 if v2 else 1
            if tlen_pos + tsz > end:
                return i, ns
            if check_crc and body_len > 0:
                c = p + at[1]
                stored = (np.int64(a[c]) << 24) | (np.int64(a[c + 1]) << 16) | (np.int64(a[c + 2]) << 8) | np.int64(a[c + 3])
                if stored >= 1 << 31:
                    stored -= 1 << 32
                if (np.int64(_CRC_EXT(0, a0 + body_start, tlen_pos - body_start)) & 0x7FFFFFFF) != stored:
                    return i, ns
            if v2:
                topic_len = (np.int64(a[tlen_pos]) << 8) | np.int64(a[tlen_pos + 1])
                if topic_len >= 1 << 15:
                    topic_len -= 1 << 16
            else:
                topic_len = np.int64(a[tlen_pos])
                if topic_len >= 128:
                    topic_len -= 256
            plen_pos = tlen_pos + tsz + max(topic_len, 0)
            if topic_len < 0 or plen_pos + 2 > end:
                return i, ns
            props_len = (np.int64(a[plen_pos]) << 8) | np.int64(a[plen_pos + 1])
            if props_len >= 1 << 15:
                props_len -= 1 << 16
            # calMsgLength: the IPv4/V1 size, +1 for V2's topic length, + the hosts' extra
            # bytes (exactly how far they move bodyLength)
            if at[5] + max(body_len, 0) + topic_len + max(props_len, 0) + v2 + (blp - len_body_at[0]) != sz:
                return i, ns
            if topic_len == len(sched_topic):
                t0 = tlen_pos + tsz
                same = True
                for k in range(len(sched_topic)):
                    if a[t0 + k] != sched_topic[k]:
                        same = False
                        break
                if same:
                    if ns < len(sched):
                        sched[ns] = i
                    ns += 1
        return -1, ns

    return copy_and_crc, crcs_of, accept


#: how far past a record :func:`walk` reads ahead, a byte per cache line (512 B to
#: 32 KiB measured the same; a page keeps it short on the last record of a range),
#: while the last record was shorter than WALK_AHEAD_RECORD bytes
WALK_AHEAD = 4096
WALK_AHEAD_RECORD = 1024


def _compile_walk():
    numba = _numba()
    if numba is None:
        return None

    @numba.njit(nogil=True, cache=True)
    def walk(a, pos, stop, limit, off, min_size, magic1, magic2, out):  # pragma: no cover - compiled
        n = 0
        # Each record's position comes from the last one's size: a chain of dependent
        # loads, each a cache miss (~150 ns a record on ~400-byte records, measured).
        # Reading one byte of every cache line up to WALK_AHEAD bytes past the record
        # makes loads that depend on nothing, which the CPU runs in parallel; the chain
        # then finds its lines cached (256 MiB of ~400-byte records: 0.09 s -> 0.012 s).
        # Only while records are small: past WALK_AHEAD_RECORD bytes a record has more
        # lines to read than one miss costs (4 KiB records: decoding was 20% slower).
        # Nothing at or past ``limit`` is read.
        touched, touch_end, seen, size = pos - off, min(limit - off, len(a)), 0, 0
        while pos < stop and n < len(out):
            if pos + 8 > limit:
                break
            i = pos - off
            if size < WALK_AHEAD_RECORD:
                ahead = min(i + WALK_AHEAD, touch_end)
                touched = max(touched, i)
                while touched < ahead:
                    seen += a[touched]
                    touched += 64
            size = (np.int64(a[i]) << 24) | (np.int64(a[i + 1]) << 16) | (np.int64(a[i + 2]) << 8) | np.int64(a[i + 3])
            if size >= 1 << 31:
                size -= 1 << 32  # int32, as Java reads it
            magic = (np.int64(a[i + 4]) << 24) | (np.int64(a[i + 5]) << 16) | (np.int64(a[i + 6]) << 8) | np.int64(a[i + 7])
            if (magic != magic1 and magic != magic2) or size < min_size or pos + size > limit:
                break
            out[n] = pos
            n += 1
            pos += size
        return n, pos, seen

    return walk


def _compile_pairs():
    numba = _numba()
    if numba is None:
        return None

    @numba.njit(nogil=True, cache=True)
    def split_pairs(a, starts, ends, kbuf, koffs, vbuf, voffs, moffs):  # pragma: no cover - compiled
        """Per record ``a[starts[r]:ends[r]]``, in one pass that also copies: segments
        end at 0x02 (or the end); empty ones and ones without 0x01 are skipped; the
        name runs to the first 0x01; a name seen before in the record takes the later
        value, at its first place.  Names go to ``kbuf`` (offsets ``koffs``), values to
        ``vbuf`` (``voffs``), pairs per record to ``moffs``; returns (pairs, OR of
        every byte copied) - the caller only validates UTF-8 when bit 7 is set."""
        m = 0
        kd = 0
        vd = 0
        hi = 0
        koffs[0] = 0
        voffs[0] = 0
        moffs[0] = 0
        for r in range(len(starts)):
            first = m
            p = starts[r]
            end = ends[r]
            while p < end:
                k0 = kd
                c = 0
                while p < end:
                    c = a[p]
                    if c == 1 or c == 2:
                        break
                    kbuf[kd] = c
                    hi |= c
                    kd += 1
                    p += 1
                if p >= end or c == 2:  # no 0x01 in the segment (or it is empty)
                    kd = k0
                    p += 1
                    continue
                p += 1  # the 0x01
                v0 = vd
                while p < end:
                    c = a[p]
                    if c == 2:
                        break
                    vbuf[vd] = c
                    hi |= c
                    vd += 1
                    p += 1
                p += 1  # the 0x02 (or past the end)
                ln = kd - k0
                dup = -1
                for j in range(first, m):
                    if koffs[j + 1] - koffs[j] == ln:
                        same = True
                        for b in range(ln):
                            if kbuf[koffs[j] + b] != kbuf[k0 + b]:
                                same = False
                                break
                        if same:
                            dup = j
                            break
                if dup < 0:
                    m += 1
                    koffs[m] = kd
                    voffs[m] = vd
                    continue
                # rare (a batch's UNIQ_KEY): the new value replaces value ``dup`` in
                # place; the values after it move by the difference in length
                kd = k0
                new = vbuf[v0:vd].copy()
                tail = vbuf[voffs[dup + 1] : v0].copy()
                d = voffs[dup]
                for b in range(len(new)):
                    vbuf[d] = new[b]
                    d += 1
                delta = len(new) - (voffs[dup + 1] - voffs[dup])
                for b in range(len(tail)):
                    vbuf[d] = tail[b]
                    d += 1
                for j in range(dup + 1, m + 1):
                    voffs[j] += delta
                vd = d
            moffs[r + 1] = m
        return m, hi

    @numba.njit(nogil=True, cache=True)
    def java_values(a, starts, ends, names, name_offs, first, out, offs, found, hi):  # pragma: no cover - compiled
        """Per record ``a[starts[r]:ends[r]]`` and name ``j`` (``names[name_offs[j] :
        name_offs[j+1]]``): the value Java's ``MessageDecoder.string2messageProperties``
        map holds - segments end at 0x02 (or the end), the name runs to the first
        0x01, pairs with an empty name or value are skipped, a later pair wins -
        copied into row ``j`` of ``out`` as it is found (the bytes just read, still in
        the cache: a pass per name afterwards read each record from memory again),
        with Arrow offsets in ``offs[j]``, ``found[j, r]`` where the map has one, and
        in ``hi[j]`` the OR of every byte copied (UTF-8 needs checking only where bit
        7 is set).  A row of ``out`` needs room for all the properties' bytes.
        ``first[c]``: bit ``j`` set where name ``j`` starts with byte ``c``, so that a
        pair whose name is none of them (WAIT, a user's own) is passed over at its
        first byte (121 -> 94 ns a record in this loop on a generated store's properties)."""
        k = len(name_offs) - 1
        d = np.zeros(k, np.int64)
        for j in range(k):
            offs[j, 0] = 0
        for r in range(len(starts)):
            p = starts[r]
            end = ends[r]
            while p < end:
                seg = p
                c = a[p]
                while c != 1 and c != 2:  # the name, up to its 0x01 (or the segment's end)
                    p += 1
                    if p >= end:
                        break
                    c = a[p]
                if p >= end:
                    break
                if c == 2:  # a segment without 0x01: no pair
                    p += 1
                    continue
                one = p
                q = one + 1
                while q < end and a[q] != 2:  # the value, up to the segment's end
                    q += 1
                ln = one - seg
                cand = first[a[seg]] if ln > 0 and q > one + 1 else 0
                if cand != 0:
                    for j in range(k):
                        if ((cand >> j) & 1) == 0:
                            continue
                        n0 = name_offs[j]
                        if name_offs[j + 1] - n0 != ln:
                            continue
                        same = True
                        for b in range(1, ln):  # its first byte is name j's (first)
                            if a[seg + b] != names[n0 + b]:
                                same = False
                                break
                        if same:
                            if found[j, r]:  # a later pair wins: its value replaces the one copied
                                d[j] = offs[j, r]
                            found[j, r] = True
                            t = d[j]
                            h = hi[j]
                            for b in range(one + 1, q):
                                v = a[b]
                                out[j, t] = v
                                h |= v
                                t += 1
                            hi[j] = h
                            d[j] = t
                            break
                p = q + 1
            for j in range(k):
                offs[j, r + 1] = d[j]

    return split_pairs, java_values


# The index loops are plain functions here, compiled by _compile_index when the loops are
# loaded and run as they are (interpreted) on inputs under INTERPRETED_BELOW: one source
# either way, and a small store's verify does not load numba for a few hundred entries.
# Their arithmetic is the same in both: int64 (the hash masked to 32 bits), never a
# uint8 or uint32 that numpy would wrap (or promote a Python int to) when interpreted.

#: up to this many elements in all, a process runs the index loops interpreted (see above):
#: ~0.5 µs an element interpreted, so at most ~0.07 s, where loading numba costs ~0.5 s
INTERPRETED_BELOW = 1 << 17
#: the same for re-dispatch's queue check (:func:`in_own_queue`), ~10 µs a record interpreted
INTERPRETED_QUEUE_CHECK_BELOW = 4096


def _index_chains_loop(slots, prev, count, owner, cycles):  # pragma: no cover - compiled
    """Follow every slot's chain (Java ``IndexFile.selectPhyOffset``: slot value,
    then ``prevIndex`` while it points at an entry): ``owner[e]`` = the first slot
    whose chain reaches entry ``e``.  A chain that comes back to an entry it passed
    is a cycle: its (slot, entry) pairs go to ``cycles`` (as many as fit); returns
    their number.  A chain that runs into another slot's entries stops there."""
    nc = 0
    for s in range(len(slots)):
        nxt = slots[s]
        while 0 < nxt < count:
            o = owner[nxt]
            if o == s:
                if nc < len(cycles):
                    cycles[nc, 0] = s
                    cycles[nc, 1] = nxt
                nc += 1
                break
            if o >= 0:
                break
            owner[nxt] = s
            nxt = prev[nxt]
    return nc


def _merge_find_loop(a, q, out):  # pragma: no cover - compiled
    """For each value of ``q`` (ascending) its index in ``a`` (ascending), -1 when
    absent: one merge of the two, linear."""
    r = 0
    n = len(a)
    for i in range(len(q)):
        v = q[i]
        while r < n and a[r] < v:
            r += 1
        out[i] = r if r < n and a[r] == v else -1


def _join_keys_loop(row_of, pair_lo, pair_hi, pair_hash, ent_hash, ent_reached, match_out, findable):  # pragma: no cover - compiled
    """Index entries (their record's row in ``row_of``, -1: none there) against their
    records' key hashes (``pair_hash[pair_lo[r]:pair_hi[r]]``): whether each entry's
    hash is one of its record's, and, for entries a chain reaches, those keys marked
    ``findable``."""
    for i in range(len(row_of)):
        r = row_of[i]
        m = False
        if r >= 0:
            for j in range(pair_lo[r], pair_hi[r]):
                if pair_hash[j] == ent_hash[i]:
                    m = True
                    if ent_reached[i]:
                        findable[j] = True
        match_out[i] = m


def _ascii_hashes_loop(data, offs, out):  # pragma: no cover - compiled
    """Java ``String.hashCode`` (32-bit wrap) of each ASCII string
    ``data[offs[i]:offs[i+1]]`` (one byte is one UTF-16 code unit)."""
    for i in range(len(out)):
        h = np.int64(0)
        for b in range(offs[i], offs[i + 1]):
            h = (h * 31 + np.int64(data[b])) & 0xFFFFFFFF
        out[i] = h


def _compile_index():
    numba = _numba()
    if numba is None:
        return None
    jit = numba.njit(nogil=True, cache=True)
    return jit(_index_chains_loop), jit(_merge_find_loop), jit(_join_keys_loop), jit(_ascii_hashes_loop)


#: elements each loop has run interpreted in this process (see _loop_for)
_INTERPRETED: dict[str, int] = {}


def _loop_for(compiled_name: str, plain, size: int, below: int | None = None):
    """``plain`` itself while the loops are not loaded and this loop has run fewer than
    ``below`` (default :data:`INTERPRETED_BELOW`) elements interpreted in this process,
    this call's included; else the compiled loop named ``compiled_name`` (loaded now if
    need be).  The budget is the process's, not the call's: a large store calls these
    loops many times on small pieces, and interpreted they would take it all."""
    done = _INTERPRETED.get(compiled_name, 0)
    if not _LOADED and done + size < (INTERPRETED_BELOW if below is None else below):
        _INTERPRETED[compiled_name] = done + size
        return plain
    _load()
    fn = globals()[compiled_name]
    if fn is None:
        raise ImportError(UNAVAILABLE_BECAUSE)
    return fn


def _in_own_queue_loop(a, rel, owner, topics, topic_lens, queue_ids, base, prefix_sizes, sys_flag_at, magic_at, queue_id_at, phys_at,
                       born_v6, store_v6, v2_last, lo, hi, out):  # pragma: no cover - compiled
    """For records at file positions ``rel[lo:hi]`` (``a[0]`` is log offset ``base``),
    each an entry of queue ``owner[i]``: whether its own topic (length and bytes) and
    queue id are that queue's and its physicalOffset field says where it is."""
    n = len(a)
    for i in range(lo, hi):
        r = rel[i]
        w = owner[i]
        out[i] = False
        if r < 0 or r + phys_at + 8 > n:
            continue
        flags = a[r + sys_flag_at + 3]
        k = (1 if flags & born_v6 else 0) + (2 if flags & store_v6 else 0)
        prefix = prefix_sizes[k]
        if r + prefix > n:
            continue
        v2 = a[r + magic_at + 3] == v2_last
        b = r + prefix - 4
        body = (np.int64(a[b]) << 24) | (np.int64(a[b + 1]) << 16) | (np.int64(a[b + 2]) << 8) | np.int64(a[b + 3])
        if body >= 1 << 31:
            body -= 1 << 32
        len_at = r + prefix + body
        tlen = topic_lens[w]
        if len_at < 0 or len_at + 2 + tlen > n:
            continue
        if v2:
            topic_len = (np.int64(a[len_at]) << 8) | np.int64(a[len_at + 1])
            if topic_len >= 1 << 15:
                topic_len -= 1 << 16
            at = len_at + 2
        else:
            topic_len = np.int64(a[len_at])
            if topic_len >= 128:
                topic_len -= 256
            at = len_at + 1
        if topic_len != tlen:
            continue
        q = r + queue_id_at
        qid = (np.int64(a[q]) << 24) | (np.int64(a[q + 1]) << 16) | (np.int64(a[q + 2]) << 8) | np.int64(a[q + 3])
        if qid >= 1 << 31:
            qid -= 1 << 32
        if qid != queue_ids[w]:
            continue
        phys = np.int64(0)
        for j in range(8):
            phys = (phys << 8) | np.int64(a[r + phys_at + j])
        if phys != base + r:
            continue
        same = True
        for j in range(tlen):
            if a[at + j] != topics[w, j]:
                same = False
                break
        out[i] = same


def _compile_queue_check():
    numba = _numba()
    if numba is None:
        return None
    return numba.njit(nogil=True, cache=True)(_in_own_queue_loop)


_KERNEL = _CRCS = _ACCEPT = _INDEX_CHAINS = _MERGE_FIND = _JOIN_KEYS = _ASCII_HASHES = _WALK = _IN_OWN_QUEUE = None
_PAIRS = _JAVA_VALUES = None
_LOADED = False
_LOAD_LOCK = threading.Lock()


def _load() -> None:
    """Import numba and build the loops (read back from numba's on-disk cache) on the
    first call of one, not with this module: importing numba and loading its first
    cached loop cost ~0.5 s, which a command on a small store, whose reads take the
    record-by-record paths, never needs to pay.  Sets :data:`AVAILABLE` and
    :data:`UNAVAILABLE_BECAUSE`."""
    global _LOADED, _CRC_EXT, _MEMCPY_EXT, _KERNEL, _CRCS, _ACCEPT, _INDEX_CHAINS, _MERGE_FIND, _JOIN_KEYS, _ASCII_HASHES, _WALK, _IN_OWN_QUEUE
    global _PAIRS, _JAVA_VALUES, AVAILABLE, UNAVAILABLE_BECAUSE
    if _LOADED:
        return
    with _LOAD_LOCK:
        if _LOADED:
            return
        _CRC_EXT, _MEMCPY_EXT = (_external_functions() if _numba() is not None else None) or (None, None)
        _KERNEL, _CRCS, _ACCEPT = _compile() or (None, None, None)
        _INDEX_CHAINS, _MERGE_FIND, _JOIN_KEYS, _ASCII_HASHES = _compile_index() or (None, None, None, None)
        _WALK = _compile_walk()
        _IN_OWN_QUEUE = _compile_queue_check()
        _PAIRS, _JAVA_VALUES = _compile_pairs() or (None, None)
        #: whether the compiled loops are built (else the functions here return None)
        AVAILABLE = _KERNEL is not None and _WALK is not None and _PAIRS is not None and _INDEX_CHAINS is not None and _IN_OWN_QUEUE is not None
        #: why :data:`AVAILABLE` is False ("" when it is True)
        UNAVAILABLE_BECAUSE = (
            "" if AVAILABLE else "numba cannot be imported" if _numba() is None else "isal's crc32_gzip_refl cannot be loaded" if _CRC_EXT is None else "a loop failed to compile"
        )
        _LOADED = True


def __getattr__(name: str):
    """:data:`AVAILABLE` and :data:`UNAVAILABLE_BECAUSE`, known once the loops are loaded
    (PEP 562: asking for either loads them)."""
    if name in ("AVAILABLE", "UNAVAILABLE_BECAUSE"):
        _load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_WORKERS = max(1, min(2, os.cpu_count() or 1))
#: below this many body bytes one thread does it all (thread hand-off costs more)
_SPLIT_MIN_BYTES = 4 << 20
#: below this many properties bytes one thread splits them all
_SPLIT_MIN_PROPERTY_BYTES = 256 << 10
#: bytes per piece of :func:`walk_pieces` (32 MiB: ~0.1 ms of thread hand-off per ~10 ms walk)
WALK_PIECE = 32 << 20
_POOL: ThreadPoolExecutor | None = None
_WALKER: ThreadPoolExecutor | None = None


def set_threads(n: int) -> int:
    """How many threads the loops here may use (1 or 2; default: 2 when the machine
    has two cores); returns the number before, to put back.  Spark's readers set 1:
    Spark already runs a task per core, and the threads of two workers sharing two
    cores cost ~30% (measured on local[2])."""
    global _WORKERS
    before, _WORKERS = _WORKERS, max(1, min(2, int(n)))
    return before


def threads() -> int:
    """How many threads the loops here may use now (:func:`set_threads`)."""
    return _WORKERS


def _pool() -> ThreadPoolExecutor:
    """The thread that takes the other half of a large batch."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rmqlab-kernel")
    return _POOL


def _walker() -> ThreadPoolExecutor:
    """The walk's own thread (the kernel pool's worker is busy with halves of batches)."""
    global _WALKER
    if _WALKER is None:
        _WALKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rmqlab-walk")
    return _WALKER


def bodies_and_crcs(src: np.ndarray, starts: np.ndarray, lens: np.ndarray, with_crc: bool = True) -> tuple[pa.Array, np.ndarray | None] | None:
    """The slices ``src[starts[i] : starts[i] + lens[i]]`` as an Arrow ``binary``
    array, and the CRC-32 (zlib's, unsigned) of each (None without ``with_crc``), in
    one compiled pass (large batches: half on a worker thread, half on the calling
    thread); None when the kernel is not available.  ``src`` is a uint8 array; the
    slices must lie in it and total less than 2 GiB (Arrow int32 offsets)."""
    _load()
    if _KERNEL is None:
        return None
    n = len(starts)
    src, starts, ends = _checked_slices(src, starts, np.asarray(starts) + np.asarray(lens))
    lens = ends - starts
    offs = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offs[1:])
    total = int(offs[-1])
    if total >= 1 << 31:
        raise ValueError("more than 2 GiB of slices: Arrow binary offsets are int32")
    dst = np.empty(total, dtype=np.uint8)
    crcs = np.zeros(n, dtype=np.int64)
    if _WORKERS > 1 and total >= _SPLIT_MIN_BYTES:
        cut = int(np.searchsorted(offs, total // 2))  # halves by bytes, not by rows
        other = _pool().submit(_KERNEL, src, starts, lens, dst, offs, crcs, cut, n, with_crc)
        _KERNEL(src, starts, lens, dst, offs, crcs, 0, cut, with_crc)  # releases the GIL: the worker runs meanwhile
        other.result()
    else:
        _KERNEL(src, starts, lens, dst, offs, crcs, 0, n, with_crc)
    arr = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offs.astype(np.int32)), pa.py_buffer(dst)])
    return arr, crcs if with_crc else None


def crc32_slices(src: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray | None:
    """The CRC-32 (zlib's, unsigned, int64) of every ``src[starts[i] : starts[i] +
    lens[i]]`` in one compiled loop, or None when it is not available.  ``src`` is a
    uint8 array; the slices must lie in it."""
    _load()
    if _CRCS is None:
        return None
    src, starts, ends = _checked_slices(src, starts, np.asarray(starts) + np.asarray(lens))
    lens = ends - starts
    crcs = np.empty(len(starts), dtype=np.int64)
    _CRCS(src, starts, lens, crcs)
    return crcs


def accept(a: np.ndarray, s: np.ndarray, size: np.ndarray, lo: int, hi: int, check_crc: bool, at: np.ndarray, len_body_at: np.ndarray,
           magic: np.ndarray, sched_topic: np.ndarray) -> tuple[int, list[int]] | None:
    """Java's acceptance rule (``CommitLog.checkMessageAndReturnSize``, as
    :func:`rmqlab.scan.acceptance._validate` applies it) over the records ``s[lo:hi]``
    of ``a`` in one compiled pass, the body CRCs by ISA-L in place: (the index of the
    first record that fails, or -1; the indices of the SCHEDULE_TOPIC_XXXX records
    before it), or None when the loops are not there.  The records must chain and fit
    ``a`` (the scan's walk found them so)."""
    _load()
    if _ACCEPT is None:
        return None
    s, size = np.ascontiguousarray(s, np.int64), np.ascontiguousarray(size, np.int64)
    if hi > lo and (int(s[lo:hi].min()) < 0 or int((s[lo:hi] + size[lo:hi]).max()) > len(a)):
        raise ValueError("a record past the buffer")  # the loop does not check: it would read outside
    sched = np.empty(1024, np.int64)
    while True:
        bad, ns = _ACCEPT(np.ascontiguousarray(a, np.uint8), s, size, int(lo), int(hi), bool(check_crc), at, len_body_at, magic, sched_topic, sched)
        if ns <= len(sched):
            return int(bad), sched[:ns].tolist()
        sched = np.empty(ns, np.int64)  # more schedule records than room: once more with room for all


def _checked_slices(a: np.ndarray, starts, ends) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``a``, ``starts`` and ``ends`` as the compiled loops take them (contiguous uint8
    and int64 arrays), once every slice ``a[starts[i]:ends[i]]`` is checked to lie in
    ``a`` (the loops do not check: a bad slice would read outside the buffer)."""
    a = np.ascontiguousarray(a, dtype=np.uint8)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    if len(starts) and (int(starts.min()) < 0 or int(ends.max()) > len(a) or bool((ends < starts).any())):
        raise ValueError("slices reach outside the buffer")
    return a, starts, ends


def java_property_values(a: np.ndarray, starts: np.ndarray, ends: np.ndarray, names: Sequence[str]) -> list[tuple[pa.Array, bool]] | None:
    """For each name, the value Java's properties map holds in every record's
    properties ``a[starts[r]:ends[r]]`` (see ``java_values`` above, which copies them as it finds them; what
    :func:`rmqlab.format.properties.to_java_map` gives), as an Arrow ``binary`` array
    with nulls where the map has none, and whether any of its bytes is >= 0x80 (so
    that UTF-8 needs checking); None when not compiled."""
    _load()
    if _JAVA_VALUES is None:
        return None
    if len(names) > 63:  # first's bits: 63 names a call
        return java_property_values(a, starts, ends, names[:63]) + java_property_values(a, starts, ends, names[63:])
    a, starts, ends = _checked_slices(a, starts, ends)
    n = len(starts)
    raw = [name.encode("utf-8") for name in names]
    name_buf = np.frombuffer(b"".join(raw) or b"\0", np.uint8)
    name_offs = np.zeros(len(raw) + 1, np.int64)
    np.cumsum([len(r) for r in raw], out=name_offs[1:])
    first = np.zeros(256, np.int64)  # bit j of first[c]: name j starts with byte c
    for j, r in enumerate(raw):
        if r:
            first[r[0]] |= 1 << j
    room = int((ends - starts).sum())  # no record's value is longer than its properties
    if room >= 1 << 31:
        raise ValueError("more than 2 GiB of properties in one batch: Arrow binary offsets are int32")
    values = np.empty((len(raw), room), np.uint8)  # rows only written as far as their values go
    offs = np.empty((len(raw), n + 1), np.int32)
    found = np.zeros((len(raw), n), np.bool_)
    hi = np.zeros(len(raw), np.uint8)
    _JAVA_VALUES(a, starts, ends, name_buf, name_offs, first, values, offs, found, hi)
    out = []
    for j in range(len(raw)):
        present = int(np.count_nonzero(found[j]))
        if present == 0:
            out.append((pa.nulls(n, pa.binary()), False))
            continue
        validity = None if present == n else pa.py_buffer(np.packbits(found[j], bitorder="little"))
        data = values[j, : int(offs[j, n])].copy()  # its own size: the batch must not hold a row of room per name
        out.append((pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offs[j]), pa.py_buffer(data)], null_count=n - present), bool(hi[j] & 0x80)))
    return out


def walk(a: np.ndarray, pos: int, stop: int, limit: int, off: int, min_size: int, magics: tuple[int, int]) -> tuple[np.ndarray, int] | None:
    """Java's record loop, compiled: the positions of the message records from file
    position ``pos`` while ``< stop`` (``a[0]`` is file position ``off``; nothing
    at or past ``limit`` is read), stopping at anything else (BLANK, zeros, damage)
    for the caller to look at; and where it stopped.  None when not compiled."""
    _load()
    if _WALK is None:
        return None
    out = np.empty(max(0, (min(stop, limit) - pos)) // min_size + 1, dtype=np.int64)
    n, end, _ = _WALK(a, pos, stop, limit, off, min_size, magics[0], magics[1], out)
    return out[:n], int(end)


def walk_pieces(a: np.ndarray, pos: int, stop: int, limit: int, off: int, min_size: int, magics: tuple[int, int], piece: int | None = None):
    """:func:`walk` from ``pos`` to ``stop`` in pieces of about ``piece`` bytes, as a
    generator of ``(positions, end)``, or None when not compiled.  While the caller
    works on one piece, the next is walked on a thread of its own: a walk is the first
    touch of the pages, and the page faults are then served on the other core.  A
    piece whose ``end`` falls short of its bound (anything but a message record there)
    is the last.  Closing the generator waits for a walk in flight, so that the
    caller may unmap the buffer afterwards."""
    _load()
    if _WALK is None:
        return None
    piece = piece or WALK_PIECE

    def one(p: int):
        return walk(a, p, min(stop, p + piece), limit, off, min_size, magics)

    def pieces():
        p = pos
        got = one(p)
        ahead = None
        try:
            while True:
                positions, end = got
                more = min(stop, p + piece) <= end < stop
                ahead = _walker().submit(one, end) if more and _WORKERS > 1 else None
                yield positions, end
                if not more:
                    return
                p = end
                got = ahead.result() if ahead is not None else one(p)
                ahead = None
        finally:
            if ahead is not None:
                ahead.result()

    return pieces()


def index_chains(slots: np.ndarray, prev: np.ndarray, count: int, max_cycles: int = 100) -> tuple[np.ndarray, np.ndarray, int]:
    """Every slot chain of one index file walked once, compiled: (``owner``: for each
    entry the slot whose chain reaches it, -1 when none does (int32); the (slot, entry) pairs
    where a chain returns to an entry it passed, at most ``max_cycles``; how many
    cycles there are).  ``slots`` (int64) is the slot table, ``prev`` (int32) every
    entry's ``prevIndex``; entries at or past ``count`` are never followed."""
    loop = _loop_for("_INDEX_CHAINS", _index_chains_loop, len(slots) + len(prev))
    owner = np.full(len(prev), -1, np.int32)
    cycles = np.zeros((max_cycles, 2), np.int64)
    nc = loop(np.ascontiguousarray(slots, np.int64), np.ascontiguousarray(prev, np.int32), int(min(count, len(prev))), owner, cycles)
    return owner, cycles[: min(nc, max_cycles)], int(nc)


def ascii_hashes(data: np.ndarray, offs: np.ndarray, plain=None) -> np.ndarray:
    """Java ``String.hashCode`` (uint32) of each ASCII string ``data[offs[i]:offs[i+1]]``
    (an Arrow string array's data and int64 offsets), in one compiled pass.  ``plain``
    (``plain(data, offs, out)``) is what runs while the loops are not loaded, instead of
    the loop interpreted (~1 µs a byte): :func:`rmqlab.scan.hashes.java_string_hashes_arrow`
    gives numpy's vectorised hash."""
    loop = _loop_for("_ASCII_HASHES", plain or _ascii_hashes_loop, len(data))
    out = np.empty(len(offs) - 1, np.uint32)
    loop(np.ascontiguousarray(data, np.uint8), np.ascontiguousarray(offs, np.int64), out)
    return out


def merge_find(a: np.ndarray, q: np.ndarray) -> np.ndarray:
    """For each value of ``q`` its index in ``a`` (-1 when absent); both ascending
    int64.  Linear: a join of two sorted columns without a search per value."""
    loop = _loop_for("_MERGE_FIND", _merge_find_loop, len(a) + len(q))
    out = np.empty(len(q), np.int64)
    loop(np.ascontiguousarray(a, np.int64), np.ascontiguousarray(q, np.int64), out)
    return out


def in_own_queue(a: np.ndarray, rel: np.ndarray, owner: np.ndarray, topics: np.ndarray, topic_lens: np.ndarray, queue_ids: np.ndarray,
                 base: int, prefix_sizes: np.ndarray, fields: dict) -> np.ndarray:
    """For the records at positions ``rel`` of one commitlog file (``a``, its bytes; ``base``,
    its first offset), each the target of an entry of queue ``owner[i]``: True where the
    record's topic and queue id are that queue's (``topics[w, :topic_lens[w]]``,
    ``queue_ids[w]``) and its physicalOffset field is where it sits.  ``fields``: where
    sysFlag, magicCode, queueId and physicalOffset sit and the flag bits and V2 magic's
    last byte.  Compiled; halves on two threads for many records (their pages are often
    not mapped yet in this process: the faults are served on both cores)."""
    n = len(rel)
    loop = _loop_for("_IN_OWN_QUEUE", _in_own_queue_loop, n, below=INTERPRETED_QUEUE_CHECK_BELOW)
    a = np.ascontiguousarray(a, np.uint8)
    rel, owner = np.ascontiguousarray(rel, np.int64), np.ascontiguousarray(owner, np.int64)
    out = np.zeros(len(rel), np.bool_)
    f = fields
    args = (a, rel, owner, np.ascontiguousarray(topics, np.uint8), np.ascontiguousarray(topic_lens, np.int64), np.ascontiguousarray(queue_ids, np.int64),
            int(base), np.ascontiguousarray(prefix_sizes, np.int64), f["sys_flag_at"], f["magic_at"], f["queue_id_at"], f["phys_at"],
            f["born_v6"], f["store_v6"], f["v2_last"])
    if _WORKERS > 1 and n >= 1 << 16:  # (past the interpreted budget: compiled)
        other = _pool().submit(loop, *args, n // 2, n, out)
        loop(*args, 0, n // 2, out)
        other.result()
    else:
        loop(*args, 0, n, out)
    return out


def join_keys(rec_phy: np.ndarray, pair_row: np.ndarray, pair_hash: np.ndarray, ent_phy: np.ndarray, ent_hash: np.ndarray, ent_reached: np.ndarray):
    """Index entries against the records they point at, in one merge (``rec_phy`` and
    ``ent_phy`` ascending; ``pair_row`` ascending, the record row of each key hash in
    ``pair_hash``): (each entry's record row, -1 when no record starts there; whether
    the entry's hash is a key of that record; for each key, whether an entry a chain
    reaches holds it)."""
    loop = _loop_for("_JOIN_KEYS", _join_keys_loop, len(ent_phy) + len(pair_hash))
    rows = np.arange(len(rec_phy))
    lo = np.searchsorted(pair_row, rows, "left")
    hi = np.searchsorted(pair_row, rows, "right")
    row_out = merge_find(rec_phy, ent_phy)
    match = np.empty(len(ent_phy), np.bool_)
    findable = np.zeros(len(pair_hash), np.bool_)
    loop(row_out, lo, hi, np.ascontiguousarray(pair_hash, np.int64), np.ascontiguousarray(ent_hash, np.int64),
         np.ascontiguousarray(ent_reached, np.bool_), match, findable)
    return row_out, match, findable


def property_pairs(a: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, pa.Array, pa.Array, bool] | None:
    """The properties of every record, ``a[starts[r]:ends[r]]``, split by the rules of
    :func:`rmqlab.format.properties.decode_pairs` + ``to_ordered_dict`` in one compiled
    pass: (pairs per record as int32 map offsets, names, values as binary arrays,
    whether any byte is >= 0x80 so that UTF-8 needs checking), or None when not
    compiled.  Many bytes: half the records on a worker thread, half on the calling
    one, the two outputs joined after."""
    _load()
    if _PAIRS is None:
        return None
    a, starts, ends = _checked_slices(a, starts, ends)
    n = len(starts)
    lens = ends - starts
    total = int(lens.sum()) if n else 0
    if total >= 1 << 31:
        raise ValueError("more than 2 GiB of properties: Arrow binary offsets are int32")
    if _WORKERS > 1 and total >= _SPLIT_MIN_PROPERTY_BYTES and n > 1:
        cum = np.cumsum(lens)
        cut = min(n - 1, max(1, int(np.searchsorted(cum, total // 2)) + 1))  # halves by bytes
        head = int(cum[cut - 1])
        other = _pool().submit(_split_part, a, starts[cut:], ends[cut:], total - head)
        first = _split_part(a, starts[:cut], ends[:cut], head)  # the worker runs meanwhile
        (m0, hi0, k0, ko0, v0, vo0, mo0), (m1, hi1, k1, ko1, v1, vo1, mo1) = first, other.result()
        m, hi = m0 + m1, hi0 | hi1
        kbuf = np.concatenate((k0[: ko0[m0]], k1[: ko1[m1]]))
        vbuf = np.concatenate((v0[: vo0[m0]], v1[: vo1[m1]]))
        koffs = np.concatenate((ko0[: m0 + 1], ko1[1 : m1 + 1] + ko0[m0]))
        voffs = np.concatenate((vo0[: m0 + 1], vo1[1 : m1 + 1] + vo0[m0]))
        moffs = np.concatenate((mo0, mo1[1:] + m0))
    else:
        m, hi, kbuf, koffs, vbuf, voffs, moffs = _split_part(a, starts, ends, total)
    out = [
        pa.Array.from_buffers(pa.binary(), m, [None, pa.py_buffer(offs[: m + 1]), pa.py_buffer(buf[: int(offs[m])])])
        for buf, offs in ((kbuf, koffs), (vbuf, voffs))
    ]
    return moffs, out[0], out[1], bool(hi & 0x80)


def _split_part(a: np.ndarray, starts: np.ndarray, ends: np.ndarray, total: int):
    # upper bounds: names and values are parts of the bytes; every pair holds a 0x01
    kbuf = np.empty(total, np.uint8)
    vbuf = np.empty(total, np.uint8)
    koffs = np.empty(total + 1, np.int32)
    voffs = np.empty(total + 1, np.int32)
    moffs = np.empty(len(starts) + 1, np.int32)
    m, hi = _PAIRS(a, starts, ends, kbuf, koffs, vbuf, voffs, moffs)
    return m, hi, kbuf, koffs, vbuf, voffs, moffs


__all__ = ["AVAILABLE", "UNAVAILABLE_BECAUSE", "accept", "bodies_and_crcs", "crc32_slices", "ascii_hashes", "in_own_queue", "index_chains", "join_keys", "merge_find", "java_property_values", "property_pairs", "set_threads", "threads", "walk", "walk_pieces"]
