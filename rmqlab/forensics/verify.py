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
* checkpoint against the data, the ``abort`` file, the lock;
* every other file of the root is recognised first (:mod:`rmqlab.store.layout`): a
  layout rmqlab does not decode is reported once as ``NOT_CHECKED`` (info) with the
  reason, never as damage; the queues of topics it does not check (LMQ, ext, batch)
  and, for a RocksDB consume queue, the missing file queues, are not judged.
"""

from __future__ import annotations

import functools
import os
import threading
import zlib
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import reprs
from ..config import MessageStoreConfig
from ..errors import StoreFormatError
from ..files.rocksdb import RocksDBUnavailable
from ..progress import Progress, Silent
from ..files.extent import nonzero_extent, nonzero_past, zero_runs
from ..files.mapped_file_queue import name_max, unmakeable
from ..format.consumequeue import BCQ_STORE_UNIT_SIZE, EXT_MAX_ADDR, PRE_BLANK_SIZE
from ..format.hashing import java_string_hash
from ..format.properties import INNER_MULTI_DISPATCH as LMQ_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET as LMQ_MULTI_QUEUE_OFFSET, LMQ_DISPATCH_SEPARATOR
from ..format.dledger import COMMITTED_INDEX_KEY, ENTRY_HEADER_SIZE, INDEX_UNIT_SIZE, MAGIC_1
from ..format.indexfile import IndexHeader, entry_position, slot_position
from ..format.layout import PHYSICAL_OFFSET_AT, field_at
from ..format.parse import field_offset
from ..format.properties import KEYS, TAGS, UNIQ_KEY
from ..format.record import BAD_BLANK, BODY_CRC, PROPERTY_CRC, RecordError, damage_detail, decode_record
from ..rules import SCHEDULE_TOPIC, delay_level_queue_id, goes_to_consume_queue, goes_to_index, index_keys, parse_delay_levels
from ..rules import ABORT_FILE, BATCH_CONSUMEQUEUE_DIR, CHECKPOINT_FILE, CONFIG_DIR, CONSUMEQUEUE_DIR, CONSUMEQUEUE_EXT_DIR, DELAY_OFFSET_FILE, LOCK_FILE
from ..scan import compute as ac
from ..scan import kernels
from ..scan.decode import JAVA_PROPERTY_PREFIX, KIND_BLANK, KIND_MESSAGE, scan_range
from ..scan.dispatch_request import DispatchColumns
from ..scan.uniques import sorted_unique, stable_argsort, unique
from ..store.dledger import DLEDGER_ENTRY, DLedgerCommitLog
from ..store.reader import StoreReader

#: where the index header's counters sit (findings name the byte)
_INDEX_COUNT_AT = field_offset(IndexHeader, "index_count")
_HASH_SLOT_COUNT_AT = field_offset(IndexHeader, "hash_slot_count")

ERROR = "error"
WARNING = "warning"
INFO = "info"


@dataclass
class Finding:
    """One problem: what kind, how bad, where (file + byte offset in it), one sentence.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> first = verify_store(shipped_dir() / "damaged").findings[0]      # the cause comes first
    >>> first.kind, first.severity, first.file.rsplit("/", 1)[-1], first.offset
    ('BODY_CRC', 'error', '00000000000000262144', 1506)
    """

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
    """All findings plus a few counts; ``ok`` when there is no error.  ``outcome`` and
    ``cause`` are the next start's (the recovery plan's), ``stats["log_end"]`` where it
    ends the log, ``stats["walk_end"]`` where a walk from the first file stops.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> report = verify_store(shipped_dir() / "damaged")
    >>> report.ok, report.outcome, report.stats["log_end"], report.stats["walk_end"]
    (False, 'records lost', 263650, 137674)
    >>> [f.kind for f in report.errors][:2], report.cause.kind
    (['BODY_CRC', 'BODY_CRC'], 'BODY_CRC')
    """

    root: str
    findings: list[Finding] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    #: the recovery plan's dry run the findings are judged against (what the next start
    #: does: rmqlab.recovery.recover.plan), or None where none was made
    recovery: object = field(default=None, repr=False, compare=False)

    @property
    def outcome(self) -> str:
        """What the next start means for the store (rmqlab.recovery.cause.consequence_of)."""
        from ..recovery.cause import consequence_of

        return consequence_of(self.recovery)

    @property
    def cause(self):
        """Why the next start cuts the log where it does (a :class:`rmqlab.recovery.cause.Cause`), or None."""
        return None if self.recovery is None else self.recovery.cause

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
        cause = self.cause
        return {"root": self.root, "ok": self.ok, "outcome": self.outcome, "records_lost": None if self.recovery is None else self.recovery.records_lost,
                "cause": None if cause is None else cause.to_dict(), "stats": self.stats, "findings": [f.to_dict() for f in self.findings]}

    def to_text(self) -> str:
        counts = defaultdict(int)
        for f in self.findings:
            counts[f.severity] += 1
        head = f"verify {self.root}: {'OK' if self.ok else 'ERRORS'} — {counts[ERROR]} errors, {counts[WARNING]} warnings, {counts[INFO]} notes"
        lines = [head]
        r = self.recovery
        if r is not None and r.modelled:
            lines.append(f"  outcome  {self.outcome}: {r.outcome()}")
        if self.cause is not None:
            lines.append(f"  cause    {self.cause.line()}")
            lines.append(f"           {self.cause.meaning()}")
        stats = ", ".join(f"{k}={v}" for k, v in self.stats.items())
        return "\n".join(lines + [f"  {stats}"] + [f"  {f}" for f in self.findings])

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:  # notebooks
        return reprs.html("verify_report", self)


#: the end of a finding whose consequence RocketMQ's recovery decides (the verify
#: command replaces it with what recovery's plan says)
RECOVERY_DECIDES = "; what RocketMQ's recovery does with them depends on where it starts re-dispatching (`rmqlab recover` says)"
#: findings listed per (kind, file); past it they are counted (a store torn
#: everywhere must not make a report of millions of lines)
LISTED_PER_FILE = 100
#: records checked together against the queues and the index (two windows live at once:
#: one joined on the worker thread while the next is read).  On a 256 MiB store of
#: ~200-byte records (bench_forensics) 262,144 rows kept verify at 328 MiB of anonymous
#: memory and 0.67x the decoder, where 1,048,576 took 643 MiB and 0.54x (smaller
#: windows overlap the two threads better); not smaller, as each window walks every
#: queue it touches in Python
WINDOW_ROWS = 1 << 18
_NO_END = (1 << 63) - 1
_COLUMNS = DispatchColumns.ARROW_COLUMNS + ("magic", "kind", "error")


def _ints(batch, name) -> np.ndarray:
    return np.asarray(ac.fill_null(batch.column(name), 0).to_numpy(zero_copy_only=False), np.int64)


def _told(batches, tell):
    """``batches``, each told to ``tell`` as it passes; those the walk leaves unread
    (it stops at a file's zero tail) are told too, so that ``tell`` hears the scan's
    every row."""
    try:
        for batch in batches:
            tell(batch)
            yield batch
    finally:
        try:
            for batch in batches:
                tell(batch)
        finally:
            batches.close()


def _pieces(batches):
    """The decoder's batches cut where verify's walk must look: each BLANK or damage
    row alone (``special``), the message rows between them in runs that chain (a run
    ends where the next row does not start at the end of the last: zeros or damage the
    decoder skipped)."""
    for batch in batches:
        if JAVA_PROPERTY_PREFIX + DispatchColumns.JAVA_PROPERTIES[0] not in batch.schema.names:
            for i in range(batch.num_rows):  # BLANK and damage rows only
                yield batch.slice(i, 1), True
            continue
        kind = batch.column("kind")
        special = np.asarray(ac.or_(ac.equal(kind, KIND_BLANK), ac.is_valid(batch.column("error"))).to_numpy(zero_copy_only=False), bool)
        pos = _ints(batch, "physical_offset")
        size = _ints(batch, "total_size")
        cut = np.zeros(len(pos) + 1, bool)
        cut[0] = cut[-1] = True
        cut[1:-1] = (pos[1:] != pos[:-1] + size[:-1]) | special[1:] | special[:-1]
        bounds = np.flatnonzero(cut)
        if len(bounds) == 2 and not special[0]:
            yield batch, False
            continue
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            yield batch.slice(lo, hi - lo), bool(special[lo])


def _bisect(col: np.ndarray, value: int) -> int:
    """``np.searchsorted(col, value)`` for one value over a big-endian column view
    without the native copy of the whole column numpy would make first."""
    lo, hi = 0, len(col)
    while lo < hi:
        mid = (lo + hi) // 2
        if int(col[mid]) < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@dataclass
class _Queue:
    """One consume queue as verify joins it: its valid entries, file by file."""

    qid: object
    cq: object
    key: int
    lo: int
    hi: int
    parts: list  # per file: (queue offset of the first slot, the slots, whether their commitlog offsets ascend)


@dataclass
class _Index:
    """One index file as verify joins it: which entries a lookup reaches, and the
    entries' order by physical offset."""

    file: object
    count: int
    reached: np.ndarray  # packed bits over entry numbers
    order: np.ndarray | None  # entry numbers (from 1) sorted by phyOffset; None: already sorted


@dataclass
class _Window:
    """Records read from the log, checked together against queues and index."""

    batches: list = field(default_factory=list)  # the decoded rows (what dispatch reads is taken from them on the worker)
    phy: list = field(default_factory=list)
    size: list = field(default_factory=list)
    rows: int = 0


class _Verifier:
    def __init__(self, root, config: MessageStoreConfig | None, progress=None, rocketmq_version: str | None = None, log_end: int | None = None,
                 queues_truncated: bool = True, dispatch_progress: int | None = None, dispatch_stop_at: int | None = None, on_batch=None):
        self.root = Path(root)
        self.dispatch_stop_at = dispatch_stop_at  # where the next start's dispatch stops for good (rmqlab.recovery.report.DispatchStop)
        #: told every batch of the log's scan (file base, file size, batch): another view
        #: of the log fed this pass instead of one of its own (the report's map)
        self.on_batch = on_batch
        self.progress = progress or Silent()
        self.report = VerifyReport(str(self.root))
        self.store = StoreReader(self.root, config, strict=False)
        self.cfg = self.store.config
        # 5.4+ also indexes TAGS (Release.index_tags): expected where every release the
        # store may come from does it, accepted where some do
        from ..releases import release
        from ..store.release import tell_release

        reading = tell_release(self.root, self.cfg, told=rocketmq_version)
        said = [release(c).index_tags for c in reading.candidates]
        self.index_tags = "all" if all(said) else "some" if any(said) else "none"
        #: how the writer indexes a UNIQ_KEY (rocketmq-rust: topic#U#uniq; Release.uniq_index_type)
        self.uniq_type = release(reading.candidates[0]).uniq_index_type
        self.delay_table = parse_delay_levels(self.cfg.message_delay_level)
        from ..store.rocksdb_message import index_files_written

        #: dispatch writes index files (not with 5.4+'s indexFileWriteEnable=false: keys only in RocksDB)
        self.index_written = index_files_written(self.store)
        #: the end of the log: where the store's next start ends it (the recovery plan,
        #: rmqlab.recovery.next_start); None where no plan is made (the walk's end stands in)
        self.log_end = log_end
        #: whether the next start cuts the queues' units past that end (Java's recovery, and
        #: every writer whose lowest dispatch progress reaches it: RecoveryReport.queues_truncated),
        #: and that progress, where it keeps them
        self.queues_truncated, self.dispatch_progress = queues_truncated, dispatch_progress
        #: the dry-run report that end comes from (the Spark job's driver keeps it here)
        self.recovery = None
        #: where a walk of the log's chain from the first file stops (the first damage or
        #: the zero tail): not the end of the log where the next start never reads there
        self.walk_end = 0
        self.stopped = False
        self.max_store_ts = 0
        self.n_records = 0
        #: index entries holding a UNIQ_KEY in the other writer's form (INDEX_UNIQ_FORM)
        self.n_uniq_form = 0
        self.uniq_form_first: tuple[str, int, int] | None = None
        self.topics: dict[str, int] = {}
        self.topic_names: list[str] = []
        self.queue_prev: dict[int, tuple[int, int]] = {}  # queue key -> (queue offset, phy) of its last record
        self.queue_last: dict[int, tuple[int, int]] = {}  # the same, records before the end of the log only
        self.queue_first: dict[int, tuple[int, int]] = {}  # queue key -> (queue offset, phy) of its first record read here
        #: the consume queues could not be listed (a RocksDB RocksDB cannot open): nothing judged of them
        self.queues_unreadable = False
        self.queues: list[_Queue] = []
        self.queue_end: dict[int, int] = {}  # queue key -> the queue offset its valid units end at
        self.first_missing: dict[int, int] = {}  # queue key -> physical offset of the log's record at that queue offset
        self.indexes: list[_Index] = []
        self.index_end = 0
        self.missing = {"lost": [0, []], "pending": [0, []]}  # INDEX_MISSING: count, first offsets
        self.n_cq_entries = self.n_index_entries = 0
        self._listed: Counter = Counter()
        self._unlisted: dict[tuple[str, str], list] = {}
        self.window = _Window()
        self.window_lo = -_NO_END
        self.window_hi = _NO_END  # the last window joins the entries pointing up to here (a part of the log checked alone: where the next part starts)
        self._lock = threading.Lock()
        self.stopped_by_damage = False
        self._past: set[int] = set()  # findings about the walk past the end of the log (their indices)
        self._past_unlisted: Counter = Counter()
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="rmqlab-verify")
        self._pending = None  # the worker's job in flight
        #: one file checked on its own (a Spark task, :mod:`rmqlab.spark.verify`): every
        #: finding kept with the log position it is about, no cap (applied once, over all)
        self.raw: list[tuple[Finding, int | None]] | None = None
        #: DLedger entries up to the end of the log, and the last one's index (a DLedger log only)
        self.dledger_count = 0
        self.dledger_last_index = -1

    @property
    def end(self) -> int:
        """The end of the log (:attr:`log_end`), or where no plan gives it, the walk's."""
        return self.walk_end if self.log_end is None else self.log_end

    def unit(self) -> "_Verifier":
        """This verifier set to check single files (:meth:`walk_file`,
        :meth:`check_index_file`, :meth:`prepare_queue`) as units of a distributed job:
        findings are kept whole in :attr:`raw` and records are not joined here."""
        self.raw = []
        self.window = None
        self._worker.shutdown(wait=False)
        return self

    def past_end(self, file, offset, what: str, phy: int, end: int) -> None:
        """``what`` (a queue's unit) points at ``phy``, at or past the end of the log: the next
        start cuts it (``CQ_BEYOND_END``), or keeps it where its recovery does not truncate the
        queues (``CQ_PAST_END``: a writer whose truncation compares a lower dispatch progress)."""
        if self.queues_truncated:
            self.add("CQ_BEYOND_END", ERROR, file, offset, f"{what} points at {phy}, at or past the end of the log ({end}): the next start cuts it")
        else:
            self.add("CQ_PAST_END", ERROR, file, offset, f"{what} points at {phy}, at or past the end of the log ({end}): the next start keeps it "
                     f"(its queues are not truncated: the lowest dispatch progress, {self.dispatch_progress} or lower, is below the end)")

    def add(self, kind, severity, file, offset, message, phy: int | None = None) -> None:
        """Report a finding; ``phy``: the log position a finding of the walk is about
        (those past the end of the log may turn out to be dead bytes, see
        :meth:`_dead_bytes`)."""
        if self.raw is not None:
            self.raw.append((Finding(kind, severity, str(file), offset, message), phy))
            return
        with self._lock:  # the reading thread and the worker both report
            past = phy is not None and self.stopped and phy >= self.walk_end
            key = (kind, str(file))
            if self._listed[key] >= LISTED_PER_FILE:
                self._unlisted.setdefault(key, [severity, 0])[1] += 1
                if past:
                    self._past_unlisted[key] += 1
                return
            self._listed[key] += 1
            if past:
                self._past.add(len(self.report.findings))
            self.report.findings.append(Finding(kind, severity, str(file), offset, message))

    def _room(self, kind, file) -> bool:
        return self._listed[(kind, str(file))] < LISTED_PER_FILE

    def _dead_bytes(self) -> None:
        """Where the walk stopped at damage in a store whose last exit was clean and
        whose queues and index hold nothing at or past that point, the rest is dead
        bytes (StoreReader.dead_past): what a recovery that did not zero the cut
        bytes leaves, or garbage after a clean shutdown.  RocketMQ's walk stops there
        every time and serves nothing from them; they are reported once, as one
        finding, instead of as damage (and nothing beyond is walked as records)."""
        if not (self.stopped_by_damage and self._past and self.store.dead_past(self.walk_end)):
            return
        self.report.findings = [f for i, f in enumerate(self.report.findings) if i not in self._past]
        for key, n in self._past_unlisted.items():
            self._unlisted[key][1] -= n
        self._unlisted = {k: v for k, v in self._unlisted.items() if v[1] > 0}
        self.report.findings.append(self.dead_bytes_finding())
        self.report.stats.update(dead_bytes_from=self.walk_end)

    def dead_bytes_finding(self) -> Finding:
        last = None
        for f, _, (_, hi) in nonzero_past(self.store.commitlog.queue.files, self.walk_end):
            last = (str(f.path), hi)
        file, fpos = self._where(self.walk_end)
        upto = f" up to {last[0]} @ {last[1]}" if last else ""
        return Finding("DEAD_BYTES", WARNING, file, fpos,
            f"the log ends here (RocketMQ's walk stops at {self.walk_end}); the non-zero bytes after it{upto} are not records of the log: "
            "the last exit was clean and no queue or index entry points at or past here (left by a recovery that did not zero them, or "
            "garbage; `rmqlab salvage` reads any records in them)")

    def _unlisted_findings(self) -> None:
        for (kind, file), (severity, n) in self._unlisted.items():
            self.report.findings.append(Finding(kind, severity, file, None, f"and {n} more {kind} finding(s) in this file (the first {LISTED_PER_FILE} are listed)"))

    def _where(self, phy: int) -> tuple[str, int | None]:
        f = self.store.commitlog.queue.find(phy)
        return (str(f.path), phy - f.file_from_offset) if f is not None else (str(self.store.commitlog.directory), phy)

    def _queue_key(self, topic_codes: np.ndarray, topics: list[str], queue_id: np.ndarray) -> np.ndarray:
        remap = np.asarray([self._topic(t) for t in topics] or [0], np.int64)
        return (remap[topic_codes] << 32) | (queue_id & 0xFFFFFFFF)

    def _key_of(self, topic: str, queue_id: int) -> int:
        """The key of one queue, as :meth:`_queue_key` makes the records' keys."""
        return int(self._queue_key(np.zeros(1, np.int64), [topic], np.array([queue_id], np.int64))[0])

    def _topic(self, t: str) -> int:
        code = self.topics.get(t)
        if code is None:
            code = self.topics[t] = len(self.topic_names)
            self.topic_names.append(t)
        return code

    def _queue_of(self, key: int) -> tuple[str, int]:
        """(topic, queue id) of a queue key (:meth:`_queue_key`)."""
        return self.topic_names[key >> 32], int(np.int32(np.uint32(key & 0xFFFFFFFF)))

    def _queue_name(self, key: int) -> str:
        return "{}/{}".format(*self._queue_of(key))

    # -- files ------------------------------------------------------------------------------
    def check_layout(self) -> None:
        for p in self.store.problems:
            self.add("LAYOUT", ERROR, p.file, p.offset, p.message)
        for p in self.store.commitlog.queue.ignored:
            if p.stat().st_size == 0:
                self.add("EMPTY_FILE", INFO, p, None, "zero-length last file; RocketMQ's loader deletes it")
            else:
                self.add("STRAY_FILE", WARNING, p, None, "not a 20-digit offset name; RocketMQ ignores it")

    # -- consume queues: what each holds, before the log is read -------------------------------------
    def prepare_queues(self) -> None:
        min_off = self.store.commitlog.min_offset
        lay = self.store.layout
        try:
            qids = self.store.queue_ids()
        except RocksDBUnavailable as err:  # not damage: the binding is missing here
            self.add("NOT_CHECKED", INFO, err.file, None, f"{err.message}; the consume queues are not checked")
            self.queues_unreadable = True
            return
        except StoreFormatError as err:  # a RocksDB consume queue RocksDB cannot open: the log is still checked
            self.add("LAYOUT", ERROR, err.file, err.offset, err.message)
            self.queues_unreadable = True
            return
        for qid in qids:
            if lay.apart_from_join(qid.topic):
                continue  # reported once by check_recognised, or checked by check_lmq_queues
            self.prepare_queue(qid, min_off)

    def prepare_queue(self, qid, min_off: int) -> "_Queue | None":
        """One consume queue: its valid range and the entries in it (kept for the join
        with the log), valid-looking entries after its end; None when its files are
        not a queue (a LAYOUT finding)."""
        try:
            cq = self.store.consume_queue(qid.topic, qid.queue_id)
        except StoreFormatError as err:
            self.add("LAYOUT", ERROR, err.file, err.offset, err.message)
            return None
        key = self._key_of(qid.topic, qid.queue_id)
        if cq.slot_end <= cq.first_slot_offset:  # no unit (no file, or an empty RocksDB range)
            Q = _Queue(qid, cq, key, 0, 0, [])
            self.queues.append(Q)
            return Q
        lo, hi = cq.valid_range(min_off)
        parts = []
        ext = None
        for q0, e in cq.parts(lo, hi):
            addr = np.flatnonzero(e["tags_code"] <= EXT_MAX_ADDR)
            if len(addr):  # ConsumeQueueExt: these tagsCodes are ext addresses; the ext unit holds the tagsCode
                ext = ext or self.store.consume_queue_ext(qid.topic, qid.queue_id)
                e = e.copy()
                if ext is None:
                    file, fpos = self._cq_pos(cq, q0 + int(addr[0]))
                    self.add("CQ_EXT_MISSING", ERROR, file, fpos, f"{qid}: {len(addr)} unit(s) hold ext addresses (enableConsumeQueueExt) and there is no "
                             f"{CONSUMEQUEUE_EXT_DIR}/{qid.topic}/{qid.queue_id}/ to read their tagsCodes from")
                else:
                    codes, bad = ext.tags_codes(e["tags_code"][addr])
                    e["tags_code"][addr] = codes
                    for j, why, efile, eoff in bad[: LISTED_PER_FILE + 1]:
                        file, fpos = self._cq_pos(cq, q0 + int(addr[j]))
                        self.add("CQ_EXT_UNIT", ERROR, file, fpos, f"{qid} entry {q0 + int(addr[j])}: its ext unit cannot be read: {efile} @ {eoff}: {why}")
            phy = e["commitlog_offset"]
            ascending = bool((np.diff(phy.astype(np.int64)) >= 0).all()) if len(phy) > 1 else True
            parts.append((q0, e, ascending))
            self.n_cq_entries += int((e["size"] != PRE_BLANK_SIZE).sum())
        Q = _Queue(qid, cq, key, lo, hi, parts)
        self.queues.append(Q)
        self.queue_end[key] = hi
        # valid-looking entries after the first invalid one (stale or torn)
        stale, first = 0, None
        for q0, e in cq.parts(hi):
            valid = (e["commitlog_offset"] >= 0) & (e["size"] > 0)
            if valid.any():
                stale += int(valid.sum())
                first = q0 + int(np.argmax(valid)) if first is None else first
        if stale:
            file, fpos = self._cq_pos(cq, first)
            self.add("CQ_STALE_ENTRIES", WARNING, file, fpos, f"{qid}: {stale} valid-looking entries after the end of the queue (entry {hi}); RocketMQ ignores them")
        return Q

    @staticmethod
    def _cq_pos(cq, q: int) -> tuple[str, int | None]:
        return cq.where(q)

    # -- index files: each on its own, before the log is read ----------------------------------------
    def prepare_index(self) -> None:
        self.index_problems()
        for f in self.store.index.files:
            self.check_index_file(f)

    def index_problems(self) -> None:
        for err in self.store.index.problems:  # left out; the other files are checked
            self.add("LAYOUT", ERROR, err.file, err.offset, err.message)

    def check_index_file(self, f) -> "_Index":
        """One index file on its own: header, slots, chains (which entries a lookup
        reaches), entries; the file as the join with the log needs it."""
        slots_n = self.cfg.max_hash_slot_num
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
        for s in np.flatnonzero((slots < 0) | (slots >= count))[: LISTED_PER_FILE + 1].tolist():
            self.add("INDEX_SLOT", ERROR, path, slot_position(s), f"slot {s} holds {int(slots[s])}, outside [0, indexCount={count})")
        ents = f.entries()[:count]
        prev = ents["prev_index"].astype(np.int32)
        forward = []  # entries whose prevIndex does not point back (chunked: no per-entry temporaries)
        for c in range(1, count, 1 << 20):
            part = prev[c : c + (1 << 20)]
            forward.extend((np.flatnonzero((part >= np.arange(c, c + len(part), dtype=np.int32)) | (part < 0))[: LISTED_PER_FILE + 1] + c).tolist())
        for i in forward[: LISTED_PER_FILE + 1]:
            self.add("INDEX_CHAIN", ERROR, path, entry_position(slots_n, i), f"entry {i} has prevIndex {int(prev[i])}: it must point back, to a smaller number")
        for i in np.flatnonzero(ents["time_diff"][1:] < 0)[: LISTED_PER_FILE + 1].tolist():
            self.add("INDEX_ENTRY", ERROR, path, entry_position(slots_n, i + 1), f"entry {i + 1} has a negative timeDiff {int(ents['time_diff'][i + 1])}")
        # every chain walked once (compiled): which slot reaches each entry, cycles
        owner, cycles, n_cycles = kernels.index_chains(slots, prev, count, LISTED_PER_FILE)
        del prev
        for s, e in cycles.tolist():
            self.add("INDEX_CYCLE", ERROR, path, entry_position(slots_n, e), f"chain of slot {s} returns to entry {e}")
        reached = owner >= 0
        # a chunk at a time: a full file's 20 M entries as whole-file temporaries were
        # ~300 MiB at once, the largest part of verify's memory
        wrong: list[int] = []
        for c in range(0, count, 1 << 20):
            if len(wrong) > LISTED_PER_FILE:
                break
            o = owner[c : c + (1 << 20)]
            kh = ents["key_hash"][c : c + (1 << 20)].astype(np.int32)
            wrong.extend((np.flatnonzero((o >= 0) & (kh % slots_n != o))[: LISTED_PER_FILE + 1] + c).tolist())
        kh = ents["key_hash"]
        for e in wrong[: LISTED_PER_FILE + 1]:
            self.add("INDEX_SLOT_MISMATCH", ERROR, path, entry_position(slots_n, e), f"entry {e} (hash {int(kh[e])}) is in the chain of slot {int(owner[e])}, its hash belongs to slot {int(kh[e]) % slots_n}")
        del owner, kh, wrong
        orphans = np.flatnonzero(~reached[1:]) + 1
        if len(orphans):
            self.add("INDEX_ORPHAN", WARNING, path, entry_position(slots_n, int(orphans[0])), f"{len(orphans)} entries are not reachable from any slot (first: {int(orphans[0])})")
        phy = ents["phy_offset"][1:]
        order = None
        if len(phy) > 1 and not all(bool((np.diff(phy[i : i + (1 << 20) + 1].astype(np.int64)) >= 0).all()) for i in range(0, len(phy) - 1, 1 << 20)):
            order = np.argsort(phy.astype(np.int64), kind="stable") + 1
        ix = _Index(f, count, np.packbits(reached), order)
        self.indexes.append(ix)
        self.n_index_entries += count - 1
        self.index_end = int(h.end_phy_offset)
        return ix

    # -- the log, streamed --------------------------------------------------------------------------
    def check_commitlog(self) -> None:
        files = self.store.commitlog.queue.files
        done = 0  # bytes of the files before this one
        for idx, f in enumerate(files):
            if idx:
                done += len(files[idx - 1].buf)
                self.progress.update(done, self.n_records)
            if self.stopped and nonzero_extent(f.path, 0) is None:
                self.preallocated(f)
                continue
            self.walk_file(f, idx == len(files) - 1, done)
        self._stop(self.walk_end)
        self._flush_window(final=True)
        self._wait()
        self.report.stats.update(records=self.n_records, log_end=self.end, walk_end=self.walk_end, commitlog_files=len(files))

    def preallocated(self, f) -> None:
        """A file after the end of the log that holds only zeros."""
        kind = "PREALLOCATED_FILE" if len(f.buf) == (self.store.commitlog.mapped_file_size or 0) else "EMPTY_FILE"
        self.add(kind, INFO, str(f.path), None, "file after the end of the log holds only zeros (pre-allocated); recovery deletes it")

    def walk_file(self, f, last_file: bool, done: int = 0) -> None:
        """The records of one commitlog file, as RocketMQ's walk reads them and on past
        any damage: each record's own checks, then (unless checking single files) into
        the window joined with the queues and the index; where the log ends."""
        if isinstance(self.store.commitlog, DLedgerCommitLog):
            self.walk_dledger_file(f, last_file, done)
            return
        a = np.frombuffer(f.buf, np.uint8)
        path = str(f.path)
        base = f.file_from_offset
        expected = base  # where the next record of the chain starts
        last_record = None  # in-file position of the last record read
        damaged_at = None  # in-file position of the damage the scan resynchronises after
        ended = False  # a BLANK or the zero tail ended this file
        batches = scan_range(a, file_base=base, file=path, mode="lenient", include_body=False, columns=_COLUMNS, java_properties=DispatchColumns.JAVA_PROPERTIES,
                             data_end=f.data_end)
        if self.on_batch is not None:
            batches = _told(batches, functools.partial(self.on_batch, base, len(a)))
        try:
            for piece, special in _pieces(batches):
                pos = _ints(piece, "physical_offset")
                if pos[0] != expected and expected is not None:
                    if damaged_at is None:  # zeros where a record should start: the zero tail
                        self._torn_last_record(a, last_record, path, base)
                        self._zero_tail(a, expected - base, path, base)
                        ended = True
                        break
                if damaged_at is not None and expected is None:
                    self.add("RESYNC", INFO, path, int(pos[0]) - base, f"walk resumed at the next provable record, {int(pos[0]) - base - damaged_at} bytes after the damage", phy=int(pos[0]))
                    for z0, z1 in zero_runs(a, damaged_at, int(pos[0]) - base):
                        self.add("ZEROED_RANGE", INFO, path, z0, f"bytes [{z0}, {z1}) of this file ({z1 - z0} bytes) are zero inside the damaged range: "
                                 "a page or block zeroed (by a crash, the disk, or a hand); the records it held are lost", phy=base + z0)
                    damaged_at = None
                if special:  # a BLANK or a damage row
                    row = piece.to_pylist()[0]
                    p = row["physical_offset"] - base
                    if row["error"] is not None:
                        self._stop(base + p, by_damage=True)
                        self.add(row["kind"], ERROR, path, p, damage_detail(row["error"], row["kind"]), phy=base + p)
                        damaged_at, expected = p, None
                    else:  # BLANK
                        left = len(a) - p
                        if row["total_size"] != left:
                            self.add(BAD_BLANK, WARNING, path, p, f"BLANK says {row['total_size']} bytes are left, the file has {left}", phy=base + p)
                        if last_file:
                            self._stop(base + len(a))
                        ended = True
                    continue
                self._messages(piece, a, pos, path, base)
                expected = int(pos[-1]) + int(_ints(piece, "total_size")[-1])
                last_record = int(pos[-1]) - base
                self.progress.update(done + expected - base, self.n_records)
                if not self.stopped:
                    self.walk_end = expected
        finally:
            batches.close()
        if ended:
            return
        if damaged_at is not None:  # no provable record after the damage
            self._tail(damaged_at, path, base, after_damage=True)
        elif expected is not None and expected - base < len(a):
            self._torn_last_record(a, last_record, path, base)
            self._zero_tail(a, expected - base, path, base)
        elif last_file:
            self._stop(self.walk_end)

    def walk_dledger_file(self, f, last_file: bool, done: int = 0) -> None:
        """One DLedger data file: its entries as ``DLedgerMmapFileStore.recover`` walks
        them (header, ``pos``, sizes, index one more each entry, term never lower; the
        first that fails ends the log, as DLedger's recovery truncates there), then each
        entry's record through the same checks and joins as a commitlog record; past
        damage, on from the next entry header (RESYNC), as a commitlog walk goes on."""
        log = self.store.commitlog
        a = np.frombuffer(f.buf, np.uint8)
        path, base = str(f.path), f.file_from_offset
        segments = log.segments_of(f, chained=not self.stopped)
        if not self.stopped:  # the entries DLedger's recovery keeps; what follows is walked on, as a commitlog's is
            self.check_dledger_file(base, segments[0])
        for n, w in enumerate(segments):
            if n:
                gap = int(w.pos[0]) if len(w.pos) else w.end
                self.add("RESYNC", INFO, path, gap, f"walk resumed at the next DLedger entry header, {gap - segments[n - 1].problem[0]} bytes after the damage", phy=base + gap)
            if not self._dledger_records(f, w, a, path, base, done):
                return
            end = base + w.end
            if w.problem is not None:
                # DLedgerMmapFileStore.recover walks from the third-to-last data file (or an
                # earlier one when that file's first entry fails its index check)
                late = log.queue.index_of(f) >= len(log.queue.files) - 3
                why = ("" if self.stopped else "; DLedger's recovery ends the log here" if late else
                       "; the walk ends here, but DLedger's recovery starts at the third-to-last data file and does not check this one")
                self.add(DLEDGER_ENTRY, ERROR, path, w.problem[0], w.problem[1] + why, phy=base + w.problem[0])
                self._stop(end, by_damage=True)
            elif w.blank:
                left = len(a) - w.end
                if w.blank_size != left:
                    self.add(BAD_BLANK, WARNING, path, w.end, f"DLedger blank says {w.blank_size} bytes are left, the file has {left}", phy=end)
                if not self.stopped:
                    self.walk_end = base + len(a)
                if last_file:
                    self._stop(base + len(a))
            else:  # a zero size: the end of the log
                if not self.stopped:
                    self.walk_end = end
                self._stop(end)
                self._tail(w.end, path, base, after_damage=False)
        last = segments[-1]
        if last.problem is not None:  # no entry header after the damage
            self._tail(last.problem[0], path, base, after_damage=True)

    def _dledger_records(self, f, w, a: np.ndarray, path: str, base: int, done: int) -> bool:
        """The records of one run of entries through the record checks and joins, and the
        entries' stored body CRCs; False when a record inside an entry is damaged."""
        from ..scan.decode import decode_positions

        P = w.record_positions
        try:
            if len(P):
                for batch in decode_positions(a, P, file_base=base, file=path, include_body=False, columns=_COLUMNS,
                                              java_properties=DispatchColumns.JAVA_PROPERTIES, crc_mismatch="flag"):
                    pos = _ints(batch, "physical_offset")
                    sizes = _ints(batch, "total_size")
                    bodies = w.record_sizes[np.searchsorted(P, pos - base)]
                    for r in np.flatnonzero(sizes != bodies).tolist():
                        self.add(DLEDGER_ENTRY, ERROR, path, int(pos[r]) - base - ENTRY_HEADER_SIZE,
                                 f"the entry's body is {int(bodies[r])} bytes, its record says totalSize {int(sizes[r])}", phy=int(pos[r]))
                    self._messages(batch, a, pos, path, base)
                    self.progress.update(done + int(pos[-1]) - base, self.n_records)
        except RecordError as err:
            self.add(err.kind, ERROR, path, err.offset, damage_detail(err.message, err.kind), phy=base + (err.offset or 0))
            self._stop(base + (err.offset or 0) - ENTRY_HEADER_SIZE, by_damage=True)
            return False
        for i in np.flatnonzero(w.body_crc != 0).tolist():  # DLedger 0.3.x stores 0: only a stored CRC is checked
            body = bytes(a[w.pos[i] + ENTRY_HEADER_SIZE : w.pos[i] + w.size[i]])
            computed = zlib.crc32(body)
            if (computed - (1 << 32) if computed >= 1 << 31 else computed) != int(w.body_crc[i]):
                self.add(DLEDGER_ENTRY, ERROR, path, int(w.pos[i]), f"entry {int(w.index[i])} body CRC stored {int(w.body_crc[i])}, computed {computed}", phy=base + int(w.pos[i]))
        return True

    def check_dledger_file(self, base: int, w) -> None:
        """One data file's entries against their index units (``DLedgerMmapFileStore.recover``
        compares magic, pos, size, index and term), read for those entries only."""
        if not len(w.index):
            return
        log = self.store.commitlog
        idx_path = str(log.index_directory)
        self.dledger_count += len(w.index)
        self.dledger_last_index = int(w.index[-1])
        first = int(w.index[0])
        units = log.index_units(first, int(w.index[-1]) + 1)
        rel = w.index - first
        ok = rel < len(units)  # indexes run one by one inside a walk: unit i - first is entry i's
        missing = np.flatnonzero(~ok)
        if len(missing):
            i = int(missing[0])
            self.add("DLEDGER_INDEX", ERROR, idx_path, int(w.index[i]) * INDEX_UNIT_SIZE,
                     f"{len(missing)} entries have no index unit (first: entry {int(w.index[i])}); DLedger's recovery rewrites the index from the entries")
        sel = np.flatnonzero(ok)
        u = units[rel[sel]]
        bad = (u["magic"] != MAGIC_1) | (u["pos"] != base + w.pos[sel]) | (u["size"] != w.size[sel]) | (u["index"] != w.index[sel]) | (u["term"] != w.term[sel])
        for k in np.flatnonzero(bad).tolist():
            i = sel[k]
            got = units[int(rel[i])]
            self.add("DLEDGER_INDEX", ERROR, idx_path, int(w.index[i]) * INDEX_UNIT_SIZE,
                     f"unit {int(w.index[i])} says pos {int(got['pos'])} size {int(got['size'])} index {int(got['index'])} term {int(got['term'])} magic {int(got['magic'])}; "
                     f"the entry is at {base + int(w.pos[i])}, {int(w.size[i])} bytes, term {int(w.term[i])}; DLedger's recovery rewrites the index from there")

    def check_dledger(self) -> None:
        """After the walk (:meth:`check_dledger_file` for each file up to the end of the
        log): index units past the last entry, and the checkpoint's committedIndex."""
        log = self.store.commitlog
        d = log.dledger_dir
        last_index = self.dledger_last_index
        live = log.index_units_written_from(last_index + 1)
        if live:
            self.add("DLEDGER_INDEX", WARNING, str(log.index_directory), (last_index + 1) * INDEX_UNIT_SIZE,
                     f"{live} index unit(s) past the last entry ({last_index}): DLedger's recovery truncates the index there")
        cp = log.checkpoint()
        committed = cp.get(COMMITTED_INDEX_KEY) if cp else None
        if committed is not None and committed.lstrip("-").isdigit():
            c = int(committed)
            if c > last_index:
                self.add("DLEDGER_CHECKPOINT", WARNING, d / "checkpoint", None, f"committedIndex {c} is past the last entry {last_index}: entries the checkpoint counted are gone")
            elif c < last_index:
                self.add("DLEDGER_CHECKPOINT", INFO, d / "checkpoint", None,
                         f"committedIndex {c} is behind the last entry {last_index}: the entries after it are served once a leader commits them (DLedgerCommitLog.getData)")
        self.report.stats.update(dledger_entries=self.dledger_count, dledger_last_index=last_index)

    def _stop(self, at: int, by_damage: bool = False) -> None:
        if not self.stopped:
            self.stopped = True
            self.walk_end = at
            self.stopped_by_damage = by_damage

    def _torn_last_record(self, a: np.ndarray, p: int | None, path: str, base: int) -> None:
        """TORN_RECORD: the last record before the zero tail ends in zero bytes inside
        its properties, the mark of a write torn at its end.  Java's recovery accepts
        it (no CRC covers the properties unless they carry ``__CRC32#``) and serves the
        record with the NULs in a property value."""
        if p is None or self.stopped:
            return
        try:
            rec = decode_record(a, p, file=path, file_base=base, check_crc=False, read_body=False)
        except RecordError:
            return
        raw = rec.properties_raw
        zeros = len(raw) - len(raw.rstrip(b"\0"))
        if zeros:
            self.add("TORN_RECORD", WARNING, path, p, f"the last record of the log ends in {zeros} zero byte(s) inside its properties (a write torn at its end); "
                     "RocketMQ accepts and serves it, the NULs in a property value", phy=base + p)

    def _zero_tail(self, a: np.ndarray, p: int, path: str, base: int) -> None:
        self._stop(base + p)
        self._tail(p, path, base, after_damage=False)

    def _tail(self, pos: int, path: str, base: int, after_damage: bool) -> None:
        ext = nonzero_extent(Path(path), pos)
        if ext is None:
            return
        lo, hi = ext
        what = "after the damaged record" if after_damage else "after the end of the log (zero tail)"
        self.add("TAIL_BYTES", WARNING, path, lo, f"{hi - lo} bytes up to {hi} are not zero {what}: left behind by truncation or a torn write (see `rmqlab salvage`)", phy=base + lo)

    def _messages(self, batch, a: np.ndarray, pos: np.ndarray, path: str, base: int) -> None:
        """Checks of one batch of message rows (every record found, also past the end
        of the log), then into the window for the checks against queues and index."""
        n = len(pos)
        size = _ints(batch, "total_size")
        kind = batch.column("kind")
        # compared in Arrow: a batch's kinds as Python strings cost ~1.2 ms, these ~0.15
        crc_bad = np.flatnonzero(np.asarray(ac.fill_null(ac.not_equal(kind, KIND_MESSAGE), True).to_numpy(zero_copy_only=False), bool))
        for r in crc_bad.tolist():
            p = int(pos[r]) - base
            rec = decode_record(a, p, file=path, file_base=base, check_crc=True, read_body=False)
            if kind[r].as_py() == BODY_CRC:  # the decoder flags it only where there is a body
                self._stop(int(pos[r]), by_damage=True)
                self.add(BODY_CRC, ERROR, path, p, f"body CRC stored {rec.body_crc}, computed {rec.body_crc_computed}", phy=int(pos[r]))
            else:
                self.add(PROPERTY_CRC, ERROR, path, p, f"__CRC32# says {rec.property_crc}, computed {rec.property_crc_computed}", phy=int(pos[r]))
        stored = field_at(a, pos - base + PHYSICAL_OFFSET_AT, ">i8")
        for r in np.flatnonzero(stored != pos).tolist():
            self.add("PHYSICAL_OFFSET", ERROR, path, int(pos[r]) - base, f"record says physicalOffset {int(stored[r])}, it is at {int(pos[r])}", phy=int(pos[r]))
        self.n_records += n
        w = self.window
        if w is None:  # a file checked on its own: the joins are the caller's
            return
        w.batches.append(batch)
        w.phy.append(pos)
        w.size.append(size)
        w.rows += n
        if w.rows >= WINDOW_ROWS:
            self._flush_window(final=False)

    # -- a window of records against the queues and the index --------------------------------------
    def _flush_window(self, final: bool) -> None:
        """Hand the window to the worker: it reads what dispatch would of each record
        and joins them with the queues and the index while this thread reads the next
        window (one window waits at most: memory stays at two windows)."""
        w, self.window = self.window, _Window()
        lo = self.window_lo
        if not w.rows and not final:
            return
        hi = self.window_hi if final else int(w.phy[-1][-1] + w.size[-1][-1])
        self.window_lo = hi
        # the end of the log: the next start's, known before the walk; else as the walk knows it now
        end = self.log_end if self.log_end is not None else self.walk_end if self.stopped else None
        self._wait()
        self._pending = self._worker.submit(self._join_window, lo, hi, end, w)

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def _join_window(self, lo, hi, end, w: "_Window") -> None:
        cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64))
        phy, size = cat(w.phy), cat(w.size)
        qkey, qoff, qnum, tags, sys_flag, pair_row, pair_hash, pair_opt = [], [], [], [], [], [], [], []
        rows = 0
        all_cols = []
        for batch in w.batches:
            cols = DispatchColumns.from_arrow(batch, self.delay_table)
            all_cols.append(cols)
            self.max_store_ts = max(self.max_store_ts, int(cols.store_timestamp.max()))
            qkey.append(self._queue_key(cols.topic_code, cols.topics, cols.queue_id))
            qoff.append(cols.consume_queue_offset)
            qnum.append(cols.batch_sizes())
            tags.append(cols.tags_code)
            sys_flag.append(cols.sys_flag)
            if self.index_written:
                rec, hashes, is_tag = cols.index_key_hashes(np.flatnonzero(goes_to_index(cols.sys_flag)), tags=self.index_tags != "none", tag_mask=True,
                                                            uniq_type=self.uniq_type)
                pair_row.append(rec + rows)
                pair_hash.append(hashes)
                pair_opt.append(is_tag if self.index_tags == "some" else np.zeros(len(rec), bool))  # a key it need not find
            rows += len(cols)
        w.batches = []
        qkey, qoff, qnum, tags, sys_flag, pair_row, pair_hash = (cat(x) for x in (qkey, qoff, qnum, tags, sys_flag, pair_row, pair_hash))
        pair_opt = np.concatenate(pair_opt) if pair_opt else np.zeros(len(pair_row), bool)
        # records are in log order, except where a resynchronised walk went back (a
        # stale copy): the joins need them sorted
        if len(phy) > 1 and not (phy[1:] > phy[:-1]).all():
            order = np.argsort(phy, kind="stable")
            phy, size, qkey, qoff, qnum, tags, sys_flag = (x[order] for x in (phy, size, qkey, qoff, qnum, tags, sys_flag))
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            pair_row = rank[pair_row]
        else:
            rank = None

        def other_uniq_form():
            """(row, hash) of each record's UNIQ_KEY in the form the rules here do not
            expect (rocketmq-rust's topic#U#uniq under Java's, Java's under rust's),
            sorted by row: asked only when entries match no key."""
            other = "" if self.uniq_type else "U#"
            rows_, hs, base = [], [], 0
            for cols in all_cols:
                eligible = np.flatnonzero(goes_to_index(cols.sys_flag))
                r_, h_ = cols.index_key_hashes(eligible, uniq_type=other)
                rows_.append(r_ + base)
                hs.append(h_)
                base += len(cols)
            r_, h_ = cat(rows_), cat(hs)
            if rank is not None:
                r_ = rank[r_]
            o = np.argsort(r_, kind="stable")
            return r_[o], h_[o]

        in_cq = np.flatnonzero(goes_to_consume_queue(sys_flag))
        by_queue = in_cq[stable_argsort(qkey[in_cq])]  # by queue, log order within
        self._queue_offsets(end, by_queue, phy, qkey, qoff, qnum)
        self._join_queues(lo, hi, end, by_queue, phy, size, qkey, qoff, tags, sys_flag)
        if self.indexes or self.index_written:
            self._join_index(lo, hi, end, phy, pair_row, pair_hash, pair_opt, other_uniq_form)

    def _queue_offsets(self, end, order, phy, qkey, qoff, qnum) -> None:
        """QUEUE_OFFSET_GAP (consecutive per queue, in log order: a record takes one
        offset, an inner batch its INNER_NUM) and each queue's last offset taken
        (before the end of the log), for CQ_BEHIND and CQ_MISSING_QUEUE."""
        if not len(order):
            return
        k, q, p = qkey[order], qoff[order], phy[order]
        last = q + qnum[order] - 1  # the last queue offset each record takes
        starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
        ends = np.concatenate((starts[1:], [len(k)]))
        gap = np.zeros(len(k), bool)
        gap[1:] = (k[1:] == k[:-1]) & (q[1:] != last[:-1] + 1)
        for s, e in zip(starts.tolist(), ends.tolist()):
            key = int(k[s])
            prev = self.queue_prev.get(key)
            if prev is not None and int(q[s]) != prev[0] + 1:
                gap[s] = True
            elif prev is None:
                self.queue_first[key] = (int(q[s]), int(p[s]))
            for i in np.flatnonzero(gap[s:e]).tolist():
                i += s
                before = (int(last[i - 1]), int(p[i - 1])) if i > s else prev
                file, fpos = self._where(int(p[i]))
                self.add("QUEUE_OFFSET_GAP", ERROR, file, fpos, f"{self._queue_name(key)} queue offset {int(q[i])} follows {before[0]} (record at {before[1]})", phy=int(p[i]))
            self.queue_prev[key] = (int(last[e - 1]), int(p[e - 1]))
            end_at = self.queue_end.get(key)
            if end_at is not None and key not in self.first_missing:
                hit = np.flatnonzero((q[s:e] <= end_at) & (last[s:e] >= end_at))
                if len(hit):
                    self.first_missing[key] = int(p[s + int(hit[0])])
            live = np.flatnonzero(p[s:e] < end) if end is not None else np.arange(e - s)
            if len(live):
                j = s + int(live[np.argmax(last[s:e][live])])
                cur = self.queue_last.get(key)
                if cur is None or int(last[j]) > cur[0]:
                    self.queue_last[key] = (int(last[j]), int(p[j]))

    def _join_queues(self, lo, hi, end, order, phy, size, qkey, qoff, tags, sys_flag) -> None:
        """Each queue entry pointing into the window against the record there: one
        merge per queue of its entries with its records (both ascending)."""
        n = len(phy)
        keys, starts = sorted_unique(qkey[order], return_index=True)  # (order sorts by queue)
        ends = np.append(starts[1:], len(order))
        groups = {k: (s, e) for k, s, e in zip(keys.tolist(), starts.tolist(), ends.tolist())}
        for Q in self.queues:
            s, e_ = groups.get(Q.key, (0, 0))
            group = order[s:e_]
            group_phy = phy[group]
            for q0, e, ascending in Q.parts:
                col = e["commitlog_offset"]
                if ascending:
                    i0, i1 = _bisect(col, lo), _bisect(col, hi)
                    if i0 == i1:
                        continue
                    sel = np.arange(i0, i1)
                    ent = e[i0:i1]
                else:
                    sel = np.flatnonzero((col >= lo) & (col < hi))
                    if not len(sel):
                        continue
                    ent = e[sel]
                blank = ent["size"] == PRE_BLANK_SIZE
                if blank.any():
                    sel, ent = sel[~blank], ent[~blank]
                off = ent["commitlog_offset"].astype(np.int64)
                r = np.full(len(off), -1, np.int64)
                if ascending and len(group):
                    at = kernels.merge_find(group_phy, off)
                    r[at >= 0] = group[at[at >= 0]]
                miss = np.flatnonzero(r < 0)
                if len(miss) and n:  # a record of another queue, or none
                    rr = np.minimum(np.searchsorted(phy, off[miss]), n - 1)
                    r[miss] = np.where(phy[rr] == off[miss], rr, -1)
                found = r >= 0
                qs = q0 + sel
                # a unit at or past the end of the log is cut by the next start, whether or
                # not a readable record still lies there
                beyond = (off >= end) if end is not None else np.zeros(len(off), bool)
                for i in np.flatnonzero(~found | beyond).tolist():
                    q, o = int(qs[i]), int(off[i])
                    file, fpos = self._cq_pos(Q.cq, q)
                    if beyond[i]:
                        self.past_end(file, fpos, f"{Q.qid} entry {q}", o, end)
                    else:
                        self.add("CQ_DANGLING", ERROR, file, fpos, f"{Q.qid} entry {q} points at {o}, where no record starts")
                found &= ~beyond
                f = np.flatnonzero(found)
                rf = r[f]
                bad_queue = qkey[rf] != Q.key
                bad_qoff = qoff[rf] != qs[f]
                bad_size = size[rf] != ent["size"][f]
                # an ext address left (its unit unreadable: CQ_EXT_* said so) is not compared as a tagsCode
                bad_tags = (tags[rf] != ent["tags_code"][f]) & (ent["tags_code"][f] > EXT_MAX_ADDR)
                bad_type = ~goes_to_consume_queue(sys_flag[rf])
                for j in np.flatnonzero(bad_queue | bad_qoff | bad_size | bad_tags | bad_type).tolist():
                    i, rr = int(f[j]), int(rf[j])
                    q = int(qs[i])
                    file, fpos = self._cq_pos(Q.cq, q)
                    if not self._room("CQ_MISMATCH", file):
                        self.add("CQ_MISMATCH", ERROR, file, fpos, "")
                        continue
                    bad = []
                    if bad_queue[j]:
                        bad.append(f"record is {self._queue_name(int(qkey[rr]))}")
                    if bad_qoff[j]:
                        bad.append(f"record's queue offset is {int(qoff[rr])}")
                    if bad_size[j]:
                        bad.append(f"size {int(ent['size'][i])} != record's {int(size[rr])}")
                    if bad_tags[j]:
                        bad.append(f"tagsCode {int(ent['tags_code'][i])} != expected {int(tags[rr])}")
                    if bad_type[j]:
                        bad.append("record is a prepared/rolled-back transaction, which never has an entry")
                    self.add("CQ_MISMATCH", ERROR, file, fpos, f"{Q.qid} entry {q} → {int(off[i])}: " + "; ".join(bad))

    def _join_index(self, lo, hi, end, phy, pair_row, pair_hash, pair_opt, other_uniq_form=None) -> None:
        """Each index entry pointing into the window: a record there whose keys hash to
        it; and each record's keys: reached by a chain (INDEX_MISSING).  An entry that
        holds the record's UNIQ_KEY in the other writer's form (``other_uniq_form``:
        rocketmq-rust's ``topic#U#uniq`` judged by Java's rules) is INDEX_UNIQ_FORM, not
        INDEX_HASH."""
        other = None
        slots_n = self.cfg.max_hash_slot_num
        if len(pair_row) > 1 and not (pair_row[1:] >= pair_row[:-1]).all():
            po = np.argsort(pair_row, kind="stable")
            pair_row, pair_hash, pair_opt = pair_row[po], pair_hash[po], pair_opt[po]
        findable = pair_opt.copy()  # keys some releases put and others do not are never missing
        for ix in self.indexes:
            ents = ix.file.entries()
            path = str(ix.file.path)
            col = ents["phy_offset"][1 : ix.count]
            if ix.order is None:
                i0, i1 = _bisect(col, lo), _bisect(col, hi)
                nums = np.arange(i0, i1) + 1
                ent = ents[i0 + 1 : i1 + 1]
            else:
                sorted_phy = col[ix.order - 1]
                i0, i1 = np.searchsorted(sorted_phy, [lo, hi])
                nums = ix.order[i0:i1]
                ent = ents[nums]
            if not len(nums):
                continue
            off = ent["phy_offset"].astype(np.int64)
            kh = ent["key_hash"].astype(np.int64)
            reached = ((ix.reached[nums >> 3] >> (7 - (nums & 7))) & 1).astype(bool)
            r, match, hit = kernels.join_keys(phy, pair_row, pair_hash, off, kh, reached)
            findable |= hit
            beyond = (off >= end) if end is not None else np.zeros(len(off), bool)
            for i in np.flatnonzero((r < 0) | beyond).tolist():
                num, o = int(nums[i]), int(off[i])
                if beyond[i]:
                    self.add("INDEX_BEYOND_END", WARNING, path, entry_position(slots_n, num), f"entry {num} points at {o}, at or past the end of the log ({end}); lookups skip it")
                else:
                    self.add("INDEX_DANGLING", ERROR, path, entry_position(slots_n, num), f"entry {num} points at {o}, where no record starts")
            unmatched = np.flatnonzero((r >= 0) & ~match)
            if len(unmatched) and other_uniq_form is not None:
                if other is None:
                    other = other_uniq_form()
                _, alt, _ = kernels.join_keys(phy, other[0], other[1], off[unmatched], kh[unmatched], reached[unmatched])
                for i in unmatched[alt].tolist():
                    num, o = int(nums[i]), int(off[i])
                    self.n_uniq_form += 1
                    if self.n_uniq_form == 1:
                        self.uniq_form_first = (path, entry_position(slots_n, num), o)
                unmatched = unmatched[~alt]
            for i in unmatched.tolist():
                num, o = int(nums[i]), int(off[i])
                if self._room("INDEX_HASH", path):
                    file, fpos = self._where(o)
                    rec = decode_record(self.store.commitlog.queue.find(o).buf, fpos, file=file, file_base=o - fpos, check_crc=False, read_body=False)
                    jp = rec.java_properties
                    keys = index_keys(rec.topic, jp.get(UNIQ_KEY), jp.get(KEYS), jp.get(TAGS) if self.index_tags != "none" else None, self.uniq_type)
                    self.add("INDEX_HASH", ERROR, path, entry_position(slots_n, num), f"entry {num} hash {int(kh[i])} matches no key of the record at {o} ({rec.topic}, keys {keys})")
                else:
                    self.add("INDEX_HASH", ERROR, path, entry_position(slots_n, num), "")
        # INDEX_MISSING: records RocketMQ indexes whose keys no chain reaches
        if not self.index_written or not len(pair_row):
            return
        rows = sorted_unique(pair_row[~findable])  # (pair_row is sorted above)
        if end is not None:
            rows = rows[phy[rows] < end]
        offs = phy[rows]
        for name, sel in (("lost", offs < self.index_end), ("pending", offs >= self.index_end)):
            got = offs[sel]
            if len(got):
                slot = self.missing[name]
                slot[0] += len(got)
                if len(slot[1]) < 5:
                    slot[1].extend(got[: 5 - len(slot[1])].tolist())

    def _index_missing(self) -> None:
        """INDEX_MISSING: records RocketMQ indexes (Java ``IndexService.buildIndex``: a
        key or UNIQ_KEY, not a ROLLBACK) whose keys no slot chain reaches, so no
        ``queryMessage`` finds them (see :func:`index_missing_message`)."""
        for name in ("lost", "pending"):
            count, first = self.missing[name]
            if count:
                file, fpos = self._where(first[0])
                self.add("INDEX_MISSING", WARNING, file, fpos, index_missing_message(name, count, first, self.index_end))

    def finish_queues(self) -> None:
        seen = set()
        for Q in self.queues:
            seen.add(Q.key)
            last = self.queue_last.get(Q.key)
            if last is not None and last[0] >= Q.hi:
                file, fpos = self._cq_pos(Q.cq, Q.hi) if Q.cq.file_count else (str(Q.cq.directory), None)
                self.add("CQ_BEHIND", WARNING, file, fpos, cq_behind_message(Q.qid, Q.hi, last[0], self.first_missing.get(Q.key)))
        lay = self.store.layout
        for key, (qoff, phy) in self.queue_last.items():
            if key not in seen and lay.rocksdb_queues and not self.queues_unreadable:
                topic, qid = self._queue_of(key)
                if not lay.apart_from_join(topic):
                    self.add("CQ_BEHIND", WARNING, str(self.root / CONSUMEQUEUE_DIR), None, f"{topic}/{qid}: the RocksDB consume queue holds no unit of it but the log holds its "
                             f"records up to queue offset {qoff} (RocksDB's writes skip the WAL: a crash leaves out what was not flushed; its dispatch progress, "
                             f"CHECKPOINT_TOPIC, is at {self.store.rocksdb.max_phy_offset()})")
                continue
            if key not in seen and not lay.rocksdb_consume_queue:
                topic, qid = self._queue_of(key)
                if lay.apart_from_join(topic):
                    continue
                most, stop = name_max(self.root), self.dispatch_stop_at
                if unmakeable(topic, most):
                    fate = f"none can be made: the topic is {len(topic.encode('utf-8'))} bytes, more than the {most} a file name may have on this filesystem, so no dispatch puts these records in a queue"
                elif stop is not None and phy >= stop:
                    fate = (f"abnormal recovery rebuilds it only from its records before {stop}, where dispatch stops for good "
                            "(the outcome says why): those after it reach no queue")
                else:
                    fate = "abnormal recovery rebuilds it"
                self.add("CQ_MISSING_QUEUE", ERROR, str(self.root / CONSUMEQUEUE_DIR / topic / str(qid)), None, f"the log holds records of {topic}/{qid} (up to queue offset {qoff}) but there is no consume queue; {fate}")
        self.report.stats.update(consume_queues=len(self.queues), cq_entries=self.n_cq_entries)
        self.report.stats.update(index_files=len(self.indexes), index_entries=self.n_index_entries)
        if self.index_written:
            self._index_missing()
        if self.n_uniq_form:
            self.report.stats.update(index_uniq_form=self.n_uniq_form)
            path, pos, phy = self.uniq_form_first
            if self.uniq_type:
                what = ("as topic#UNIQ_KEY (Java's IndexService.buildIndex form), where rocketmq-rust writes topic#U#UNIQ_KEY: "
                        "rocketmq-rust's query by unique key (index type U) does not find these records")
            else:
                what = ("as topic#U#UNIQ_KEY (rocketmq-rust's form, MessageConst::INDEX_UNIQUE_TYPE), where Java's IndexService.buildIndex writes "
                        "topic#UNIQ_KEY: a Java broker's queryMessage by UNIQ_KEY finds none of these records (rocketmq-rust's typed query does: "
                        "`rmqlab lookup --index-type U`, or read the store with --writer rocketmq-rust)")
            self.add("INDEX_UNIQ_FORM", WARNING, path, pos, f"{self.n_uniq_form} index entr(ies) hold a record's UNIQ_KEY {what}; first for the record at {phy}")

    def check_rocksdb(self) -> None:
        """The RocksDB of ``consumequeue/`` (:mod:`rmqlab.store.rocksdb_queue`).  As the
        store's queues (storeType=defaultRocksDB): keys that are not RocketMQ's, a queue
        whose units stop before the offset family's max (Java's range reads stop at the
        first missing key), a max entry that does not name its unit.  As the copy
        rocksdbCQDoubleWriteEnable keeps: every unit against the file queue's, from the
        copy's min to the file queue's max, as ``checkRocksdbCqWriteProgress`` compares
        them (``AdminBrokerProcessor.processConsumeQueuesForTopic``)."""
        lay = self.store.layout
        if not lay.rocksdb_consume_queue or self.queues_unreadable:
            return
        try:
            rdb = self.store.rocksdb
            table = rdb.offset_table()
        except RocksDBUnavailable as err:
            self.add("NOT_CHECKED", INFO, err.file, None, f"{err.message}; the RocksDB copy of the queues is not compared")
            return
        except StoreFormatError as err:
            self.add("LAYOUT", ERROR, err.file, err.offset, err.message)
            return
        where = str(self.root / CONSUMEQUEUE_DIR)
        for k, why in rdb.malformed[: LISTED_PER_FILE + 1]:
            self.add("RDB_KEY", WARNING, where, None, f"key {k.hex()}: {why}")
        if lay.rocksdb_queues:
            for Q in self.queues:
                cq, off = Q.cq, Q.cq.offsets
                if cq.gap is not None:
                    self.add("RDB_CQ_GAP", ERROR, where, None, f"{Q.qid}: no unit at queue offset {cq.gap[0]} ({cq.gap[1]} unit(s) after it); "
                             f"RocketMQ's range reads stop there although the offset family's max is {off.max[1] if off.max else None}")
                elif off.max is not None and off.max[1] + 1 > cq.slot_end:
                    self.add("RDB_CQ_GAP", ERROR, where, None, f"{Q.qid}: the offset family's max is queue offset {off.max[1]} but the units end at {cq.slot_end}")
                if off.max is not None:
                    e = cq.get(off.max[1])
                    if e is not None and e.commitlog_offset != off.max[0]:
                        self.add("RDB_CQ_MAX", ERROR, where, None, f"{Q.qid}: the offset family's max names commitlog offset {off.max[0]} at queue offset {off.max[1]}, "
                                 f"the unit there points at {e.commitlog_offset}")
            return
        for Q in self.queues:  # double write: the copy against the files RocketMQ serves
            if lay.apart_from_join(Q.qid.topic):
                continue
            if (Q.qid.topic, Q.qid.queue_id) not in table:
                if Q.hi > Q.lo:
                    self.add("RDB_CQ_BEHIND", INFO, where, None, f"{Q.qid}: the RocksDB copy has no unit of this queue (the files hold [{Q.lo}, {Q.hi})); "
                             "RocksDB's writes skip the WAL, and a crash leaves the copy behind until re-dispatch")
                continue
            kv = rdb.consume_queue(Q.qid.topic, Q.qid.queue_id)
            klo, khi = kv.valid_range(self.store.commitlog.min_offset)
            lo = max(Q.lo, klo)
            first_diff, missing = None, max(0, Q.hi - max(khi, lo))
            for q0, e in kv.parts(lo, min(Q.hi, khi)):
                for f0, fe, _ in Q.parts:
                    a, b = max(q0, f0), min(q0 + len(e), f0 + len(fe))
                    if a >= b:
                        continue
                    x, y = e[a - q0 : b - q0], fe[a - f0 : b - f0]
                    bad = np.flatnonzero((x["commitlog_offset"] != y["commitlog_offset"]) | (x["size"] != y["size"]) | (x["tags_code"] != y["tags_code"]))
                    if len(bad) and (first_diff is None or a + int(bad[0]) < first_diff[0]):
                        i = int(bad[0])
                        first_diff = (a + i, (int(x[i]["commitlog_offset"]), int(x[i]["size"]), int(x[i]["tags_code"])),
                                      (int(y[i]["commitlog_offset"]), int(y[i]["size"]), int(y[i]["tags_code"])), len(bad))
            if first_diff is not None:
                q, kvu, fu, n = first_diff
                file, fpos = self._cq_pos(Q.cq, q)
                self.add("RDB_CQ_DIFFERS", WARNING, file, fpos, f"{Q.qid}: the RocksDB copy's unit {q} is (offset, size, tagsCode) {kvu}, the file queue's {fu} "
                         f"({n} unit(s) differ in the first range compared); checkRocksdbCqWriteProgress reports this queue not ready")
            elif missing:
                self.add("RDB_CQ_BEHIND", INFO, where, None, f"{Q.qid}: the RocksDB copy ends at queue offset {khi}, the files at {Q.hi} ({missing} unit(s) not copied yet); "
                         "RocksDB's writes skip the WAL, and a crash leaves the copy behind until re-dispatch")

    def _records_at(self, phys: np.ndarray, java_properties=DispatchColumns.JAVA_PROPERTIES, columns=DispatchColumns.ARROW_COLUMNS):
        """The records starting at the physical offsets ``phys`` (sorted, unique,
        inside the log), read in bulk by position: ``(found, table)``, ``found`` a mask
        over ``phys`` and ``table`` the decoder's rows of the found ones, in order
        (``columns``, and ``java_properties`` as the Java map holds them).  A position
        where no record starts is not found; the others are still read."""
        import pyarrow as pa

        from ..scan.decode import decode_positions

        found = np.zeros(len(phys), bool)
        batches = []
        for f in self.store.commitlog.queue.files:
            base = f.file_from_offset
            P = phys[(phys >= base) & (phys < base + len(f.buf))] - base
            while len(P):
                try:
                    for b in decode_positions(f.buf, P, file_base=base, file=str(f.path), include_body=False, verify_crc=False,
                                              columns=columns, java_properties=java_properties):
                        found[np.searchsorted(phys, b.column("physical_offset").to_numpy())] = True
                        batches.append(b)
                    P = P[:0]
                except RecordError as err:  # no record at one position: the rest still read
                    P = P[P > err.offset] if err.offset is not None else P[1:]
        return found, (pa.Table.from_batches(batches) if batches else None)

    def check_message_rocksdb(self) -> None:
        """``rocksdbstore/`` (5.4+, :mod:`rmqlab.store.rocksdb_message`): every key entry
        names a record that carries it (topic, the KEYS token / TAGS / UNIQ_KEY, the
        store time and its hour: ``IndexRocksDBStore.buildIndex``), every pending half
        message a record of ``RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC`` with its real topic,
        transaction id and size (``TransMessageRocksDBStore.buildTransIndex``), every
        timer one a record with its UNIQ_KEY and size; a writer's ``lastOffsetPy`` past
        the end of the log (after a cut, ``buildIndex`` skips every record written again
        below it).  Entries past the end of the log are dead: lookups skip them."""
        from ..format.rocksdb_message import deal_time_to_hour_stamps
        from ..rules import MESSAGE_ROCKSDB_DIR

        part = next((p for p in self.store.layout.parts if p.path == MESSAGE_ROCKSDB_DIR + "/"), None)
        if part is None or part.handling != "decoded":
            return
        where = str(self.root / MESSAGE_ROCKSDB_DIR)
        try:
            db = self.store.message_rocksdb
            if db is None:
                return
            entries = list(db.index_entries())
            trans, timers = db.transactions(), db.timers()
            lasts = {"keys": db.last_offset_py(), "transactions": db.last_offset_py("trans")}
        except RocksDBUnavailable as err:
            self.add("NOT_CHECKED", INFO, err.file, None, f"{err.message}; the keys, timers and transactions kept in RocksDB are not checked")
            return
        except StoreFormatError as err:
            self.add("LAYOUT", ERROR, err.file, err.offset, err.message)
            return
        for m in db.malformed[: LISTED_PER_FILE + 1]:
            self.add("RDB_MESSAGE_KEY", WARNING, where, None, f"{m.family} family, key {m.key.hex()}: {m.why}")
        end = self.end
        for what, last in lasts.items():
            if last > end:
                self.add("RDB_PROGRESS_PAST_END", WARNING, where, None,
                         f"the RocksDB {what} are written up to offset {last}, past the end of the log {end} (a recovery cut the log after they were written): "
                         f"records written again below {last} are not added to them (buildIndex / buildTransIndex skip what lies below lastOffsetPy)")
        phys = np.unique(np.array([e.offset_py for e in entries] + [t.offset_py for t in trans] + [t.offset_py for t in timers], np.int64))
        phys = phys[(phys >= self.store.commitlog.min_offset) & (phys < end)]
        jp = (TAGS, KEYS, UNIQ_KEY, "REAL_TOPIC", "__transactionId__")
        found, table = self._records_at(phys, java_properties=jp, columns=("physical_offset", "total_size", "topic", "store_timestamp"))
        rows: dict[int, dict] = {}
        if table is not None:
            for r in table.to_pylist():
                rows[r["physical_offset"]] = r

        def judge(kind: str, name: str, off: int, checks) -> None:
            """One entry against the record at ``off``: ``checks(r)`` gives (what the
            record has, whether that disagrees with the entry)."""
            if off >= end or off < self.store.commitlog.min_offset:
                return  # dead: past the end of the log (or deleted), lookups skip it
            r = rows.get(off)
            if r is None:
                self.add(kind, ERROR, where, None, f"{name}: no record starts at offset {off}")
                return
            wrong = [what for what, bad in checks(r) if bad]
            if wrong:
                self.add(kind, ERROR, where, None, f"{name}: the record there has {', '.join(wrong)}")

        def prop(r, name):
            return r.get(JAVA_PROPERTY_PREFIX + name)

        for e in entries:
            def key_checks(r, e=e):
                carried = {"K": e.key in (prop(r, KEYS) or "").split(" "), "T": e.key == prop(r, TAGS), "U": True}[e.index_type]
                return (("topic " + r["topic"], r["topic"] != e.topic), (f"UNIQ_KEY {prop(r, UNIQ_KEY)}", prop(r, UNIQ_KEY) != e.uniq_key),
                        ({"K": "KEYS", "T": "TAGS"}.get(e.index_type, "") + " without it", not carried),
                        (f"store time {r['store_timestamp']} (the entry says {e.store_time})", r["store_timestamp"] != e.store_time),
                        (f"hour {e.store_time_hour} not its store time's", e.store_time_hour != deal_time_to_hour_stamps(e.store_time)))

            judge("RDB_KEY_ENTRY", f"key entry {e.topic}@{e.index_type}@{e.key + '@' if e.key is not None else ''}{e.uniq_key} → {e.offset_py}", e.offset_py, key_checks)
        for t in trans:
            judge("RDB_TRANS_ENTRY", f"pending transaction {t.topic}@{t.transaction_id} → {t.offset_py}", t.offset_py, lambda r, t=t: (
                (f"topic {r['topic']}", r["topic"] != "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC"), (f"REAL_TOPIC {prop(r, 'REAL_TOPIC')}", prop(r, "REAL_TOPIC") != t.topic),
                (f"transaction id {prop(r, '__transactionId__')}", prop(r, "__transactionId__") != t.transaction_id),
                (f"size {r['total_size']} (the entry says {t.size_py})", r["total_size"] != t.size_py)))
        for t in timers:
            judge("RDB_TIMER_ENTRY", f"timer {t.uniq_key} at {t.delay_time} → {t.offset_py}", t.offset_py, lambda r, t=t: (
                (f"UNIQ_KEY {prop(r, UNIQ_KEY)}", prop(r, UNIQ_KEY) != t.uniq_key), (f"size {r['total_size']} (the entry says {t.size_py})", r["total_size"] != t.size_py)))

    def check_batch_queues(self) -> None:
        """Batch consume queues (``queue.type=BatchCQ``, Java ``BatchConsumeQueue``): each
        unit against the record it points at as dispatch reads it (``CommitLog
        .checkMessageAndReturnSize`` → ``putBatchMessagePositionInfo``: the record's
        size, tagsCode and store time; its queue offset as the unit's msgBaseOffset;
        INNER_NUM as its batchSize, 1 for a plain message), the units' offsets contiguous
        (each unit's base is the last one's base + batchSize), and the queue against the
        log's records of it (CQ_BEHIND, CQ_MISSING_QUEUE), a chunk of units at a time."""
        from ..store.batch_consume_queue import BatchConsumeQueue

        lay = self.store.layout
        if not lay.batch_topics:
            return
        present = set()
        n_units = 0
        for qid in self.store.queue_ids():
            if qid.topic not in lay.batch_topics:
                continue
            cq = self.store.consume_queue(qid.topic, qid.queue_id)
            if not isinstance(cq, BatchConsumeQueue):
                continue
            key = self._key_of(qid.topic, qid.queue_id)
            present.add(key)
            prev = None  # (base + batch of the unit before, file, position)
            for path, units in cq.parts():
                for c in range(0, len(units), 1 << 16):
                    u = units[c : c + (1 << 16)]
                    n_units += len(u)
                    base, batch = u["msg_base_offset"].astype(np.int64), u["batch_size"].astype(np.int64)
                    expect = np.concatenate(([prev[0] if prev else base[0]], base[:-1] + batch[:-1]))
                    for i in np.flatnonzero(base != expect)[: LISTED_PER_FILE + 1].tolist():
                        self.add("BCQ_OFFSET_GAP", ERROR, path, (c + i) * BCQ_STORE_UNIT_SIZE, f"{qid} unit {c + i} starts at queue offset {int(base[i])}, "
                                 f"the unit before ends at {int(expect[i])}")
                    prev = (int(base[-1] + batch[-1]),)
                    phy = u["commitlog_offset"].astype(np.int64)
                    beyond = phy >= self.end
                    for i in np.flatnonzero(beyond)[: LISTED_PER_FILE + 1].tolist():
                        self.past_end(path, (c + i) * BCQ_STORE_UNIT_SIZE, f"{qid} unit {c + i} (queue offsets from {int(base[i])})", int(phy[i]), self.end)
                    inside = np.flatnonzero(~beyond)
                    want = unique(phy[inside])
                    found, table = self._records_at(want)
                    cols = DispatchColumns.from_arrow(table, self.delay_table) if table is not None else DispatchColumns.from_requests([])
                    at = np.searchsorted(want, phy[inside])
                    ok = found[at]
                    for i in inside[~ok][: LISTED_PER_FILE + 1].tolist():
                        self.add("CQ_DANGLING", ERROR, path, (c + i) * BCQ_STORE_UNIT_SIZE, f"{qid} unit {c + i} points at {int(phy[i])}, where no record starts")
                    rows = np.searchsorted(cols.commitlog_offset, phy[inside[ok]])
                    r = cols.take(rows) if len(rows) else cols
                    j = inside[ok]
                    topic_ok = np.asarray([r.topics[t] == qid.topic for t in r.topic_code.tolist()], bool) if len(j) else np.zeros(0, bool)
                    checks = (
                        (~topic_ok | (r.queue_id != qid.queue_id), "the record is of another queue"),
                        (r.msg_base_offsets() != base[j], "the record's msgBaseOffset (INNER_BASE, else its queue offset) is {q}, the unit's {b}"),
                        (r.batch_sizes() != batch[j], "the record holds {n} message(s) (INNER_NUM), the unit's batchSize is {s}"),
                        (r.msg_size != u["size"][j], "the record is {rs} bytes, the unit says {us}"),
                        (r.tags_code != u["tags_code"][j], "the record's tagsCode is {rt}, the unit's {ut}"),
                        (r.store_timestamp != u["store_timestamp"][j], "the record was stored at {rw}, the unit says {uw}"),
                    )
                    bad = np.zeros(len(j), bool)
                    for mask, why in checks:
                        for k in np.flatnonzero(mask & ~bad)[: LISTED_PER_FILE + 1].tolist():
                            i = int(j[k])
                            msg = why.format(q=int(r.msg_base_offsets()[k]), b=int(base[i]), n=int(r.batch_sizes()[k]), s=int(batch[i]), rs=int(r.msg_size[k]),
                                             us=int(u["size"][i]), rt=int(r.tags_code[k]), ut=int(u["tags_code"][i]), rw=int(r.store_timestamp[k]), uw=int(u["store_timestamp"][i]))
                            self.add("CQ_MISMATCH", ERROR, path, (c + i) * BCQ_STORE_UNIT_SIZE, f"{qid} unit {c + i} → {int(phy[i])}: {msg}")
                        bad |= mask
            lo, hi = cq.valid_range()
            last = self.queue_last.get(key)
            if last is not None and last[0] >= hi:
                file, fpos = cq.where(hi - 1) if hi > lo else (str(cq.directory), None)
                self.add("CQ_BEHIND", WARNING, file, fpos, cq_behind_message(qid, hi, last[0], self.first_missing.get(key)))
        for key, (qoff, _) in self.queue_last.items():
            topic, qid = self._queue_of(key)
            if topic in lay.batch_topics and key not in present:
                self.add("CQ_MISSING_QUEUE", ERROR, str(self.root / BATCH_CONSUMEQUEUE_DIR / topic / str(qid)), None,
                         f"the log holds records of batch queue {topic}/{qid} (up to queue offset {qoff}) but there is no batch consume queue")
        self.report.stats.update(batch_units=n_units)

    def check_compaction(self) -> None:
        """The compaction store (``cleanup.policy=COMPACTION``, :mod:`rmqlab.store.compaction`):
        each unit of a compacted queue against the record of the compaction log it points
        at (a record starts there, its physicalOffset field rewritten to that position,
        its topic, queue, queue offset, size, tagsCode and store time the unit's:
        ``CompactionAppendMessageCallback.doAppend``), queue offsets ascending (compaction
        keeps the newest of each key, in order), and the copy against the commitlog's
        record at that queue offset where the log still holds it (the same bytes but the
        physicalOffset field).  A unit at a time (a compacted queue holds one record per key)."""
        from ..format.layout import PHYSICAL_OFFSET_AT
        from ..store.compaction import CompactionStore

        comp = CompactionStore(self.root)
        qids = comp.queue_ids()
        if not qids:
            return
        n = 0
        min_off = self.store.commitlog.min_offset
        for topic, qid in qids:
            Q = comp.queue(topic, qid)
            try:
                if Q.cq is None:
                    self.add("COMPACTION_CQ_MISSING", WARNING, str(comp.cq_path / topic / str(qid)), None, f"{topic}/{qid} has a compaction log and no compaction queue: "
                             "RocketMQ's CompactionStore.load skips the log (compactionLog mismatch with compactionCq)")
                    continue
                for busy in Q.in_progress:
                    self.add("NOT_CHECKED", INFO, busy, None, "a compaction or a slave's copy under way (CompactionLog compacting/ or replicating/): not checked")
                try:
                    cq = self.store.consume_queue(topic, qid)
                    lo, hi = cq.valid_range(min_off)
                except StoreFormatError:
                    cq, lo, hi = None, 0, 0
                prev = None
                for u in Q.cq.iter_units():
                    n += 1
                    where = f"{topic}/{qid} compaction unit {u.position // BCQ_STORE_UNIT_SIZE} (queue offset {u.msg_base_offset})"
                    if prev is not None and u.msg_base_offset <= prev:
                        self.add("CQ_MISMATCH", ERROR, u.file, u.position, f"{where} follows queue offset {prev}: a compacted queue's offsets only grow")
                    prev = u.msg_base_offset
                    try:
                        rec = Q.log.read(u.commitlog_offset)
                    except StoreFormatError as err:
                        self.add("CQ_DANGLING", ERROR, u.file, u.position, f"{where} points at {u.commitlog_offset} of the compaction log: {err}")
                        continue
                    tags = rec.properties.get(TAGS)
                    wrong = [(what, a, b) for what, a, b in (
                        ("physicalOffset field", rec.stored_physical_offset, u.commitlog_offset), ("topic", rec.topic, topic), ("queue id", rec.queue_id, qid),
                        ("queue offset", rec.queue_offset, u.msg_base_offset), ("size", rec.total_size, u.size),
                        ("tagsCode", java_string_hash(tags) if tags else 0, u.tags_code), ("store time", rec.store_timestamp, u.store_timestamp)) if a != b]
                    if wrong:
                        self.add("CQ_MISMATCH", ERROR, u.file, u.position, f"{where} → {u.commitlog_offset}: the record's " +
                                 "; ".join(f"{w} is {a!r}, the unit's {b!r}" for w, a, b in wrong))
                        continue
                    if not rec.body_crc_ok:
                        self.add("BODY_CRC", ERROR, str(Q.log.queue.find(u.commitlog_offset).path), u.commitlog_offset - Q.log.queue.find(u.commitlog_offset).file_from_offset,
                                 f"{where}: the copied record's body CRC does not match")
                    e = cq.get(u.msg_base_offset) if cq is not None and lo <= u.msg_base_offset < hi else None
                    if e is None or e.commitlog_offset + e.size > self.end:
                        continue  # cleaned up in the commitlog (or past its end): the copy is all there is
                    a = bytearray(Q.log.read_bytes(u.commitlog_offset, u.size))
                    b = bytearray(self.store.commitlog.read_bytes(e.commitlog_offset, e.size))
                    a[PHYSICAL_OFFSET_AT : PHYSICAL_OFFSET_AT + 8] = b[PHYSICAL_OFFSET_AT : PHYSICAL_OFFSET_AT + 8]
                    if a != b:
                        self.add("COMPACTION_COPY", ERROR, u.file, u.position, f"{where}: the compaction log's record differs from the commitlog's at {e.commitlog_offset} "
                                 f"(queue offset {u.msg_base_offset}) beyond its physicalOffset field")
            finally:
                Q.close()
        for p in comp.problems:
            self.add("LAYOUT", ERROR, p.file, p.offset, p.message)
        try:
            comp.positions()
        except StoreFormatError as err:
            self.add("COMPACTION_POSITION", WARNING, err.file, err.offset, f"{err.message} (CompactionPositionMgr cannot load it)")
        self.report.stats.update(compaction_units=n)

    def check_lmq_queues(self) -> None:
        """LMQ queues (``enableLmq``, ``enableMultiDispatch``): for each name of a record's
        ``INNER_MULTI_DISPATCH``, ``ConsumeQueue.multiDispatchLmqQueue`` puts an entry
        (the record's offset, size and tagsCode) at the queue offset the same position of
        ``INNER_MULTI_QUEUE_OFFSET`` names, in queue (name, 0).  Each entry is checked
        against the record it points at, queue by queue and a chunk of entries at a time,
        the records read in bulk by position."""
        from ..scan.decode import JAVA_PROPERTY_PREFIX as JP

        lay = self.store.layout
        if not lay.lmq_topics:
            return
        queues = [] if self.queues_unreadable else [q for q in self.store.queue_ids() if q.topic in lay.lmq_topics]
        min_off = self.store.commitlog.min_offset
        names = (LMQ_MULTI_DISPATCH, LMQ_MULTI_QUEUE_OFFSET, TAGS)
        n_entries = 0
        for Q in queues:
            try:
                cq = self.store.consume_queue(Q.topic, Q.queue_id)
            except StoreFormatError as err:
                self.add("LAYOUT", ERROR, err.file, err.offset, err.message)
                continue
            if cq.slot_end <= cq.first_slot_offset:
                continue
            lo, hi = cq.valid_range(min_off)
            shift = None  # (last offset a record named, how far above its unit)
            for q0, part in cq.parts(lo, hi):
                for c in range(0, len(part), 1 << 16):
                    e = part[c : c + (1 << 16)]
                    n_entries += len(e)
                    phy, size, tags = (e[k].astype(np.int64) for k in ("commitlog_offset", "size", "tags_code"))
                    beyond = phy >= self.end
                    want = unique(phy[~beyond])
                    found, table = self._records_at(want, names, ("physical_offset", "total_size"))
                    rows = {}
                    if table is not None:
                        cols = [table.column("physical_offset").to_pylist(), table.column("total_size").to_pylist()] + [table.column(JP + n).to_pylist() for n in names]
                        rows = {p_: (t_, d_ or "", o_ or "", g_) for p_, t_, d_, o_, g_ in zip(*cols)}
                    for i in range(len(e)):
                        qoff, p = q0 + c + i, int(phy[i])
                        file, fpos = self._cq_pos(cq, qoff)
                        what = f"{Q} entry {qoff}"
                        if beyond[i]:
                            self.past_end(file, fpos, what, p, self.end)
                            continue
                        rec = rows.get(p)
                        if rec is None:
                            self.add("LMQ_DANGLING", ERROR, file, fpos, f"{what} points at {p}, where no record starts")
                            continue
                        total, dispatch, offsets, tag = rec
                        named = dispatch.split(LMQ_DISPATCH_SEPARATOR) if dispatch else []
                        offs = offsets.split(LMQ_DISPATCH_SEPARATOR) if offsets else []
                        if Q.topic not in named:
                            self.add("LMQ_MISMATCH", ERROR, file, fpos, f"{what} points at the record at {p}, whose INNER_MULTI_DISPATCH {dispatch!r} does not name {Q.topic}")
                            continue
                        k = named.index(Q.topic)
                        said = int(offs[k]) if len(offs) == len(named) and offs[k].lstrip("-").isdigit() else None
                        if said is None or said < qoff or (shift is not None and said <= shift[0]):
                            # RocketMQ writes no unit below the queue's end (putMessagePositionInfo returns), and offsets only grow
                            self.add("LMQ_MISMATCH", ERROR, file, fpos, f"{what}: the record at {p} gives {Q.topic} queue offset {offs[k] if k < len(offs) else None!r} "
                                     f"(INNER_MULTI_QUEUE_OFFSET {offsets!r})")
                        elif said != qoff and (shift is None or said - qoff != shift[1]):
                            self.add("LMQ_OFFSET_SHIFT", INFO, file, fpos, f"{what}: its record names queue offset {said}: from here the units sit {said - qoff} below "
                                     f"the offsets their records name (a record got an LMQ offset and no unit, as a rolled-back or prepared transaction does, and "
                                     f"ConsumeQueue.putMessagePositionInfo appends the next unit where the queue ends)")
                        if said is not None:
                            shift = (said, said - qoff)
                        if said is None or said < qoff:
                            continue
                        if int(size[i]) != total:
                            self.add("LMQ_MISMATCH", ERROR, file, fpos, f"{what} says size {int(size[i])}, the record at {p} is {total} bytes")
                        elif int(tags[i]) != (java_string_hash(tag) if tag else 0):
                            self.add("LMQ_MISMATCH", ERROR, file, fpos, f"{what} says tagsCode {int(tags[i])}, the record's TAGS {tag!r} make {java_string_hash(tag) if tag else 0}")
        if n_entries:
            self.report.stats.update(lmq_entries=n_entries)

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
                    for f in self.store.index.files if self.store.abort_exists else []:
                        if f.end_timestamp > cp.index_msg_timestamp:
                            self.add("INDEX_AFTER_CHECKPOINT", INFO, f.path, 8, f"endTimestamp {f.end_timestamp} > checkpoint indexMsgTimestamp {cp.index_msg_timestamp}: abnormal recovery deletes this file and rebuilds it")
                except StoreFormatError:
                    pass
        if self.store.abort_exists:
            content = self.store.abort_content() or ""
            self.add("ABORT_PRESENT", WARNING, self.root / ABORT_FILE, None, f"the last exit was not clean (abort holds {content!r}); RocketMQ will run abnormal recovery")
        state = self.store.lock_state()
        if state == "held":
            self.add("LOCK_HELD", INFO, self.root / LOCK_FILE, 0, "a running process holds the store lock: files may change while verify reads them")

    def check_recognised(self) -> bool:
        """One NOT_CHECKED note per part of the root rmqlab does not decode (with the
        reason); False when the log itself is not (only) in commitlog/ (DLedger,
        several directories): then nothing that depends on the log is judged."""
        lay = self.store.layout
        metadata = []
        for part in lay.not_checked():
            if part.path.startswith(CONFIG_DIR + "/"):
                metadata.append(part.path[len(CONFIG_DIR) + 1 :])  # the broker's own metadata: one note for them all
                continue
            self.add("NOT_CHECKED", INFO, self.root / part.path.rstrip("/"), None, f"{part.kind}, {part.handling}" + (f": {part.note}" if part.note else ""))
        if metadata:
            self.add("NOT_CHECKED", INFO, self.root / CONFIG_DIR, None, f"broker metadata that holds no message data, not checked: {', '.join(metadata)} (`rmqlab info` says what each is)")
        if lay.log_elsewhere:
            self.add("NOT_CHECKED", INFO, self.root, None, f"{lay.log_elsewhere}; records, consume queues and index are not checked")
            return False
        return True

    def check_timers(self) -> None:
        """The timer store (5.x): every timer-log unit against the log (the record it names
        is there, whole, and of the timer topic), the end of the timer log, and each slot
        still to fire against the units it chains (``TimerWheel`` / ``TimerLog``)."""
        from ..format.timer import TIMER_TOPIC
        from ..store.timer import TimerStore

        try:
            timer = TimerStore.of(self.root, self.cfg)
        except StoreFormatError as err:
            self.add("TIMER_STORE", ERROR, err.file, err.offset, err.message)
            return
        if timer is None:
            return
        try:
            self._check_timers(timer, TIMER_TOPIC)
        finally:
            timer.close()

    def _check_timers(self, timer, timer_topic: str) -> None:
        from ..store.timer import read_time_ms

        # what the timer store's own load refuses, cuts or rebuilds (rocketmq-rust's
        # checksummed v2 files; Java's have none)
        for p in timer.problems():
            self.add(p.kind, ERROR if p.fatal else WARNING, p.file, p.offset, p.message)

        try:
            cp = timer.checkpoint()
        except StoreFormatError as err:
            self.add("TIMER_CHECK", ERROR, err.file, err.offset, err.message)
            cp = None
        read_ms = read_time_ms(cp)
        units, end = timer.units()
        if end is not None and end.torn:
            self.add("TIMER_LOG_TORN", WARNING, end.file, end.file_offset, "a torn unit ends the timer log: TimerMessageStore.recover truncates the timer log here "
                     "(truncateDirtyFiles); timer messages enqueued after it are not in the timer store")

        where = timer.locate
        slot_ms = timer.unit_slot_ms(units)
        off = units["commitlog_offset"].astype(np.int64)
        size = units["commitlog_size"].astype(np.int64)
        pending = timer.to_fire(units, read_ms)
        for i in np.flatnonzero(off + size > self.end).tolist():
            file, fpos = where(int(units["position"][i]))
            self.add("TIMER_PAST_END", ERROR if pending[i] else WARNING, file, fpos,
                     f"timer-log unit {int(units['position'][i])} names the record at {int(off[i])} ({int(size[i])} bytes), past the end of the commitlog ({self.end}): "
                     + ("a pending timer message whose record is gone; its slot fires nothing (apache/rocketmq#10668)" if pending[i] else "it fired before the log lost the record"))
        for i in np.flatnonzero(off + size <= self.end).tolist():
            try:
                rec = self.store.commitlog.read(int(off[i]), check_crc=False)
                bad = None if rec.topic == timer_topic and rec.total_size == size[i] else f"a record of {rec.topic}, {rec.total_size} bytes"
            except (RecordError, StoreFormatError) as err:
                bad = f"no record ({err})"
            if bad:
                file, fpos = where(int(units["position"][i]))
                self.add("TIMER_MISMATCH", ERROR, file, fpos, f"timer-log unit {int(units['position'][i])} names a {timer_topic} record of {int(size[i])} bytes at {int(off[i])}; the log holds {bad} there")
        try:
            slots = timer.slots()
        except StoreFormatError as err:
            self.add("TIMER_WHEEL", ERROR, err.file, err.offset, err.message)
            return
        # each slot still to fire: its chain (last pos, back by prev pos) holds its units
        by_pos = {int(p): i for i, p in enumerate(units["position"].tolist())}
        chained = np.zeros(len(units), bool)
        for s in slots[slots["time_ms"] >= read_ms]:
            pos, steps, problem = int(s["last_pos"]), 0, None
            while pos >= 0 and steps <= len(units):
                i = by_pos.get(pos)
                if i is None:
                    problem = f"its chain reaches timer-log position {pos}, where the timer log holds no unit"
                    break
                if int(slot_ms[i]) != int(s["time_ms"]):
                    problem = f"its chain reaches the unit at {pos}, which belongs to the slot of {int(slot_ms[i])}"
                    break
                chained[i] = True
                steps += 1
                if pos == int(s["first_pos"]):
                    break
                pos = int(units["prev_pos"][i])
            if problem:
                self.add("TIMER_SLOT", WARNING, *timer.slot_location(int(s["index"])), f"the slot of {int(s['time_ms'])}: {problem}; "
                         "TimerMessageStore.recover revises slots only from the timer log's last flush position on")
        revised = timer.revised_from(cp)
        if revised is not None:
            # a snapshot wheel (timerWheelSnapshotFlush): recovery chains the units from the
            # snapshot's offset on into the wheel again, so only older ones can be lost
            pending_old = pending & (units["position"].astype(np.int64) < revised)
        else:
            pending_old = pending
        lost = np.flatnonzero(pending_old & ~chained)
        if len(lost):
            file, fpos = where(int(units["position"][lost[0]]))
            self.add("TIMER_UNCHAINED", WARNING, file, fpos, f"{len(lost)} pending timer-log unit(s) no wheel slot chains (first at {int(units['position'][lost[0]])}): "
                     "TimerMessageStore.recover chains those at or after the last flush position again; the others never fire")
        self.report.stats.update(timer_units=len(units), timer_pending_units=int(pending.sum()))

    def check_delay_offsets(self) -> None:
        """``delayOffset.json`` against the ``SCHEDULE_TOPIC_XXXX`` queues, as Java
        ``ScheduleMessageService.correctDelayOffset`` judges it at start: an offset below
        the queue's min or past its max is moved there (messages skipped, or a queue cut
        under delivered ones); a level the broker's ``messageDelayLevel`` lacks is ignored."""
        from ..store.metadata import read_delay_offsets

        path = self.root / CONFIG_DIR / DELAY_OFFSET_FILE
        try:
            table, source, notes = read_delay_offsets(self.root)
        except StoreFormatError as err:
            self.add("DELAY_OFFSET_FILE", ERROR, err.file, err.offset, f"{err.message}; RocketMQ's ScheduleMessageService.load fails and the broker does not start")
            return
        for n in notes:
            self.add("DELAY_OFFSET_FILE", WARNING, path, None, n)
        queues = {Q.qid.queue_id: Q for Q in self.queues if Q.qid.topic == SCHEDULE_TOPIC}
        if table is None:
            return
        pending = 0
        for level, offset in sorted(table.items()):
            Q = queues.get(delay_level_queue_id(level))
            where = f"delay level {level} (queue {SCHEDULE_TOPIC}/{delay_level_queue_id(level)})"
            if level not in self.delay_table:
                self.add("DELAY_LEVEL_UNKNOWN", WARNING, source, None, f"{where}: messageDelayLevel has {len(self.delay_table)} levels; RocketMQ ignores this offset")
                continue
            if Q is None:
                continue  # no queue: RocketMQ's findOrCreateConsumeQueue makes an empty one, min = max = 0
            if offset > Q.hi:
                self.add("DELAY_OFFSET_BEYOND", WARNING, source, None, f"{where}: delivered up to offset {offset}, past the queue's end {Q.hi}: the queue lost "
                         f"{offset - Q.hi} delayed message(s) already delivered; RocketMQ moves the offset back to {Q.hi} (ScheduleMessageService.correctDelayOffset)")
            elif offset < Q.lo:
                self.add("DELAY_OFFSET_BELOW", WARNING, source, None, f"{where}: offset {offset} is below the queue's min {Q.lo}: {Q.lo - offset} delayed message(s) were "
                         f"deleted before delivery; RocketMQ moves the offset to {Q.lo}")
            else:
                pending += Q.hi - offset
        for qid, Q in queues.items():
            if qid + 1 not in table and Q.hi > Q.lo:
                pending += Q.hi - Q.lo  # Java ScheduleMessageService.start: no offset → delivery from 0
        self.report.stats.update(delayed_pending=pending)

    def run(self) -> VerifyReport:
        if not self.check_recognised():
            self._worker.shutdown(wait=True)
            self.store.close()
            return self.report
        self.check_layout()
        self.prepare_queues()
        try:
            self._pending = self._worker.submit(self.prepare_index)  # while the log is read
            self.check_commitlog()
        finally:
            self._worker.shutdown(wait=True)
        if isinstance(self.store.commitlog, DLedgerCommitLog):
            self.check_dledger()
        self.finish_queues()
        self.check_rocksdb()
        self.check_message_rocksdb()
        self.check_batch_queues()
        self.check_compaction()
        self.check_lmq_queues()
        self.check_state()
        self.check_delay_offsets()
        self.check_timers()
        self._dead_bytes()
        self._unlisted_findings()
        self.store.close()
        return self.report


