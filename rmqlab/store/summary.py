"""What is in a store: files, sizes, offset ranges, counts, state (``rmqlab info``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .. import reprs
from ..format import commitlog as cl
from ..format import properties as props
from ..format.timer import TIMER_TOPIC
from ..format.record import BODY_CRC, PROPERTY_CRC, PROPERTY_CRC_TAIL
from ..progress import Silent
from ..rules import SCHEDULE_TOPIC
from .reader import StoreReader


@dataclass
class StoreSummary:
    root: str
    config: dict
    commitlog_files: list[tuple[str, int]]
    commitlog_min_offset: int
    #: the end of the log: where the store's next start ends it, as the reader was opened
    #: with it (:meth:`rmqlab.store.commitlog.CommitLog.served_end`; the commands ask the
    #: recovery plan, rmqlab.recovery.next_start)
    commitlog_end_offset: int | None = None
    #: where the log's record chain from the first file breaks (sizes only: a CRC failure
    #: is counted, not a stop; the zero tail or damage that breaks the sizes): the counts
    #: below are of the records before it.  Not the end of the log, nor verify's walk_end
    #: (which stops at a CRC failure too)
    chain_end: int | None = None
    records: int = 0
    blanks: int = 0
    crc_failures: int = 0
    stopped_at: str | None = None  # the damage that ended the walk, if any
    per_queue: dict[str, int] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    consume_queues: list[dict] = field(default_factory=list)
    index_files: list[dict] = field(default_factory=list)
    checkpoint: dict | None = None
    abort: str | None = None  # None when absent, else its content
    lock: str = "absent"
    config_files: list[str] = field(default_factory=list)
    #: the timer store (5.x): its units, how many are still to fire, the checkpoint; None without one
    timer: dict | None = None
    #: every file and directory of the root, recognised (rmqlab.store.layout.Part.to_dict)
    layout: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: why RocketMQ's MappedFileQueue.load would return false for the commitlog (a file
    #: of the wrong size that is not an empty last file): the broker does not start
    load_refused: list[str] = field(default_factory=list)
    #: which RocketMQ releases may have written the store and why (rmqlab.store.release)
    release: dict = field(default_factory=dict)
    #: what rocksdbstore/ holds (5.4+: keys, transactions, timers in RocksDB); None when it
    #: is absent or empty
    message_rocksdb: dict | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def _repr_html_(self) -> str:  # notebooks
        return reprs.html("summary", self)


def summarize(store: StoreReader, *, scan: bool = True, progress=None) -> StoreSummary:
    """Collect a :class:`StoreSummary`; ``scan`` reads the whole commitlog for counts
    (``progress``, :mod:`rmqlab.progress`, hears how far it has come)."""
    cfg = store.config
    s = StoreSummary(
        root=str(store.root),
        config={
            "mappedFileSizeCommitLog": cfg.mapped_file_size_commit_log,
            "mappedFileSizeConsumeQueue": cfg.mapped_file_size_consume_queue,
            "maxHashSlotNum": cfg.max_hash_slot_num,
            "maxIndexNum": cfg.max_index_num,
        },
        commitlog_files=[(f.path.name, f.file_size) for f in store.commitlog.queue.files],
        commitlog_min_offset=store.commitlog.min_offset,
    )
    if scan:
        _scan(store, s, progress or Silent())
    from ..errors import StoreFormatError

    try:
        qids, unlisted = store.queue_ids(), []
    except StoreFormatError as err:  # a RocksDB consume queue RocksDB cannot open: the rest is still summarised
        qids, unlisted = [], [str(err)]
    for qid in qids:
        cq = store.consume_queue(qid.topic, qid.queue_id)
        lo, hi = cq.valid_range(store.commitlog.min_offset)
        s.consume_queues.append(
            {"queue": str(qid), "files": cq.file_count, "min_offset": lo, "max_offset": hi, "max_physic_offset": cq.max_physic_offset(store.commitlog.min_offset),
             "kind": getattr(cq, "KIND", "consume queue")}
        )
    for f in store.index.files:
        h = f.header
        s.index_files.append(
            {
                "file": f.name,
                "begin_timestamp": h.begin_timestamp,
                "end_timestamp": h.end_timestamp,
                "begin_phy_offset": h.begin_phy_offset,
                "end_phy_offset": h.end_phy_offset,
                "hash_slot_count": h.hash_slot_count,
                "index_count": h.index_count,
            }
        )
    cp = store.checkpoint()
    s.checkpoint = cp.to_dict() if cp else None
    s.abort = store.abort_content()
    s.lock = store.lock_state()
    s.config_files = [p.name for p in store.config_files()]
    s.layout = [p.to_dict() for p in store.layout.parts]
    s.timer = _timer_summary(store, s)
    s.message_rocksdb = _message_rocksdb_summary(store, s)
    s.problems = [str(p) for p in store.problems] + unlisted
    s.load_refused = [str(p) for p in store.commitlog.queue.problems]
    from .release import tell_release

    s.release = tell_release(store.root, cfg).to_dict()
    return s


def _message_rocksdb_summary(store: StoreReader, s: StoreSummary) -> dict | None:
    """Counts of what ``rocksdbstore/`` holds (:mod:`rmqlab.store.rocksdb_message`): key
    entries by type, each writer's progress, pending half messages and timers."""
    from ..errors import StoreLayoutError
    from ..rules import MESSAGE_ROCKSDB_DIR

    part = next((p for p in store.layout.parts if p.path == MESSAGE_ROCKSDB_DIR + "/"), None)
    if part is None or part.handling != "decoded":
        return None
    try:
        db = store.message_rocksdb
        if db is None:
            return None
        by_type: dict[str, int] = {}
        for e in db.index_entries():
            by_type[e.index_type] = by_type.get(e.index_type, 0) + 1
        out = {"index_entries": by_type, "index_last_offset_py": db.last_offset_py(), "index_last_store_timestamp": db.index_last_store_timestamp(),
               "pending_transactions": len(db.transactions()), "trans_last_offset_py": db.last_offset_py("trans"),
               "timers": len(db.timers()), "timer_checkpoints": db.timer_checkpoints(),
               "malformed": [f"{m.family}: {m.key[:40]!r}: {m.why}" for m in db.malformed[:20]]}
        return out
    except StoreLayoutError as err:  # the binding missing, or RocksDB refusing the copy: the rest is still summarised
        s.problems.append(str(err))
        return None


