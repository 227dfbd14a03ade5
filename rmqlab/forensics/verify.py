"""verify: check everything in a store and keep going (Kafka ``DumpLogSegments`` style).

Nothing is modified.  Where RocketMQ's own recovery stops at the first bad record,
``verify`` reports it and carries on: it resynchronises on the next record it can
prove (size, self-recorded physical offset and CRC agree; see
:mod:`rmqlab.forensics.salvage`) and checks what lies beyond too.

Every problem is a :class:`Finding` with a ``kind``, a ``severity`` (``error``,
``warning``, ``info``), the file, the byte offset in that file and one sentence.

What is checked (Java names in brackets):

* files: names (20-digit offsets one file size apart), sizes, stray files [``MappedFileQueue.load``];
* every CommitLog record: magic, totalSize against its fields and the bytes left, body CRC,
  ``__CRC32#`` property CRC, ``physicalOffset`` equal to where the record is, BLANK size
  [``CommitLog.checkMessageAndReturnSize``]; queue offsets consecutive per queue;
* what lies after the end of the log: non-zero bytes left behind by truncation or a
  torn write, and pre-allocated empty files;
* every ConsumeQueue entry from min to max offset: points at a record whose topic, queue,
  queue offset, size and tagsCode match [``ConsumeQueue.putMessagePositionInfo``];
  valid-looking entries after the first invalid one; records missing from their queue;
* every IndexFile: header counts, slots ≤ indexCount, ``prevIndex`` < own number, no
  cycles, each entry in the chain of its hash's slot, hashes that match a key of the
  record they point to [``IndexFile.putKey``];
* checkpoint against the data, the ``abort`` file, the lock.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


from .. import reprs
from ..config import MessageStoreConfig
from ..errors import StoreFormatError
from ..format.consumequeue import CQ_STORE_UNIT_SIZE, PRE_BLANK_SIZE
from ..format.hashing import index_key_hash
from ..format.indexfile import IndexHeader, entry_position, slot_position
from ..format.parse import field_offset
from ..format.properties import KEYS, UNIQ_KEY
from ..format.record import BAD_BLANK, Record, RecordError, decode_record
from ..rules import goes_to_consume_queue, goes_to_index, index_keys, parse_delay_levels, tags_code
from ..rules import ABORT_FILE, CHECKPOINT_FILE, CONSUMEQUEUE_DIR, LOCK_FILE
from ..store.reader import StoreReader
from .salvage import body_length, find_magic_positions

#: where the index header's counters sit (findings name the byte)
_INDEX_COUNT_AT = field_offset(IndexHeader, "index_count")
_HASH_SLOT_COUNT_AT = field_offset(IndexHeader, "hash_slot_count")

ERROR = "error"
WARNING = "warning"
INFO = "info"


@dataclass
class Finding:
    """One problem: what kind, how bad, where (file + byte offset in it), one sentence."""

    kind: str
    severity: str
    file: str
    offset: int | None
    message: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "severity": self.severity, "file": self.file, "offset": self.offset, "message": self.message}

    def __str__(self) -> str:
        where = self.file if self.offset is None else f"{self.file} @ {self.offset}"
        return f"{self.severity.upper():7} {self.kind:22} {where}: {self.message}"


@dataclass
class VerifyReport:
    """All findings plus a few counts; ``ok`` when there is no error."""

    root: str
    findings: list[Finding] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    def kinds(self) -> set[str]:
        return {f.kind for f in self.findings}

    def by_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def to_dict(self) -> dict:
        return {"root": self.root, "ok": self.ok, "stats": self.stats, "findings": [f.to_dict() for f in self.findings]}

    def to_text(self) -> str:
        counts = defaultdict(int)
        for f in self.findings:
            counts[f.severity] += 1
        head = f"verify {self.root}: {'OK' if self.ok else 'ERRORS'} — {counts[ERROR]} errors, {counts[WARNING]} warnings, {counts[INFO]} notes"
        stats = ", ".join(f"{k}={v}" for k, v in self.stats.items())
        return "\n".join([head, f"  {stats}"] + [f"  {f}" for f in self.findings])

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:  # notebooks
        return reprs.html("verify_report", self)


@dataclass(slots=True)
class _Rec:
    """What verify keeps of a record (bodies are not kept: a 1 GiB store must fit)."""

    topic: str
    queue_id: int
    queue_offset: int
    size: int
    tags_code: int
    sys_flag: int
    store_timestamp: int
    keys: tuple  # index keys (topic#UNIQ_KEY, then topic#k per KEYS token: rules.index_keys)
    file: str
    file_offset: int


def expected_tags_code(rec: Record, delay_levels: dict[int, int]) -> int:
    """tagsCode a ConsumeQueue entry must hold: :func:`rmqlab.rules.tags_code`."""
    return tags_code(rec.topic, rec.java_properties, rec.store_timestamp, delay_levels)


class _Verifier:
    def __init__(self, root, config: MessageStoreConfig | None):
        self.root = Path(root)
        self.report = VerifyReport(str(self.root))
        self.store = StoreReader(self.root, config, strict=False)
        self.cfg = self.store.config
        self.delay_table = parse_delay_levels(self.cfg.message_delay_level)
        self.records: dict[int, _Rec] = {}
        self.log_end = 0  # where RocketMQ's walk stops
        self.max_store_ts = 0

    def add(self, kind, severity, file, offset, message) -> None:
        self.report.findings.append(Finding(kind, severity, str(file), offset, message))

    # -- files ------------------------------------------------------------------------------
    def check_layout(self) -> None:
        for p in self.store.problems:
            self.add("LAYOUT", ERROR, p.file, p.offset, p.message)
        for p in self.store.commitlog.queue.ignored:
            if p.stat().st_size == 0:
                self.add("EMPTY_FILE", INFO, p, None, "zero-length last file; RocketMQ's loader deletes it")
            else:
                self.add("STRAY_FILE", WARNING, p, None, "not a 20-digit offset name; RocketMQ ignores it")

    # -- commitlog ----------------------------------------------------------------------------
    def check_commitlog(self) -> None:
        files = self.store.commitlog.queue.files
        fsize = self.store.commitlog.mapped_file_size or 0
        stopped = False  # RocketMQ's walk has stopped (damage or zero tail)
        n = 0
        last_qoff: dict[tuple[str, int], tuple[int, int]] = {}
        for idx, f in enumerate(files):
            buf = f.buf
            path = str(f.path)
            if stopped:
                nz = self._nonzero_extent(buf, 0)
                if nz is None:
                    kind = "PREALLOCATED_FILE" if len(buf) == fsize else "EMPTY_FILE"
                    self.add(kind, INFO, path, None, "file after the end of the log holds only zeros (pre-allocated); recovery deletes it")
                    continue
            pos = 0
            while pos < len(buf):
                try:
                    rec = decode_record(buf, pos, file=path, file_base=f.file_from_offset, check_crc=True, read_body=False)
                except RecordError as err:
                    self.add(err.kind, ERROR, path, pos, err.message.split(": ", 1)[-1])
                    if not stopped:
                        stopped = True
                        self.log_end = f.file_from_offset + pos
                    nxt = self._resync(buf, pos + 1, f.file_from_offset)
                    if nxt is None:
                        self._tail(buf, pos, path, after_damage=True)
                        break
                    self.add("RESYNC", INFO, path, nxt, f"walk resumed at the next provable record, {nxt - pos} bytes after the damage")
                    pos = nxt
                    continue
                if rec is None:  # zero tail
                    if not stopped:
                        stopped = True
                        self.log_end = f.file_from_offset + pos
                    self._tail(buf, pos, path, after_damage=False)
                    break
                if rec.is_blank:
                    left = len(buf) - pos
                    if rec.total_size != left:
                        self.add(BAD_BLANK, WARNING, path, pos, f"BLANK says {rec.total_size} bytes are left, the file has {left}")
                    if idx == len(files) - 1 and not stopped:
                        stopped = True
                        self.log_end = f.file_from_offset + len(buf)
                    break
                n += 1
                here = f.file_from_offset + pos
                if not rec.body_crc_ok:
                    self.add("BODY_CRC", ERROR, path, pos, f"body CRC stored {rec.body_crc}, computed {rec.body_crc_computed}")
                    if not stopped and body_length(rec) > 0:
                        stopped = True
                        self.log_end = here
                if rec.property_crc_ok is False:
                    self.add("PROPERTY_CRC", ERROR, path, pos, f"__CRC32# says {rec.property_crc}, computed {rec.property_crc_computed}")
                if rec.stored_physical_offset != here:
                    self.add("PHYSICAL_OFFSET", ERROR, path, pos, f"record says physicalOffset {rec.stored_physical_offset}, it is at {here}")
                info = self._keep(rec, path, pos)
                self.records[here] = info
                self.max_store_ts = max(self.max_store_ts, rec.store_timestamp)
                if goes_to_consume_queue(rec.sys_flag):
                    key = (info.topic, info.queue_id)
                    prev = last_qoff.get(key)
                    if prev is not None and rec.queue_offset != prev[0] + 1:
                        self.add("QUEUE_OFFSET_GAP", ERROR, path, pos, f"{key[0]}/{key[1]} queue offset {rec.queue_offset} follows {prev[0]} (record at {prev[1]})")
                    last_qoff[key] = (rec.queue_offset, here)
                pos += rec.total_size
                if not stopped:
                    self.log_end = f.file_from_offset + pos
            else:
                if not stopped and idx == len(files) - 1:
                    stopped = True
        self.report.stats.update(records=n, log_end=self.log_end, commitlog_files=len(files))

    @staticmethod
    def _nonzero_extent(buf, start: int) -> tuple[int, int] | None:
        """(first, last+1) non-zero byte at or after ``start``, or None."""
        if start >= len(buf):
            return None
        a = np.frombuffer(buf, dtype=np.uint8, offset=start)
        nz = np.flatnonzero(a)
        if not len(nz):
            return None
        return start + int(nz[0]), start + int(nz[-1]) + 1

    def _tail(self, buf, pos: int, path: str, after_damage: bool) -> None:
        ext = self._nonzero_extent(buf, pos)
        if ext is None:
            return
        a, b = ext
        what = "after the damaged record" if after_damage else "after the end of the log (zero tail)"
        self.add("TAIL_BYTES", WARNING, path, a, f"{b - a} bytes up to {b} are not zero {what}: left behind by truncation or a torn write (see `rmqlab salvage`)")

    def _resync(self, buf, start: int, base: int) -> int | None:
        for p in find_magic_positions(buf, start):
            try:
                rec = decode_record(buf, p, file_base=base, check_crc=True, read_body=False)
            except RecordError:
                continue
            if rec is not None and not rec.is_blank and rec.stored_physical_offset == base + p and rec.body_crc_ok:
                return p
        return None

    def _keep(self, rec: Record, path: str, pos: int) -> _Rec:
        jp = rec.java_properties
        keys = index_keys(rec.topic, jp.get(UNIQ_KEY), jp.get(KEYS))
        return _Rec(rec.topic, rec.queue_id, rec.queue_offset, rec.total_size, expected_tags_code(rec, self.delay_table), rec.sys_flag, rec.store_timestamp, tuple(keys), path, pos)

    # -- consume queues -------------------------------------------------------------------------
    def check_consume_queues(self) -> None:
        min_off = self.store.commitlog.min_offset
        queues = self.store.queue_ids()
        seen: set[tuple[str, int]] = set()
        n_entries = 0
        for qid in queues:
            try:
                cq = self.store.consume_queue(qid.topic, qid.queue_id)
            except StoreFormatError as err:
                self.add("LAYOUT", ERROR, err.file, err.offset, err.message)
                continue
            seen.add((qid.topic, qid.queue_id))
            if not cq.queue.files:
                continue
            e = cq.raw_entries()
            base = cq.first_slot_offset
            lo, hi = cq.valid_range(min_off)
            for q in range(lo, hi):
                r = e[q - base]
                off, size, tags = int(r["commitlog_offset"]), int(r["size"]), int(r["tags_code"])
                if size == PRE_BLANK_SIZE:
                    continue
                n_entries += 1
                file, fpos = self._cq_pos(cq, q)
                rec = self.records.get(off)
                if rec is None:
                    if off >= self.log_end:
                        self.add("CQ_BEYOND_END", ERROR, file, fpos, f"{qid} entry {q} points at {off}, at or past the end of the log ({self.log_end}); recovery cuts it")
                    else:
                        self.add("CQ_DANGLING", ERROR, file, fpos, f"{qid} entry {q} points at {off}, where no record starts")
                    continue
                bad = []
                if (rec.topic, rec.queue_id) != (qid.topic, qid.queue_id):
                    bad.append(f"record is {rec.topic}/{rec.queue_id}")
                if rec.queue_offset != q:
                    bad.append(f"record's queue offset is {rec.queue_offset}")
                if rec.size != size:
                    bad.append(f"size {size} != record's {rec.size}")
                if rec.tags_code != tags:
                    bad.append(f"tagsCode {tags} != expected {rec.tags_code}")
                if not goes_to_consume_queue(rec.sys_flag):
                    bad.append("record is a prepared/rolled-back transaction, which never has an entry")
                if bad:
                    self.add("CQ_MISMATCH", ERROR, file, fpos, f"{qid} entry {q} → {off}: " + "; ".join(bad))
            # valid-looking entries after the first invalid one (stale or torn)
            end_i = hi - base
            if end_i < len(e):
                tail = e[end_i:]
                valid = (tail["commitlog_offset"] >= 0) & (tail["size"] > 0)
                if valid.any():
                    k = int(np.flatnonzero(valid)[0])
                    file, fpos = self._cq_pos(cq, hi + k)
                    self.add("CQ_STALE_ENTRIES", WARNING, file, fpos, f"{qid}: {int(valid.sum())} valid-looking entries after the end of the queue (entry {hi}); RocketMQ ignores them")
            last = self._last_queue_offset.get((qid.topic, qid.queue_id))
            if last is not None and last[0] >= hi:
                file, _ = self._cq_pos(cq, hi) if hi > base else (str(cq.directory), None)
                self.add("CQ_BEHIND", WARNING, file, None, f"{qid} ends at offset {hi} but the log holds its records up to queue offset {last[0]} (not dispatched; recovery re-dispatches them)")
        for key, (qoff, phy) in self._last_queue_offset.items():
            if key not in seen:
                self.add("CQ_MISSING_QUEUE", ERROR, str(self.root / CONSUMEQUEUE_DIR / key[0] / str(key[1])), None, f"the log holds records of {key[0]}/{key[1]} (up to queue offset {qoff}) but there is no consume queue; abnormal recovery rebuilds it")
        self.report.stats.update(consume_queues=len(queues), cq_entries=n_entries)

    @property
    def _last_queue_offset(self) -> dict[tuple[str, int], tuple[int, int]]:
        if not hasattr(self, "_lqo"):
            d = {}
            for phy, r in self.records.items():
                if phy < self.log_end and goes_to_consume_queue(r.sys_flag):
                    cur = d.get((r.topic, r.queue_id))
                    if cur is None or r.queue_offset > cur[0]:
                        d[(r.topic, r.queue_id)] = (r.queue_offset, phy)
            self._lqo = d
        return self._lqo

    @staticmethod
    def _cq_pos(cq, q: int) -> tuple[str, int]:
        byte = q * CQ_STORE_UNIT_SIZE
        f = cq.queue.find(byte)
        if f is None:
            return str(cq.directory), byte
        return str(f.path), byte - f.file_from_offset

    # -- index ------------------------------------------------------------------------------------
    def check_index(self) -> None:
        try:
            index = self.store.index
        except StoreFormatError as err:
            self.add("LAYOUT", ERROR, err.file, err.offset, err.message)
            return
        slots_n = self.cfg.max_hash_slot_num
        n_entries = 0
        findable: set[tuple[int, int]] = set()  # (physical offset, key hash) of entries a lookup reaches
        index_end = 0  # the newest index file's endPhyOffset: buildIndex skips records below it
        for f in index.files:
            path = str(f.path)
            h = f.header
            count = h.index_count
            if not 1 <= count <= f.max_index_num:
                self.add("INDEX_HEADER", ERROR, path, _INDEX_COUNT_AT, f"indexCount {count} is outside [1, {f.max_index_num}]")
                count = max(1, min(count, f.max_index_num))
            slots = f.slots().astype(np.int64)
            used = int((slots > 0).sum())
            if h.hash_slot_count != used:
                self.add("INDEX_HEADER", WARNING, path, _HASH_SLOT_COUNT_AT, f"hashSlotCount says {h.hash_slot_count}, {used} slots are used")
            if count > 1 and h.begin_timestamp > h.end_timestamp:
                self.add("INDEX_HEADER", ERROR, path, 0, f"beginTimestamp {h.begin_timestamp} > endTimestamp {h.end_timestamp}")
            for s in np.flatnonzero((slots < 0) | (slots >= count)):
                self.add("INDEX_SLOT", ERROR, path, slot_position(int(s)), f"slot {int(s)} holds {int(slots[s])}, outside [0, indexCount={count})")
            ents = f.entries()
            prev = ents["prev_index"].astype(np.int64)
            nums = np.arange(len(ents))
            for i in np.flatnonzero(((prev >= nums) | (prev < 0)) & (nums >= 1) & (nums < count)):
                self.add("INDEX_CHAIN", ERROR, path, entry_position(slots_n, int(i)), f"entry {int(i)} has prevIndex {int(prev[i])}: it must point back, to a smaller number")
            for i in np.flatnonzero((ents["time_diff"] < 0) & (nums >= 1) & (nums < count)):
                self.add("INDEX_ENTRY", ERROR, path, entry_position(slots_n, int(i)), f"entry {int(i)} has a negative timeDiff {int(ents['time_diff'][i])}")
            # walk every chain once: cycles, slot membership
            reached = np.zeros(len(ents), dtype=bool)
            for s in np.flatnonzero((slots > 0) & (slots < count)):
                nxt, seen = int(slots[s]), set()
                while 0 < nxt < count:
                    if nxt in seen:
                        self.add("INDEX_CYCLE", ERROR, path, entry_position(slots_n, nxt), f"chain of slot {int(s)} returns to entry {nxt}")
                        break
                    seen.add(nxt)
                    reached[nxt] = True
                    kh = int(ents["key_hash"][nxt])
                    if kh % slots_n != s:
                        self.add("INDEX_SLOT_MISMATCH", ERROR, path, entry_position(slots_n, nxt), f"entry {nxt} (hash {kh}) is in the chain of slot {int(s)}, its hash belongs to slot {kh % slots_n}")
                    # follow prevIndex even when it points forward (reported as INDEX_CHAIN
                    # above) so that a loop is found; Java's walk stops at prev == self
                    nxt = int(ents["prev_index"][nxt])
            for i in np.flatnonzero(reached[:count]).tolist():
                findable.add((int(ents["phy_offset"][i]), int(ents["key_hash"][i])))
            index_end = int(h.end_phy_offset)
            orphans = np.flatnonzero(~reached[1:count]) + 1
            if len(orphans):
                self.add("INDEX_ORPHAN", WARNING, path, entry_position(slots_n, int(orphans[0])), f"{len(orphans)} entries are not reachable from any slot (first: {int(orphans[0])})")
            # each entry's hash must be the hash of a key of the record it points at
            hashes_cache: dict[int, set[int]] = {}
            for i in range(1, count):
                n_entries += 1
                phy = int(ents["phy_offset"][i])
                rec = self.records.get(phy)
                pos = entry_position(slots_n, i)
                if rec is None:
                    if phy >= self.log_end:
                        self.add("INDEX_BEYOND_END", WARNING, path, pos, f"entry {i} points at {phy}, at or past the end of the log ({self.log_end}); lookups skip it")
                    else:
                        self.add("INDEX_DANGLING", ERROR, path, pos, f"entry {i} points at {phy}, where no record starts")
                    continue
                hs = hashes_cache.get(phy)
                if hs is None:
                    hs = {index_key_hash(k) for k in rec.keys}
                    hashes_cache[phy] = hs
                kh = int(ents["key_hash"][i])
                if kh not in hs:
                    self.add("INDEX_HASH", ERROR, path, pos, f"entry {i} hash {kh} matches no key of the record at {phy} ({rec.topic}, keys {list(rec.keys)})")
        self.report.stats.update(index_files=len(index.files), index_entries=n_entries)
        if self.cfg.message_index_enable:
            self._index_missing(findable, index_end)

    def _index_missing(self, findable: set[tuple[int, int]], index_end: int) -> None:
        """INDEX_MISSING: records RocketMQ indexes (Java ``IndexService.buildIndex``: a
        key or UNIQ_KEY, not a ROLLBACK) whose keys no slot chain reaches, so no
        ``queryMessage`` finds them.  Those below the newest index file's endPhyOffset
        stay so (buildIndex skips what is below it; a crash that dropped an index file
        and re-dispatched from a later commitlog file leaves exactly these); those at or
        past it were not dispatched yet and are indexed if dispatch reaches them."""
        lost, pending = [], []
        for phy, rec in self.records.items():
            if phy >= self.log_end or not rec.keys or not goes_to_index(rec.sys_flag):
                continue
            if any((phy, index_key_hash(k)) not in findable for k in rec.keys):
                (lost if phy < index_end else pending).append((phy, rec))
        for found, what in ((lost, "below the index's endPhyOffset {end}: RocketMQ never indexes them again, so they stay unfindable by key"),
                            (pending, "at or past the index's endPhyOffset {end}: not dispatched yet; RocketMQ indexes them only if its recovery re-dispatches them")):
            if found:
                found.sort()
                phy, rec = found[0]
                first = ", ".join(str(p) for p, _ in found[:5])
                self.add("INDEX_MISSING", WARNING, rec.file, rec.file_offset,
                         f"{len(found)} record(s) carry a key or UNIQ_KEY that no index chain reaches (first at {first}), " + what.format(end=index_end))

    # -- checkpoint, abort, lock ---------------------------------------------------------------------
    def check_state(self) -> None:
        cp_path = self.root / CHECKPOINT_FILE
        if not cp_path.exists():
            self.add("CHECKPOINT_MISSING", WARNING, cp_path, None, "no checkpoint: abnormal recovery would start at the first commitlog file")
        else:
            size = cp_path.stat().st_size
            if size != 4096:
                self.add("CHECKPOINT_SIZE", WARNING, cp_path, None, f"checkpoint is {size} bytes, RocketMQ writes 4096")
            try:
                cp = self.store.checkpoint()
            except StoreFormatError as err:
                self.add("CHECKPOINT", ERROR, err.file, err.offset, err.message)
                cp = None
            if cp is not None:
                if cp.physic_msg_timestamp > self.max_store_ts and self.max_store_ts:
                    self.add("CHECKPOINT_AHEAD", WARNING, cp_path, 0, f"physicMsgTimestamp {cp.physic_msg_timestamp} is after the newest record in the log ({self.max_store_ts}): flushed data is missing")
                try:
                    for f in self.store.index.files if (self.root / ABORT_FILE).exists() else []:
                        if f.end_timestamp > cp.index_msg_timestamp:
                            self.add("INDEX_AFTER_CHECKPOINT", INFO, f.path, 8, f"endTimestamp {f.end_timestamp} > checkpoint indexMsgTimestamp {cp.index_msg_timestamp}: abnormal recovery deletes this file and rebuilds it")
                except StoreFormatError:
                    pass
        if (self.root / ABORT_FILE).exists():
            content = self.store.abort_content() or ""
            self.add("ABORT_PRESENT", WARNING, self.root / ABORT_FILE, None, f"the last exit was not clean (abort holds {content!r}); RocketMQ will run abnormal recovery")
        state = self.store.lock_state()
        if state == "held":
            self.add("LOCK_HELD", INFO, self.root / LOCK_FILE, 0, "a running process holds the store lock: files may change while verify reads them")

    def run(self) -> VerifyReport:
        self.check_layout()
        self.check_commitlog()
        self.check_consume_queues()
        self.check_index()
        self.check_state()
        self.store.close()
        return self.report


def verify_store(root: str | os.PathLike, config: MessageStoreConfig | None = None) -> VerifyReport:
    """Check everything in the store at ``root``; never modifies it."""
    return _Verifier(root, config).run()