def cq_behind_message(qid, hi: int, last: int, first_missing: int | None) -> str:
    """CQ_BEHIND: queue ``qid`` ends at ``hi`` but the log holds its records up to
    queue offset ``last`` (the one at ``hi`` at physical offset ``first_missing``)."""
    at = f", the first at physical offset {first_missing}" if first_missing is not None else ""
    return (f"{qid} ends at queue offset {hi} (this unit is the first invalid one) but the log holds its records up to "
            f"queue offset {last} ({last - hi + 1} record(s){at}): they are not in the queue" + RECOVERY_DECIDES)


def index_missing_message(name: str, count: int, first: list[int], index_end: int) -> str:
    """INDEX_MISSING, for the records below the newest index file's endPhyOffset
    (``lost``: buildIndex skips what is below it, so they stay unfindable — a crash that
    dropped an index file and re-dispatched from a later commitlog file leaves exactly
    these) or at or past it (``pending``: not dispatched yet, indexed if dispatch
    reaches them)."""
    what = {"lost": "below the index's endPhyOffset {end}: RocketMQ never indexes them again, so they stay unfindable by key",
            "pending": "at or past the newest index file's endPhyOffset {end} (IndexService.buildIndex indexes from there on: not dispatched yet, "
                       "or their index file is gone)" + RECOVERY_DECIDES}[name]
    return f"{count} record(s) carry a key or UNIQ_KEY that no index chain reaches (first at {', '.join(map(str, first))}), " + what.format(end=index_end)