def _timer_summary(store: StoreReader, s: StoreSummary) -> dict | None:
    """Units of the timer log, those still to fire (:mod:`rmqlab.store.timer`), and the
    timer queue's records the timer log does not hold yet (enqueued at the next start)."""
    from ..errors import StoreFormatError
    from .timer import TimerStore, read_time_ms

    try:
        timer = TimerStore.of(store.root, store.config)
        if timer is None:
            return None
        cp = timer.checkpoint()
        units, _ = timer.units()
        fire = timer.to_fire(units, read_time_ms(cp))
        timer.close()
    except StoreFormatError as err:
        s.problems.append(str(err))
        return None
    queued = max((q["max_offset"] for q in s.consume_queues if q["queue"].startswith(TIMER_TOPIC + "/")), default=0)
    return {"timer_log_units": len(units), "units_to_fire": int(fire.sum()), "last_read_time_ms": cp["last_read_time_ms"] if cp else None,
            "timer_queue_offset_enqueued": cp["last_timer_queue_offset"] if cp else None, "timer_queue_max_offset": queued}


_CRC_TAIL = np.frombuffer((props.CRC32 + props.NAME_VALUE_SEPARATOR).encode(), np.uint8)  # how that last property starts
_SCAN_COLUMNS = ["physical_offset", "total_size", "magic", "topic", "queue_id", "sys_flag", "kind", "error"]


