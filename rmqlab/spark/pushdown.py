"""Which bytes of the log a pushed-down query can need, found from what the store already
knows, before any record is read (the commitlog source's ``pushdown=true``).

A query's filters (:class:`~rmqlab.spark.commitlog_source.Pushed`) narrow the read in
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
``store_timestamp`` ranges
    each commitlog file's first record's store time (Java
    ``CommitLog.pickupStoreTimestamp``, 8 bytes read per file): RocketMQ stamps records
    under the put lock, so in log order, and a file holds times from its first record's
    to the next file's first; files outside the window are not read.  When the files'
    first times do not rise (a clock stepped back), no file is left out, and the plan
    says so.

What the indexes cannot answer is read by scanning, and the plan's ``notes`` say where
it fell back and why; a pushed read returns the rows the full scan returns (Spark also
checks every filter again).  Two limits, as RocketMQ's own ``queryMessage`` has them:
records RocketMQ does not index (a ROLLBACK transaction record,
``IndexService.buildIndex``) are not found through the index files, and an index file
removed by hand from the middle of a store hides what it held.  Keys are looked up only
with the topic given (the index is on ``topic#key``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..format.indexfile import INVALID_INDEX, index_key
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


def plan(splits: list, pushed, path: str, *, local: bool, dledger: bool) -> ReadPlan:
    """The splits of ``splits`` (a whole-log plan, :func:`plan_splits`) a query with
    ``pushed`` filters needs, narrowed as the module docs say.  ``local``: the store is
    on a local filesystem (index files and records at positions are read only there);
    ``dledger``: the log is DLedger's (offsets alone narrow it)."""
    files = _files(splits)
    log_bytes = sum(size for _, _, size in files.values())
    used, notes = [], []
    kept = list(splits)
    if local and not dledger:
        # never-written bytes at a file's end (the pre-allocated file) hold no record
        ends = {b: data_end(uri, size) for b, (uri, _, size) in files.items()}
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
    elif pushed.value_set("uniq_key") is not None or pushed.value_set("keys") is not None:
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


def data_end(uri: str, size: int) -> int:
    """Where a local file's written bytes end: past it, to the end of the file, only a
    hole the file system holds no data for (``SEEK_DATA``/``SEEK_HOLE``) — what
    RocketMQ's pre-allocated file is past its last record (``MappedFile`` maps the whole
    size; nothing writes the rest).  Bytes never written read as zero, so no record
    starts there.  A file system that cannot say gives ``size``."""
    import errno
    import os

    try:
        fd = os.open(uri.removeprefix("file://"), os.O_RDONLY)
    except OSError:
        return size
    try:
        pos = end = 0
        while pos < size:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as err:
                if err.errno == errno.ENXIO:  # no data past pos
                    return end
                return size
            pos = end = os.lseek(fd, data, os.SEEK_HOLE)
        return min(end, size)
    except (OSError, AttributeError):
        return size
    finally:
        os.close(fd)


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


# -- splits ------------------------------------------------------------------------------
def _narrow(kept: list, files: dict, offsets: set, ranges: list, positions_ok: bool) -> list:
    """``kept`` cut to ``ranges`` (physical, half-open), plus a positions split per file
    and chunk for the ``offsets`` outside them."""
    import numpy as np

    out = []
    for s in kept:
        a, b = s.file_base + s.start, s.file_base + s.stop
        for lo, hi in _merge(ranges):
            lo, hi = max(a, lo), min(b, hi)
            if lo < hi:
                out.append(replace(s, start=lo - s.file_base, stop=hi - s.file_base))
    inside = lambda o: any(lo <= o < hi for lo, hi in ranges)  # noqa: E731 (read by the scan already)
    kept_at = {}
    for s in kept:
        kept_at.setdefault(s.file_base, []).append((s.start, s.stop))
    by_file: dict[int, list[int]] = {}
    for o in sorted(offsets):
        base = next((b for b in files if b <= o < b + files[b][2]), None)
        if base is None or inside(o) or not any(a <= o - base < b for a, b in kept_at.get(base, ())):
            continue
        by_file.setdefault(base, []).append(o - base)
    proto = {s.file_base: s for s in kept}
    for base, pos in sorted(by_file.items()):
        for i in range(0, len(pos), POSITIONS_PER_SPLIT):
            chunk = pos[i : i + POSITIONS_PER_SPLIT]
            if positions_ok:
                out.append(replace(proto[base], start=chunk[0], stop=chunk[-1] + 1, positions=np.asarray(chunk, np.int64).tobytes()))
            else:  # not readable by position here: the smallest scan that holds them
                out.append(replace(proto[base], start=chunk[0], stop=chunk[-1] + 1))
    return out or kept[:0]


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

    from . import _paths

    total = 0
    for s in splits:
        if s.positions is None:
            total += s.stop - s.start
            continue
        fs, inner = _paths.filesystem(s.uri, s.fs)
        with fs.open_input_file(inner) as fh:
            for p in np.frombuffer(s.positions, np.int64).tolist():
                head = bytes(fh.read_at(_HEADER, p))
                size = int.from_bytes(head[:4], "big", signed=True) if len(head) >= 4 else 0
                total += size if 0 < size <= s.file_size - p else _HEADER
    return total