def verify_store(root: str | os.PathLike, config: MessageStoreConfig | None = None, *, progress: Progress | None = None,
                 rocketmq_version: str | None = None, recovery=None, on_batch=None) -> VerifyReport:
    """Check everything in the store at ``root``; never modifies it.  ``progress``
    (:mod:`rmqlab.progress`) hears how far the pass over the log has come;
    ``rocketmq_version`` names the release that wrote it (default: told from the store,
    :func:`rmqlab.store.release.tell_release`), whose index and recovery rules apply.

    Findings are judged against what the store's next start does: the end of the log
    is where its recovery ends it (``recovery``: the plan's dry-run report when the
    caller has one, else it is planned here, read-only), the finding that ends it comes
    first and is an error whatever its kind, and ``stats`` name the end of the log
    (``log_end``) apart from where a walk from the first file stops (``walk_end``).
    ``on_batch(file_base, file_size, batch)`` is told every batch of the pass over a
    commitlog file (lenient, CRCs checked, no bodies; :data:`_COLUMNS`), in log order,
    on verify's thread: a view fed the same pass (a report's map).  A DLedger log's
    entries are read entry by entry and not told.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> report = verify_store(shipped_dir() / "damaged")
    >>> report.outcome, report.findings[0].kind, report.stats["log_end"], report.stats["walk_end"]
    ('records lost', 'BODY_CRC', 263650, 137674)
    """
    if recovery is None:
        recovery = next_start_report(root, config, rocketmq_version)
    elif not recovery.modelled:
        recovery = None
    report = _Verifier(root, config, progress, rocketmq_version, **judged_by(recovery), on_batch=on_batch).run()
    report.recovery = recovery
    if recovery is not None:
        cause_first(report.findings, recovery)
    return report