def _scan(store: StoreReader, s: StoreSummary, progress) -> None:
    """Counts over the commitlog, read as RocketMQ's walk reads it (up to the first
    damage or the zero tail; a BLANK moves on to the next file; a bad CRC is counted,
    not a stop), decoded in bulk with :mod:`rmqlab.scan.decode`, batch by batch,
    so that a capture of hundreds of GiB is summarised at memory speed in bounded memory."""
    import pyarrow as pa

    from ..scan import compute as ac
    from ..scan import decode as fd

    ok_kinds = pa.array([fd.KIND_MESSAGE, fd.KIND_BLANK, BODY_CRC, PROPERTY_CRC], pa.string())
    crc_kinds = pa.array([BODY_CRC, PROPERTY_CRC], pa.string())
    per_queue: Counter = Counter()
    feats: Counter = Counter()
    s.chain_end = expected = store.commitlog.min_offset
    for f in store.commitlog.queue.files:
        if f.file_from_offset + f.file_size <= expected:
            continue
        if f.file_from_offset > expected:
            # a missing or empty file: Java's walk takes the next mapped file from its
            # start (CommitLog.recoverNormally: index++, processOffset = its fileFromOffset)
            expected = f.file_from_offset
        a = np.frombuffer(f.buf, np.uint8)
        blank_seen = False
        stopped = False
        for batch in fd.scan_range(
            a, file_base=f.file_from_offset, file=str(f.path), start=expected - f.file_from_offset, resync=False, mode="lenient", include_body=False, columns=_SCAN_COLUMNS,
            data_end=f.data_end,
        ):
            pos = np.asarray(batch.column("physical_offset").to_numpy(zero_copy_only=False), np.int64)
            size = np.asarray(ac.fill_null(batch.column("total_size"), 0).to_numpy(zero_copy_only=False), np.int64)
            # a CRC row is a record read whole, unless the decoder could not read it (an
            # error: its lengths do not add up either, and Java stopped at the CRC first)
            good = np.asarray(ac.and_(ac.is_in(batch.column("kind"), value_set=ok_kinds), ac.is_null(batch.column("error"))).to_numpy(zero_copy_only=False), bool)
            # the walk's chain: each row where the previous one ended; it stops at the
            # first damage row or gap (a zero tail the scan resynchronised past)
            chained = np.empty(len(pos), bool)
            chained[0] = pos[0] == expected
            chained[1:] = pos[1:] == pos[:-1] + size[:-1]
            bad = np.flatnonzero(~(good & chained))
            n = int(bad[0]) if len(bad) else len(pos)
            if len(bad) and chained[n]:
                s.stopped_at = batch.column("error")[n].as_py()
            blank = np.asarray(ac.equal(batch.column("kind").slice(0, n), fd.KIND_BLANK).to_numpy(zero_copy_only=False), bool)
            rows = ac.filter(batch.slice(0, n), ac.mask(~blank))
            s.blanks += int(blank.sum())
            blank_seen |= bool(blank.any())
            s.records += rows.num_rows
            if rows.num_rows:
                mpos, msize = pos[:n][~blank], size[:n][~blank]
                s.chain_end = int(mpos[-1] + msize[-1])
                s.crc_failures += int(ac.sum(ac.is_in(rows.column("kind"), value_set=crc_kinds)).as_py() or 0)
                _count_features(rows, a, mpos - f.file_from_offset, msize, per_queue, feats)
            if n:
                expected = int(pos[n - 1] + size[n - 1])
                progress.update(expected - store.commitlog.min_offset, s.records)
            if len(bad):
                stopped = True
                break
        # the log goes on in the next file only after a BLANK or a record ending the file
        if stopped or not (blank_seen or expected == f.file_from_offset + f.file_size):
            break
        expected = f.file_from_offset + f.file_size
    s.per_queue = dict(sorted(per_queue.items()))
    s.features = dict(sorted(feats.items()))
    s.commitlog_end_offset = store.commitlog.served_end()


def _count_features(rows, a: np.ndarray, rel: np.ndarray, size: np.ndarray, per_queue: Counter, feats: Counter) -> None:
    from ..scan import compute as ac

    keys = ac.binary_join_element_wise(rows.column("topic"), ac.cast(rows.column("queue_id"), "string"), "/")
    counted = ac.value_counts(keys)
    for k, c in zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist()):
        per_queue[k] += c
    magic = np.asarray(rows.column("magic").to_numpy(zero_copy_only=False), np.int64)
    sf = np.asarray(rows.column("sys_flag").to_numpy(zero_copy_only=False), np.int64)
    # the optional __CRC32# property is the last 20 bytes of a record that has it
    tail = rel + size - PROPERTY_CRC_TAIL
    has_crc = (size >= cl.FIXED_SIZE_V1_IPV4 + PROPERTY_CRC_TAIL) & (a[rel + size - 1] == 2)
    has_crc &= (a[tail[:, None] + np.arange(len(_CRC_TAIL))] == _CRC_TAIL).all(axis=1)
    topics = rows.column("topic")
    counts = {
        "V2 records (topic > 127 bytes)": int((magic == cl.MAGIC_V2).sum()),
        "IPv6 born host": int((sf & cl.FLAG_BORNHOST_V6 != 0).sum()),
        "IPv6 store host": int((sf & cl.FLAG_STOREHOST_V6 != 0).sum()),
        "__CRC32# property CRC": int(has_crc.sum()),
        "compressed body": int((sf & cl.FLAG_COMPRESSED != 0).sum()),
        f"delayed ({SCHEDULE_TOPIC})": int(ac.sum(ac.equal(topics, SCHEDULE_TOPIC)).as_py() or 0),
        f"timer messages ({TIMER_TOPIC})": int(ac.sum(ac.equal(topics, TIMER_TOPIC)).as_py() or 0),
    }
    for t in (cl.TRANSACTION_PREPARED_TYPE, cl.TRANSACTION_COMMIT_TYPE, cl.TRANSACTION_ROLLBACK_TYPE):
        counts[f"transaction {cl.TRANSACTION_NAMES[t]}"] = int((sf & cl.TRANSACTION_MASK == t).sum())
    for name, c in counts.items():
        if c:
            feats[name] += c
