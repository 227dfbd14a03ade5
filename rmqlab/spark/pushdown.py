"""Which bytes of the log a pushed-down query can need, found from what the store already
knows, before any record is read (the commitlog source's ``pushdown=true``).

A query's filters (:class:`~rmqlab.spark._source.Pushed`) narrow the read in
these ways, each safe on its own and combined by intersection:

``physical_offset`` ranges
    splits that start past the range, or end before it, are not read.
``msg_id`` equality
    an offset msgId holds its record's physical offset (Java
    ``MessageDecoder.decodeMessageId``, what ``viewMessageById`` reads): only the record
    there is read.
``uniq_key`` / ``keys`` equality, with ``topic`` equality
    RocketMQ's index files (Java ``IndexService.queryOffset``: the hash slot of
    ``topic#key``, then the entries' chain) give the records' offsets; the log past what
    the index files cover is scanned (``IndexService.buildIndex`` has not reached it),
    and so is the range of an index file whose chain for the key ends in a way only
    damage makes (a ``prevIndex`` out of range or looping, a negative ``timeDiff``), and
    the log between an index file that is not full and the next one (what an abnormal
    shutdown's ``IndexService.load`` deleted and dispatch never indexed again).
``topic`` equality / ``IN`` (and ``queue_id``), with ``pushdownQueues=true``
    the rows RocketMQ's consume queues serve, which are the full scan's but for the
    transaction records no queue holds (PREPARED and ROLLBACK types get no unit,
    ``CommitLog.DefaultAppendMessageCallback``; brokers since 4.x write neither under a
    user's topic, but a store written through ``DefaultMessageStore`` may hold them): the topic's consume queues (Java ``ConsumeQueue``: each unit a record's offset and
    size) give its records' positions; the log past the end of the queue that ends
    first is scanned (dispatch may not have reached it), and so is the log before a
    queue's first unit when earlier ones are gone (queue offset > 0).  A queue with a
    unit no dispatch writes (size ≤ 0, offsets not rising), a queue directory missing
    below the highest one or below ``topics.json``'s queue count, RocksDB or batch
    queues: the topic is scanned, and the plan says so.  Where a file is more than half
    the topic's records, the file's range is scanned with the topic filtered in the
    decoder (no faster to read record by record).
``store_timestamp`` ranges
    each commitlog file's first record's store time (Java
    ``CommitLog.pickupStoreTimestamp``, 8 bytes read per file): RocketMQ stamps records
    under the put lock, so in log order, and a file holds times from its first record's
    to the next file's first; files outside the window are not read.  When the files'
    first times do not rise (a clock stepped back), no file is left out, and the plan
    says so.

What the indexes cannot answer is read by scanning, and the plan's ``notes`` say where
it fell back and why; a pushed read returns the rows the full scan returns (Spark also
checks every filter again).  Limits, as RocketMQ's own lookups have them: records
RocketMQ does not index or queue (a ROLLBACK transaction record,
``IndexService.buildIndex``; PREPARED and ROLLBACK ones get no queue unit,
``CommitLog.DefaultAppendMessageCallback``; brokers since 4.x write neither under a
user's topic) are not found through the indexes, an index file removed by hand from the
middle of a store hides what it held, and (``pushdownQueues``) so does a topic's highest
queue directory removed from a store without ``config/topics.json``.  Keys are looked up only
with the topic given (the index is on ``topic#key``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..files.extent import data_end
from ..format.indexfile import INVALID_INDEX, index_key
from ..format.layout import field_at
from ..rules import COMMITLOG_DIR, INDEX_DIR

#: the source's columns of the properties RocketMQ indexes (``IndexService.buildIndex``),
#: whose equality the index files answer: column → property name
KEY_COLUMNS = {"keys": "KEYS", "uniq_key": "UNIQ_KEY"}
#: positions per split of records read one by one (a task each)
POSITIONS_PER_SPLIT = 1 << 16
#: what can be read of a record at a position before knowing its size (planning's byte count)
_HEADER = 8


@dataclass(frozen=True)
class ReadPlan:
    """What a pushed query reads: the splits, what narrowed them, where it fell back."""

    splits: list
    #: what narrowed the read: "offsets", "msgId", "index files", "file times"
    used: tuple = ()
    #: where the plan fell back to scanning, and why
    notes: tuple = ()
    #: bytes of the log the splits read (ranges whole; records at positions by their size)
    read_bytes: int = 0
    #: bytes of the log's files
    log_bytes: int = 0

    def describe(self) -> str:
        share = f"{self.read_bytes:,} of {self.log_bytes:,} bytes ({100 * self.read_bytes / max(1, self.log_bytes):.3g}%)"
        return "; ".join([f"read {share} in {len(self.splits)} split(s) using {', '.join(self.used) or 'nothing'}", *self.notes])


def plan(splits: list, pushed, path: str, *, local: bool, dledger: bool, queues: bool = False) -> ReadPlan:
    """The splits of ``splits`` (a whole-log plan, :func:`plan_splits`) a query with
    ``pushed`` filters needs, narrowed as the module docs say.  ``local``: the store is
    on a local filesystem (index files and records at positions are read only there);
    ``dledger``: the log is DLedger's (offsets alone narrow it); ``queues``: a topic's
    consume queues may narrow its read (the option ``pushdownQueues``: what they cannot
    give is said in the module docs)."""
    files = _files(splits)
    log_bytes = sum(size for _, _, size in files.values())
    used, notes = [], []
    kept = list(splits)
    if local and not dledger:
        # never-written bytes at a file's end (the pre-allocated file) hold no record
        ends = {b: data_end(uri.removeprefix("file://"), size) for b, (uri, _, size) in files.items()}
        kept = [replace(s, stop=min(s.stop, ends[s.file_base])) for s in kept if s.start < ends[s.file_base]]

    lo, hi = pushed.bounds("physical_offset")
    if lo is not None or hi is not None:
        # a split owns the records that start in it: one past the range holds none of it
        kept = [s for s in kept if (lo is None or s.file_base + s.stop > lo) and (hi is None or s.file_base + s.start <= hi)]
        used.append("offsets")

    tlo, thi = pushed.bounds("store_timestamp")
    if (tlo is not None or thi is not None) and not dledger:
        windows, why = file_time_windows(files, splits[0].fs if splits else ())
        if why:
            notes.append(why)
        else:
            kept = [s for s in kept if _overlaps(windows[s.file_base], tlo, thi)]
            used.append("file times")

    targets, how, said = None, None, []
    msg_ids = pushed.value_set("msg_id")
    if msg_ids is not None:
        targets, how = (_msg_id_offsets(msg_ids), []), "msgId"
    elif local and not dledger:
        targets, how, said = _key_targets(pushed, path, files)
        if targets is None and not said and queues and pushed.value_set("topic"):
            targets, how, said = _topic_targets(pushed, path, files)
    elif any(pushed.value_set(c) is not None for c in KEY_COLUMNS):
        said = ["keys: the index files are read only on a local store; scanning"]
    notes += said
    if targets is None:
        return ReadPlan(kept, tuple(used), tuple(notes), sum(s.stop - s.start for s in kept), log_bytes)
    offsets, ranges = targets
    used.append(how)
    out = _narrow(kept, files, offsets, ranges, local and not dledger)
    return ReadPlan(out, tuple(used), tuple(notes), _bytes_read(out), log_bytes)


def _files(splits) -> dict:
    """file_base → (uri, display name, size), from a whole-log plan."""
    return {s.file_base: (s.uri, s.file, s.file_size) for s in splits}


def _overlaps(window: tuple, lo, hi) -> bool:
    a, b = window
    return (lo is None or b is None or b >= lo) and (hi is None or a is None or a <= hi)


# -- store time per file -----------------------------------------------------------------
def file_time_windows(files: dict, fs_settings: tuple = ()) -> tuple[dict, str | None]:
    """file_base → (lowest, highest) store time its records can have (None: unbounded),
    from each file's first record (Java ``CommitLog.pickupStoreTimestamp``), and None or
    why the times cannot be trusted to narrow a read."""
    from ..format.layout import STORE_TIMESTAMP_AT, store_timestamp_at
    from ..format.commitlog import MESSAGE_MAGICS
    from . import _paths

    firsts = {}
    for base, (uri, shown, size) in sorted(files.items()):
        fs, inner = _paths.filesystem(uri, fs_settings)
        need = min(size, max(STORE_TIMESTAMP_AT) + 8)
        with _paths.storage(shown):
            with fs.open_input_file(inner) as fh:
                head = bytes(fh.read_at(need, 0))
        magic = int.from_bytes(head[4:8], "big", signed=False) if len(head) >= 8 else None
        firsts[base] = store_timestamp_at(head, 0) if magic in MESSAGE_MAGICS else None
    known = [(b, t) for b, t in sorted(firsts.items()) if t is not None]
    for (b0, t0), (b1, t1) in zip(known, known[1:]):
        if t1 < t0:
            return {}, f"store times: {files[b1][1]} starts at {t1}, before {files[b0][1]} ({t0}): the clock stepped back, no file is left out by time"
    bases = sorted(files)
    out = {}
    for i, b in enumerate(bases):
        nxt = next((firsts[n] for n in bases[i + 1 :] if firsts[n] is not None), None)
        out[b] = (firsts[b], nxt)
    return out, None


# -- msgId -------------------------------------------------------------------------------
def _msg_id_offsets(msg_ids) -> set:
    from ..errors import StoreFormatError
    from ..format.msgid import decode_message_id

    out = set()
    for m in msg_ids:
        try:
            out.add(decode_message_id(str(m))[2])
        except StoreFormatError:
            pass  # not an offset msgId: no record has it
    return out


# -- keys --------------------------------------------------------------------------------
def lookup_keys(pushed) -> list[str] | None:
    """The keys the index files are asked for: each ``uniq_key`` value, and each ``keys``
    value's first non-empty token (a record whose KEYS equals it is indexed under every
    token).  None when a value has no token (a record with such KEYS is not indexed)."""
    from ..format import properties as props

    out = []
    for col in KEY_COLUMNS:
        vals = pushed.value_set(col)
        if vals is None:
            continue
        for v in vals:
            token = str(v) if col == "uniq_key" else next((k for k in str(v).split(props.KEY_SEPARATOR) if k), None)
            if not token:
                return None
            out.append(token)
    return out


def _store_root(path: str) -> Path | None:
    p = Path(path.removeprefix("file://"))
    if (p / COMMITLOG_DIR).is_dir():
        return p
    if p.name == COMMITLOG_DIR and p.is_dir():
        return p.parent
    return None


def _key_targets(pushed, path: str, files: dict):
    """(offsets, scan ranges), "index files", notes — or None when keys are not asked."""
    if all(pushed.value_set(c) is None for c in KEY_COLUMNS):
        return None, None, []
    keys = lookup_keys(pushed)
    topics = pushed.value_set("topic")
    if not topics:
        return None, None, ["keys: no topic given (the index is on topic#key): scanning"]
    if keys is None:
        return None, None, ["keys: a KEYS value with no key in it is not indexed: scanning"]
    root = _store_root(path)
    if root is None or not (root / INDEX_DIR).is_dir():
        return None, None, ["keys: no index files beside the log: scanning"]
    from ..errors import RmqlabError
    from ..store.reader import StoreReader

    try:
        store = StoreReader(root, strict=False)
    except (RmqlabError, OSError) as err:  # a store that does not open: the scan says what is wrong
        return None, None, [f"keys: the store does not open ({err}): scanning"]
    with store:
        index = store.index
        if index.problems:
            return None, None, [f"keys: {p}: scanning" for p in index.problems[:3]]
        return index_targets(index, sorted(topics), sorted(set(keys)), max(b + sz for b, (_, _, sz) in files.items()) if files else 0)


def index_targets(index, topics: list[str], keys: list[str], log_end: int):
    """The records the index files name for ``topic#key`` (every pair), and the ranges
    of the log they do not cover (see the module docs); with notes."""
    if not index.files:
        return None, None, ["keys: no index files: scanning"]
    offsets, ranges, notes = set(), [], []
    prev = None
    for f in index.files:
        h = f.header
        if not (1 <= h.index_count <= f.max_index_num and 0 <= h.begin_phy_offset <= h.end_phy_offset):
            return None, None, [f"keys: {f.path}: header damaged (indexCount {h.index_count}, offsets {h.begin_phy_offset}..{h.end_phy_offset}): scanning"]
        if prev is not None and prev.index_count < prev.max_index_num and h.begin_phy_offset > prev.header.end_phy_offset:
            ranges.append((prev.header.end_phy_offset, h.begin_phy_offset))
            notes.append(f"keys: {prev.name} is not full and {f.name} starts past its end: scanning {prev.header.end_phy_offset}..{h.begin_phy_offset}")
        for t in topics:
            for k in keys:
                ok, found = _chain(f, index_key(t, k))
                offsets |= found
                if not ok:
                    ranges.append((h.begin_phy_offset, h.end_phy_offset + 1))
                    notes.append(f"keys: {f.path}: the chain of {t}#{k} ends as only damage ends it: scanning {h.begin_phy_offset}..{h.end_phy_offset}")
        prev = f
    # past the last indexed record (inclusive: one record's keys may span two files)
    ranges.append((index.files[-1].header.end_phy_offset, max(log_end, index.files[-1].header.end_phy_offset + 1)))
    return (offsets, ranges), "index files", notes


def _chain(f, full_key: str) -> tuple[bool, set]:
    """(whether the chain of ``full_key``'s slot ends as RocketMQ ends one — at entry 0 —,
    the offsets of the entries whose hash matches)."""
    from ..errors import StoreFormatError
    from ..format.hashing import index_key_hash

    slot = index_key_hash(full_key) % f.max_hash_slot_num
    try:
        steps = f.walk_slot(slot, index_key_hash(full_key))
    except StoreFormatError:
        return False, set()
    found = {s.phy_offset for s in steps if s.hash_matches}
    if not steps:
        return int(f.slots()[slot]) == INVALID_INDEX, found
    last = steps[-1]
    return last.prev_index == INVALID_INDEX and last.time_diff >= 0, found


# -- topics ------------------------------------------------------------------------------
#: a file more than this share of whose data bytes are the topic's is scanned, not read by position
DENSE = 0.5


def _topic_targets(pushed, path: str, files: dict):
    """(offsets, scan ranges), "consume queues", notes — from the topic's queues (see the
    module docs), or None and why not."""
    import numpy as np

    root = _store_root(path)
    if root is None:
        return None, None, ["topic: no consume queues beside the log: scanning"]
    from ..errors import RmqlabError
    from ..store.consume_queue import ConsumeQueue
    from ..store.metadata import read_topics
    from ..store.reader import StoreReader

    topics = sorted(str(t) for t in pushed.value_set("topic"))
    qlo, qhi = pushed.bounds("queue_id")
    qset = pushed.value_set("queue_id")
    try:
        store = StoreReader(root, strict=False)
    except (RmqlabError, OSError) as err:
        return None, None, [f"topic: the store does not open ({err}): scanning"]
    with store:
        try:
            table, _, _ = read_topics(root)
        except (RmqlabError, OSError, ValueError):
            table = None
        log_min = store.commitlog.min_offset
        by_topic: dict[str, list[int]] = {}
        for q in store.queue_ids():
            by_topic.setdefault(q.topic, []).append(q.queue_id)
        offsets, sizes, ranges = [], [], []
        for t in topics:
            have = sorted(by_topic.get(t, []))
            want = max([*have, -1]) + 1
            if table and t in table:
                want = max(want, table[t].read_queue_nums, table[t].write_queue_nums)
            missing = sorted(set(range(want)) - set(have))
            if missing:
                return None, None, [f"topic: {t} has no consume queue {missing[0]} of {want}: scanning"]
            for qid in have:
                if (qset is not None and qid not in qset) or (qlo is not None and qid < qlo) or (qhi is not None and qid > qhi):
                    continue
                try:
                    cq = store.consume_queue(t, qid)
                except (RmqlabError, OSError) as err:
                    return None, None, [f"topic: {t}/{qid}: {err}: scanning"]
                if type(cq) is not ConsumeQueue:
                    return None, None, [f"topic: {t}/{qid} is not a consume-queue file queue (RocksDB or batch queues): scanning"]
                lo, hi = cq.valid_range(log_min)
                parts = cq.parts(lo, hi)
                phy = np.concatenate([e["commitlog_offset"] for _, e in parts]).astype(np.int64) if parts else np.zeros(0, np.int64)
                size = np.concatenate([e["size"] for _, e in parts]).astype(np.int64) if parts else np.zeros(0, np.int64)
                if len(phy) and ((size <= 0).any() or (len(phy) > 1 and not (phy[1:] > phy[:-1]).all())):
                    return None, None, [f"topic: {t}/{qid} holds units no dispatch writes (a size of 0 or less, offsets not rising): scanning"]
                offsets.append(phy)
                sizes.append(size)
                # the log past this queue's last unit: dispatch may not have reached it
                ranges.append((int(phy[-1] + size[-1]) if len(phy) else log_min, 1 << 62))
                prev = cq.get(lo - 1) if lo > 0 and len(phy) else None
                if lo > 0 and len(phy) and (prev is None or not (0 <= prev.commitlog_offset < log_min and prev.size > 0)):
                    # the unit before the first is gone (its file deleted) or no dispatch's:
                    # what it pointed at may still be in the log
                    ranges.append((log_min, int(phy[0])))
        tail = min(r[0] for r in ranges if r[1] == 1 << 62) if ranges else None
        ranges = [r for r in ranges if r[1] != 1 << 62] + ([(tail, max(b + sz for b, (_, _, sz) in files.items()) + 1)] if tail is not None else [])
        phy = np.concatenate(offsets) if offsets else np.zeros(0, np.int64)
        size = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    # a file mostly the topic's: scanned (with the topic filtered in the decoder)
    for base, (_, _, fsize) in files.items():
        inside = (phy >= base) & (phy < base + fsize)
        if int(size[inside].sum()) > DENSE * fsize:
            ranges.append((base, base + fsize))
    return (phy, ranges), "consume queues", []


# -- splits ------------------------------------------------------------------------------
def _narrow(kept: list, files: dict, offsets, ranges: list, positions_ok: bool) -> list:
    """``kept`` cut to ``ranges`` (physical, half-open), plus a positions split per file
    and chunk for the ``offsets`` outside them (and inside what ``kept`` reads)."""
    import numpy as np

    merged = _merge(ranges)
    out = []
    for s in kept:
        a, b = s.file_base + s.start, s.file_base + s.stop
        for lo, hi in merged:
            lo, hi = max(a, lo), min(b, hi)
            if lo < hi:
                out.append(replace(s, start=lo - s.file_base, stop=hi - s.file_base))
    P = np.sort(offsets.astype(np.int64) if isinstance(offsets, np.ndarray) else np.fromiter(offsets, np.int64))
    P = P[np.concatenate(([True], P[1:] != P[:-1]))] if len(P) else P
    if merged and len(P):  # read by the scan already
        starts = np.array([lo for lo, _ in merged], np.int64)
        ends = np.array([hi for _, hi in merged], np.int64)
        i = np.searchsorted(starts, P, side="right") - 1
        P = P[~((i >= 0) & (P < ends[np.maximum(i, 0)]))]
    for s in sorted(kept, key=lambda s: (s.file_base, s.start)):
        lo, hi = np.searchsorted(P, [s.file_base + s.start, s.file_base + s.stop])
        pos = P[lo:hi] - s.file_base
        for i in range(0, len(pos), POSITIONS_PER_SPLIT):
            chunk = pos[i : i + POSITIONS_PER_SPLIT]
            first, last = int(chunk[0]), int(chunk[-1])
            if positions_ok:
                out.append(replace(s, start=first, stop=last + 1, positions=chunk.astype(np.int64).tobytes()))
            else:  # not readable by position here: the smallest scan that holds them
                out.append(replace(s, start=first, stop=last + 1))
    return out


def _merge(ranges):
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _bytes_read(splits) -> int:
    """Bytes the splits read: a range whole, a record at a position by its size field."""
    import numpy as np
    import pyarrow as pa

    from . import _paths

    total = 0
    for s in splits:
        if s.positions is None:
            total += s.stop - s.start
            continue
        P = np.frombuffer(s.positions, np.int64)
        if not len(P):
            continue
        _, inner = _paths.filesystem(s.uri, s.fs)
        with pa.memory_map(inner, "r") as mm:  # positions are planned on local files only
            a = np.frombuffer(mm.read_buffer(), np.uint8)
            ok = P + 4 <= len(a)
            size = field_at(a, P[ok], ">i4").astype(np.int64)
        fits = (size > 0) & (size <= s.file_size - P[ok])
        total += int(size[fits].sum()) + _HEADER * int((~fits).sum() + (~ok).sum())
    return total