def judged_by(recovery) -> dict:
    """What the checks take from the next start's dry run (None: no plan): the end of the
    log, whether that start cuts the queues' units past it (else the dispatch progress
    it keeps them below; :attr:`rmqlab.recovery.report.RecoveryReport.queues_truncated`),
    and where its dispatch stops for good (``dispatch_stop``).  JSON-ready: distributed
    verify hands it to every task."""
    if recovery is None:
        return {"log_end": None}
    truncated = recovery.queues_truncated
    return {"log_end": recovery.commitlog_end, "queues_truncated": truncated, "dispatch_progress": None if truncated else recovery.max_phy_offset_in_cq_before,
            "dispatch_stop_at": None if recovery.dispatch_stop is None else recovery.dispatch_stop.physical_offset}


def next_start_report(root, config: MessageStoreConfig | None = None, rocketmq_version: str | None = None):
    """What the store's next start does, as far as verify judges by it (the recovery plan's
    outcome: the end of the log, the records lost, the cause; ``scope`` "outcome"), or None
    where no plan can be made (the store's bytes stop the plan, or rmqlab does not model
    its start-up: verify says why)."""
    from ..errors import RmqlabError
    from ..recovery.recover import plan

    try:
        p = plan(root, config=config, rocketmq_version=rocketmq_version, outcome_only=True)
    except RmqlabError:
        return None
    p.close()
    return p.report if p.report.modelled else None


def cause_first(findings: list[Finding], recovery) -> None:
    """The finding that ends the log (``recovery.cause``: rmqlab.recovery.cause) first in
    ``findings``, and an error whatever its kind: the walk's own finding of that kind at
    that place where it made one, else one said here.  Where nothing is cut but dispatch
    stops (``recovery.dispatch_stop``), the missing queue that stops it first."""
    cause = recovery.cause
    stop = recovery.dispatch_stop
    if cause is None and stop is not None:
        # nothing cut, but dispatch stops: the queue that stops it comes first, saying so
        f = next((f for f in findings if f.kind == "CQ_MISSING_QUEUE" and Path(f.file).parts[-2:] == tuple(stop.queue.rsplit("/", 1))), None)
        if f is not None:
            findings.remove(f)
            f.message += f"; {recovery.outcome()}"
            findings.insert(0, f)
    if cause is None:
        return
    # the walk's finding of that kind at that place; else the cause is said in a finding of
    # its own (a TORN_RECORD's walk reports the CRC it fails, which stays, after it)
    same = [f for f in findings if f.kind == cause.kind and Path(f.file) == Path(cause.file) and f.offset == cause.file_offset]
    f = (same or [None])[0]
    # what it costs (the outcome), unless the cause already says it (a store that does not start)
    cost = recovery.outcome() if recovery.load_ok else cause.meaning()
    if f is None:
        f = Finding(cause.kind, ERROR, cause.file, cause.file_offset, f"{cause.what}; {cost}")
    else:
        findings.remove(f)
        f.severity = ERROR
        f.message += f"; {cost}"
    findings.insert(0, f)
