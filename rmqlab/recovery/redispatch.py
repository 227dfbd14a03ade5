"""Re-dispatch, as recovery plans it: which records RocketMQ's start-up hands to
dispatch (:func:`records_to_dispatch`: every scanned record after a crash, those past
the queues' max physical offset after a clean exit, less what the queues and index
already hold), read back a chunk at a time (:class:`DispatchChunks`), and what dispatch
then does to each queue, read-only (:func:`simulate_queues`: consume, batch and LMQ
queues; :func:`rocksdb_queue_changes`: RocksDB's).  Applying feeds the same chunks to
:class:`~rmqlab.writers.dispatch.CommitLogDispatcher`.
"""

from __future__ import annotations

import bisect
import re

import numpy as np

from ..config import MessageStoreConfig
from ..format import commitlog as cl
from ..format import layout
from ..files.mapped_file_queue import name_max, unmakeable
from ..format.layout import PREFIX_DTYPES
from ..rules import BATCH_CONSUMEQUEUE_DIR, CONSUMEQUEUE_DIR, CONSUMEQUEUE_EXT_DIR, goes_to_consume_queue, multi_dispatch_targets
from ..writers.batch_consume_queue_writer import kept_rows
from .model import STORE, Queue, RecoveryPlan
from .queues import truncate_queue_plan
from .report import DispatchStop, QueueChange, RecoveryReport


def file_view(f, size: int):
    """A commitlog file as Java maps it: a short file's missing tail reads as zeros.
    The scan and the re-dispatch read records through the same view, so a record the
    scan accepted in the zeros is read back the same way."""
    if not size or len(f.buf) >= size:
        return f.buf
    data = bytes(f.buf)
    return data + bytes(size - len(data))


def file_runs(files, positions: np.ndarray):
    """``(k, lo, hi)`` for each run of ``positions`` (sorted physical offsets) that lies in
    ``files[k]`` (the log's files in offset order): ``positions[lo:hi]``."""
    if not len(positions):
        return
    starts = np.asarray([f.file_from_offset for f in files], dtype=np.int64)
    which = np.searchsorted(starts, positions, side="right") - 1
    bounds = np.flatnonzero(np.concatenate(([True], which[1:] != which[:-1], [True])))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        yield int(which[lo]), lo, hi


def held_by_queues(hints: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which of ``offsets`` some queue's unit points at (``hints``: every unit's commitlog
    offset, sorted: ``RecoveryPlan.hints``), and where each was looked up in ``hints``."""
    if not len(hints):
        return np.zeros(len(offsets), dtype=bool), np.zeros(len(offsets), dtype=np.int64)
    at = np.minimum(np.searchsorted(hints, offsets), len(hints) - 1)
    return hints[at] == offsets, at


#: below this many records to re-dispatch, they are decoded one by one (no pyarrow)
BULK_DISPATCH_MIN = 4096


def multi_dispatch_settings(cfg: MessageStoreConfig, lay, rep: RecoveryReport) -> tuple[bool, bool]:
    """``enableMultiDispatch`` and ``enableLmq`` as the broker had them: the config's,
    when it sets them; else on when the store holds LMQ queues (a capture without its
    broker.conf: only a broker with both writes them), which the report notes."""
    multi, lmq = cfg.extra_flag("enableMultiDispatch"), cfg.extra_flag("enableLmq")
    if (multi is None or lmq is None) and lay.lmq_topics:
        rep.notes.append(f"{len(lay.lmq_topics)} LMQ queue(s) and no enableMultiDispatch/enableLmq in the config: taken to be on, as the broker "
                         "that wrote them had them (re-dispatch rebuilds LMQ units from INNER_MULTI_DISPATCH)")
    return (bool(lay.lmq_topics) if multi is None else multi), (bool(lay.lmq_topics) if lmq is None else lmq)


def records_to_dispatch(rep: RecoveryReport, plan: RecoveryPlan, cfg: MessageStoreConfig):
    """Records re-dispatch must look at, in commitlog order: Java ``DispatchRequest`` s
    as :class:`~rmqlab.scan.dispatch_request.DispatchColumns`, or as a list of
    :class:`~rmqlab.scan.dispatch_request.DispatchRequest` when there are fewer than
    :data:`BULK_DISPATCH_MIN`.

    RocketMQ hands every scanned record (abnormal) or every record after
    maxPhyOffsetOfConsumeQueue (normal) to dispatch, which then skips what is already
    there: a consume-queue entry when ``offset + size <= maxPhysicOffset`` of its queue,
    index keys when ``offset < endPhyOffset`` of the last index file.  Here the records
    whose offsets are already entries of a consume queue and lie below the index end are
    dropped in bulk first; the dispatcher applies Java's exact rule to the rest.
    Returns them as :class:`DispatchChunks` (positions, decoded a chunk at a time).

    The records are read back in bulk, file by file, at the positions the scan found
    (:func:`rmqlab.scan.dispatch_request.read_dispatch_columns`, what the engine's reput uses
    too).
    """
    from ..rules import parse_delay_levels

    pos = plan.handed_to_dispatch()
    delay_levels = parse_delay_levels(cfg.message_delay_level)
    files = plan.files
    views = [file_view(f, cfg.mapped_file_size_commit_log) for f in files]
    sel = np.ones(len(pos), dtype=bool)
    # with multi-dispatch, a record already in its own queue is still dispatched to the
    # LMQ queues it names (Java multi-dispatches after a put that skips as a repeat):
    # every record goes to the dispatcher, whose guards skip what is there
    # (and with ext files, every record dispatched writes an ext unit, repeats included)
    # and a RocksDB written beside the file queues (a copy of them, or keys and
    # transactions in rocksdbstore/) gets every record too: it may lack what they hold
    if len(pos) and not plan.multi_dispatch and not plan.consume_queue_ext and not plan.rocksdb_beside:
        in_cq, at = held_by_queues(plan.hints, pos)
        index_skip = (pos < plan.index_end_phy) if cfg.message_index_enable else np.ones(len(pos), dtype=bool)
        drop = np.flatnonzero(in_cq & index_skip)
        if len(drop):
            # a record a queue points at is already there only if it is that queue's: a
            # damaged topic or queue id sends it to another queue, which Java creates
            drop = drop[_in_their_queue(plan, views, pos[drop], plan.hint_owner[at[drop]])]
        sel[drop] = False
    return DispatchChunks(pos[np.flatnonzero(sel)], delay_levels)


#: records decoded and dispatched together (bounds re-dispatch's memory: a chunk's
#: columns, index keys and queue runs, not the whole log's)
DISPATCH_CHUNK = 1 << 19
#: up to this many records, the chunks the plan's simulation decoded are kept for
#: applying (one decode); past it they are decoded again then, from the target's log
DISPATCH_KEEP = 1 << 20


class DispatchChunks:
    """The records re-dispatch hands to the dispatcher, by position (sorted), read back
    a chunk at a time: a list of :class:`~rmqlab.scan.dispatch_request.DispatchRequest`
    when there are fewer than :data:`BULK_DISPATCH_MIN` in all (quicker than loading
    pyarrow for them), else :class:`~rmqlab.scan.dispatch_request.DispatchColumns` of at
    most :data:`DISPATCH_CHUNK` records of one file each.  Iterating needs the log's
    files: :meth:`over` gives them (the plan's mappings, or the recovered copy's).
    Up to :data:`DISPATCH_KEEP` records, the first pass's chunks are kept and served
    again (a dry run then apply decode them once)."""

    def __init__(self, positions: np.ndarray, delay_levels: dict):
        self.positions = positions
        self.delay_levels = delay_levels
        self.files: list = []
        self.file_size = 0
        self._kept: list | None = None

    def __len__(self) -> int:
        return len(self.positions)

    def over(self, files: list, file_size: int) -> "DispatchChunks":
        self.files, self.file_size = files, file_size
        return self

    def __iter__(self):
        if self._kept is not None:
            yield from self._kept
            return
        keep = [] if len(self.positions) <= DISPATCH_KEEP else None
        for chunk in self._decode():
            if keep is not None:
                keep.append(chunk)
            yield chunk
        if keep is not None:
            self._kept = keep

    def _decode(self):
        files, pos = self.files, self.positions
        if not len(pos):
            return
        if len(pos) < BULK_DISPATCH_MIN:
            starts = [f.file_from_offset for f in files]
            out = []
            for p in pos.tolist():
                k = bisect.bisect_right(starts, p) - 1
                out.append(_decode_one(files[k], file_view(files[k], self.file_size), p, self.delay_levels))
            yield out
            return
        for k, a, b in file_runs(files, pos):
            view = file_view(files[k], self.file_size)
            for c in range(a, b, DISPATCH_CHUNK):
                yield _decode_for_dispatch(files[k], view, pos[c : min(b, c + DISPATCH_CHUNK)], self.delay_levels)


#: the fixed part's size by host combination (born_v6 + 2*store_v6); bodyLength ends it
_PREFIX_SIZES = np.asarray([d.itemsize for d in PREFIX_DTYPES], dtype=np.int64)
#: where the fixed fields a record's queue depends on sit, from the schema's layout, and
#: the bits that tell them (the host flags sit in sysFlag's low byte; V1 and V2 magics
#: differ in their last byte)
_FIELDS = {"sys_flag_at": layout.SYS_FLAG_AT, "magic_at": layout.MAGIC_AT, "queue_id_at": layout.QUEUE_ID_AT, "phys_at": layout.PHYSICAL_OFFSET_AT,
           "born_v6": cl.FLAG_BORNHOST_V6 & 0xFF, "store_v6": cl.FLAG_STOREHOST_V6 & 0xFF, "v2_last": cl.MAGIC_V2 & 0xFF}


def _in_their_queue(plan: RecoveryPlan, views: list, positions: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """For records at ``positions`` (sorted), each the commitlog offset of an entry of
    queue ``owner`` (an index into ``plan.queues``): True where the record's own
    topic and queue id are that queue's and its physicalOffset field says where it is
    (Java dispatches, and indexes, by the field: a damaged one must go through dispatch
    as Java reads it).  One pass per file (:func:`rmqlab.scan.kernels.in_own_queue`:
    compiled, or interpreted for a few records), at positions the layout derives from
    the schema."""
    from ..scan import kernels

    queues = list(plan.queues.values())
    topics = [q.topic.encode() for q in queues]
    topic_lens = np.asarray([len(t) for t in topics], dtype=np.int64)
    queue_ids = np.asarray([q.queue_id for q in queues], dtype=np.int64)
    table = np.zeros((len(queues), max(1, int(topic_lens.max(initial=1)))), dtype=np.uint8)  # each queue's topic, zero-padded
    for i, t in enumerate(topics):
        table[i, : len(t)] = np.frombuffer(t, dtype=np.uint8)
    ok = np.zeros(len(positions), dtype=bool)
    for k, lo, hi in file_runs(plan.files, positions):
        a, base = np.frombuffer(views[k], dtype=np.uint8), plan.files[k].file_from_offset
        ok[lo:hi] = kernels.in_own_queue(a, positions[lo:hi] - base, owner[lo:hi], table, topic_lens, queue_ids, int(base), _PREFIX_SIZES, _FIELDS)
    return ok


def _decode_one(f, buf, phy: int, delay_levels: dict):
    from ..scan.dispatch_request import read_dispatch_request

    return read_dispatch_request(buf, phy - f.file_from_offset, file=str(f.path), file_base=f.file_from_offset, delay_levels=delay_levels)


def _decode_for_dispatch(f, buf, chosen: np.ndarray, delay_levels: dict):
    """DispatchColumns of the records at physical offsets ``chosen`` (sorted) of file
    ``f`` (read through ``buf``, its :func:`file_view`): the scan already walked the
    chain, so they are read at their positions."""
    from ..scan.dispatch_request import read_dispatch_columns

    return read_dispatch_columns(buf, chosen - f.file_from_offset, file_base=f.file_from_offset, file=str(f.path), delay_levels=delay_levels)


def _queue_columns(records):
    """(topics, topic code, queueId, offset, size, sysFlag, msgBaseOffset, batchSize) of
    the dispatch requests, as numpy columns, from DispatchColumns or a list of
    DispatchRequests."""
    if not isinstance(records, list):
        r = records
        return r.topics, r.topic_code, r.queue_id, r.commitlog_offset, r.msg_size, r.sys_flag, r.msg_base_offsets(), r.batch_sizes()
    topics: dict[str, int] = {}
    codes = np.asarray([topics.setdefault(r.topic, len(topics)) for r in records], dtype=np.int64)
    col = lambda i: np.asarray([r[i] for r in records], dtype=np.int64)  # noqa: E731
    bases = np.asarray([r.base_offset for r in records], dtype=np.int64)
    return list(topics), codes, col(1), col(2), col(3), col(9), bases, col(12)


class DispatchStopWatch:
    """Where re-dispatch stops writing consume queues for good
    (:class:`~rmqlab.recovery.report.DispatchStop`): fed the dispatch requests a chunk at
    a time, in commitlog order, it finds the first record of a consume or batch queue whose
    topic is longer than a file name may be in the store's filesystem (the queue's
    directory cannot be made: Java ``UtilAll.ensureDirOK`` logs mkdir Failed, the unit's
    file is never created, and ``putMessagePositionInfoWrapper`` gives up with
    ``makeLogicsQueueError``), and counts the records from there on that a consume queue
    would get and none holds (``plan.hints``).  An LMQ queue that cannot be made stops
    nothing (``ConsumeQueue.doDispatchLmqQueue`` retries, then goes on).  rocketmq-rust
    1.0.0 does as Java (``single_consume_queue.rs``: ``put_message_position_info_wrapper``
    then ``make_logics_queue_error``, ``is_cq_writeable`` checked first).  The plan's
    simulation and the outcome verify judges by both read it here."""

    def __init__(self, most_name: int, hints: np.ndarray):
        self.most_name, self.hints = most_name, hints
        self.stop: DispatchStop | None = None

    def feed(self, records) -> int:
        """How many of the chunk's rows, from its first, dispatch puts in queues: all of
        them before the stop, up to and including the record that stops it, none after."""
        topics, topic_code, queue_id, offset, _size, sys_flag, _b, _s = _queue_columns(records)
        return self.feed_columns(topics, topic_code, queue_id, offset, sys_flag)

    def feed_columns(self, topics, topic_code, queue_id, offset, sys_flag) -> int:
        """:meth:`feed` of a chunk's columns (:func:`_queue_columns`)."""
        n, start, through = len(offset), 0, 0
        if self.stop is None:
            long = [i for i, t in enumerate(topics) if unmakeable(t, self.most_name)]
            rows = np.flatnonzero(np.isin(topic_code, long) & goes_to_consume_queue(sys_flag)) if long else ()
            if not len(rows):
                return n
            start = int(rows[0])
            through = start + 1
            self.stop = DispatchStop(int(offset[start]), f"{topics[int(topic_code[start])]}/{int(queue_id[start])}")
        held, _ = held_by_queues(self.hints, offset[start:])
        self.stop.records += int((goes_to_consume_queue(sys_flag[start:]) & ~held).sum())
        return through


def dispatch_stop(rep: RecoveryReport, plan: RecoveryPlan, cfg: MessageStoreConfig) -> None:
    """``rep.dispatch_stop`` from the records re-dispatch is handed, without the rest of
    the simulation (what verify's outcome needs: :func:`rmqlab.recovery.recover.plan`
    with ``outcome_only``).  Only a V2 record can have a topic longer than a file name
    (a V1 record's topic length is a signed byte): the others are not decoded unless one
    stops dispatch, so a store whose whole log is handed to dispatch (no consume queues
    left) costs a read of each record's magic, not a decode."""
    chunks = records_to_dispatch(rep, plan, cfg)
    pos, size = chunks.positions, cfg.mapped_file_size_commit_log
    v2 = _v2_magic(plan, pos, size)
    rep.dispatch_stop = None
    if not v2.any():
        return
    first = DispatchStopWatch(name_max(rep.root), plan.hints)
    for records in DispatchChunks(pos[v2], chunks.delay_levels).over(plan.files, size):
        first.feed(records)
        if first.stop is not None:
            break
    if first.stop is None:
        return
    watch = DispatchStopWatch(first.most_name, plan.hints)  # from the stop on, every record, to count those no queue gets
    for records in DispatchChunks(pos[pos >= first.stop.physical_offset], chunks.delay_levels).over(plan.files, size):
        watch.feed(records)
    rep.dispatch_stop = watch.stop


def _v2_magic(plan: RecoveryPlan, positions: np.ndarray, size: int) -> np.ndarray:
    """Whether the record at each of ``positions`` (sorted; records the scan accepted, so
    of magic V1 or V2, which differ in their last byte only) is a V2 record."""
    out = np.zeros(len(positions), dtype=bool)
    for k, lo, hi in file_runs(plan.files, positions):
        f = plan.files[k]
        a = np.frombuffer(file_view(f, size), dtype=np.uint8)
        out[lo:hi] = a[positions[lo:hi] - f.file_from_offset + (layout.MAGIC_AT + 3)] == _FIELDS["v2_last"]
    return out


def simulate_queues(rep: RecoveryReport, plan: RecoveryPlan, chunks, delay_levels: dict) -> None:
    """Fill the per-queue part of the report (what dispatch and truncation do), read-only.
    ``chunks``: the dispatch requests (columns or lists), in commitlog order, a chunk at
    a time (each queue's state carries over from one chunk to the next).
    Each queue by its own rules (the writers' ``put``): a consume queue adds an entry
    when ``offset + size`` passes its maxPhysicOffset; a batch queue a unit when its
    msgBaseOffset and batchSize are not negative and its offset passes the last unit's."""
    queues: dict[tuple[str, int], Queue] = plan.queues
    process = plan.process
    changes: dict[tuple[str, int], QueueChange] = {}
    maxp = {k: q.max_physic_offset for k, q in queues.items()}
    batch = {k: q.batch for k, q in queues.items()}
    last_offset: dict[tuple[str, int], int] = {}  # a batch queue's max offset after what dispatch adds
    first_offset: dict[tuple[str, int], int] = {}  # a created consume queue's first queue offset
    most_name = name_max(rep.root)
    watch = DispatchStopWatch(most_name, plan.hints)
    for k, q in queues.items():
        changes[k] = QueueChange(q.name, q.count, q.max_offset_in_queue, q.max_physic_offset, [p.name for p in q.deleted] + [f"{CONSUMEQUEUE_EXT_DIR}/{p.name}" for p in q.ext_deleted])
    def created(k, at: int) -> bool:
        """Whether queue ``k`` takes units: a new one's directory is made first (Java
        ``UtilAll.ensureDirOK``), which fails for a topic longer than a file name may be;
        ``ConsumeQueue.putMessagePositionInfoWrapper`` then writes none of its units."""
        if k not in changes:
            cannot = unmakeable(k[0], most_name)
            changes[k] = QueueChange(f"{k[0]}/{k[1]}", 0, 0, -1, created=True, unmakeable=cannot)
            maxp[k] = -1
            batch[k] = k[0] in plan.batch_topics
            where = BATCH_CONSUMEQUEUE_DIR if batch[k] else CONSUMEQUEUE_DIR
            _insert_at_offset(rep.log_lines, at, f"{STORE}/{where}/{k[0]}/{k[1]} mkdir {'Failed' if cannot else 'OK'}")
            if cannot and watch.stop is not None and watch.stop.queue == f"{k[0]}/{k[1]}":
                _insert_at_offset(rep.log_lines, at, f"[BUG]consume queue can not write, {k[0]} {k[1]}")
        return not changes[k].unmakeable

    def add_entries(k, g: np.ndarray, qoffs: np.ndarray) -> None:
        # an entry is added when it ends past every end before it (Java's repeat guard)
        ends = offset[g] + size[g]
        before = np.maximum.accumulate(np.concatenate(([maxp[k]], ends[:-1])))
        added = ends > before
        if changes[k].created and k not in first_offset and added.any():
            first_offset[k] = int(qoffs[int(np.argmax(added))])
        changes[k].added_entries += int(added.sum())
        maxp[k] = max(maxp[k], int(ends.max()))

    for records in chunks:
        topics, topic_code, queue_id, offset, size, sys_flag, bases, batch_sizes = _queue_columns(records)
        # rows past a record no queue can be made for get no unit in any queue (nor LMQ
        # units, which follow a put that succeeded)
        through = watch.feed_columns(topics, topic_code, queue_id, offset, sys_flag)
        rows = np.flatnonzero(goes_to_consume_queue(sys_flag[:through]))
        cq_offsets = records.consume_queue_offset if not isinstance(records, list) else np.asarray([r.consume_queue_offset for r in records], np.int64)

        simple = np.zeros(len(offset), bool)  # rows put into a consume queue: multi-dispatch follows them
        if len(rows):
            from ..scan.dispatch_request import queue_groups

            for g in queue_groups(topic_code[rows], queue_id[rows]):
                g = rows[g]
                r0 = g[0]
                k = (topics[int(topic_code[r0])], int(queue_id[r0]))
                if not created(k, int(offset[r0])):
                    continue
                simple[g] = not batch[k]
                if batch[k]:
                    added = kept_rows(offset[g], bases[g], batch_sizes[g], maxp[k])
                    if len(added):
                        changes[k].added_entries += len(added)
                        maxp[k] = int(offset[g][added[-1]])
                        a = g[added[-1]]
                        last_offset[k] = int(bases[a]) + int(batch_sizes[a])
                    continue
                add_entries(k, g, cq_offsets[g])
        if plan.multi_dispatch:
            # ConsumeQueue.multiDispatchLmqQueue: after each consume-queue put, a unit in every queue its record names
            if isinstance(records, list):
                targets = [(i, t, q, o) for i, r in enumerate(records) if r.multi_dispatch is not None
                           for t, q, o in multi_dispatch_targets(r.topic, r.queue_id, r.multi_dispatch, r.multi_queue_offset, enable_lmq=plan.enable_lmq)]
            else:
                targets = records.multi_dispatches(enable_lmq=plan.enable_lmq)
            by_queue: dict[tuple[str, int], list[tuple[int, int]]] = {}
            for r, t, q, o in targets:
                if simple[r]:
                    by_queue.setdefault((t, q), []).append((r, o))
            for k, got in by_queue.items():
                if created(k, int(offset[got[0][0]])) and not batch[k]:
                    add_entries(k, np.asarray([r for r, _ in got], np.int64), np.asarray([o for _, o in got], np.int64))
    if plan.truncate_cq:
        for k, q in queues.items():
            c = truncate_queue_plan(q, process)
            changes[k].cut_entries, changes[k].cut_messages = c.units, c.messages
            if q.batch and c.units:
                last_offset[k] = c.max_offset
    for k, ch in changes.items():
        q = queues.get(k)
        if batch.get(k):
            ch.max_offset_after = last_offset.get(k, ch.max_offset_before)
        elif q is None:
            ch.max_offset_after = first_offset.get(k, 0) + ch.added_entries
        else:
            ch.max_offset_after = q.first_queue_offset + q.count + ch.added_entries - ch.cut_entries
    rep.queues = sorted(changes.values(), key=lambda c: c.queue)
    rep.dispatch_stop = watch.stop
    most = max(maxp.values(), default=-1)
    plan.queues_max_after = min(most, process) if plan.truncate_cq else most


def rocksdb_queue_changes(rep: RecoveryReport, plan: RecoveryPlan, rocksdb) -> None:
    """The per-queue part of the report for RocksDB queues (RocksDBMessageStore): what
    :func:`rocksdb_changes` says RocketMQ's start-up does to each."""
    rep.queues = rocksdb_changes(rep, plan, rocksdb, truncate=plan.truncate_cq)
    rep.notes.append(f"the consume queues are RocksDB's (storeType=defaultRocksDB): RocketMQ's start-up truncates them to the new end "
                     f"(RocksDBConsumeQueueStore.truncateDirty) and re-dispatches into them from RocksDB's progress "
                     f"{plan.report.max_phy_offset_in_cq_before}, as listed; applying writes the same into the RocksDB")


def rocksdb_changes(rep: RecoveryReport, plan: RecoveryPlan, rocksdb, *, truncate: bool, seen: dict | None = None) -> list[QueueChange]:
    """Each queue of a RocksDB of consume queues after RocketMQ's start-up, read from it:
    ``truncateDirty`` (``truncate``, when its progress lies past the new end) gives a
    queue whose max unit is at or past the end a new max below it
    (:func:`rmqlab.writers.rocksdb_consume_queue_writer.truncate_dirty`: the keys stay,
    unreachable), and re-dispatch puts every record handed to it
    (``RocksDBConsumeQueueTable``: a key per unit, idempotent) and makes each queue's
    max the last unit it put (``putMaxPhyAndCqOffset``).  Java truncates after the
    scan's dispatch, which its group commit writes in the background; both orders end
    the same unless a batch lands first and lowers the progress below the end, when
    Java truncates nothing (a race: rmqlab follows the start-up whose dispatch has not
    landed yet).

    ``seen``, when given, gets each queue's maxima a reader may find while the re-dispatch
    is still landing: ``{"queue": (values, (lo, hi))}``, the max before recovery and after
    the truncation, and the range of the maxima its group commit's batches leave
    (``RocksGroupCommitService`` writes up to 256 requests a batch, as many as are queued:
    each batch makes the max its own last unit, ``putMaxPhyAndCqOffset``, lower than the
    one before it too)."""
    from ..writers.rocksdb_consume_queue_writer import truncate_dirty

    process = plan.process
    changes: dict[tuple[str, int], QueueChange] = {}
    ends: dict[tuple[str, int], int] = {}
    cut = truncate_dirty(rocksdb, process, plan.files[0].file_from_offset if plan.files else 0) if truncate else None
    for topic, qid in rocksdb.queue_ids():
        cq = rocksdb.consume_queue(topic, qid)
        lo, hi = cq.valid_range()
        ch = changes[(topic, qid)] = QueueChange(f"{topic}/{qid}", hi - lo, hi, cq.max_physic_offset())
        end = hi
        if cut is not None and (topic, qid) in cut.max:
            end = min(cut.max[(topic, qid)][1] + 1, cq.slot_end)
        ch.cut_entries = ch.cut_messages = max(hi - end, 0)
        ends[(topic, qid)] = end
        if seen is not None:
            seen[ch.queue] = ({hi, end}, None)
        if cut is not None and (topic, qid) in cut.failed:
            rep.notes.append(f"{topic}/{qid}: RocketMQ's truncateDirty gives up on this queue (correctMaxCqOffset finds its min unit past the end "
                             "and throws): its max stays where it was")
    from ..scan.dispatch_request import queue_groups

    for records in plan.dispatch_records:  # a chunk at a time
        topics, topic_code, queue_id, offset, size, sys_flag, _, _ = _queue_columns(records)
        qoffs = records.consume_queue_offset if not isinstance(records, list) else np.asarray([r.consume_queue_offset for r in records], np.int64)
        rows = np.flatnonzero(goes_to_consume_queue(sys_flag))
        for g in (queue_groups(topic_code[rows], queue_id[rows]) if len(rows) else ()):
            g = rows[g]
            k = (topics[int(topic_code[g[0]])], int(queue_id[g[0]]))
            if k not in changes:
                changes[k] = QueueChange(f"{k[0]}/{k[1]}", 0, 0, -1, created=True)
                ends[k] = 0
            changes[k].added_entries += int((qoffs[g] >= ends[k]).sum())
            ends[k] = int(qoffs[g][-1]) + 1  # the last unit put is the max
            if seen is not None:
                values, span = seen.get(changes[k].queue, ({0}, None))
                lo, hi = int(qoffs[g].min()) + 1, int(qoffs[g].max()) + 1
                seen[changes[k].queue] = (values, (lo, hi) if span is None else (min(span[0], lo), max(span[1], hi)))
    for k, ch in changes.items():
        ch.max_offset_after = ends[k]
    return sorted(changes.values(), key=lambda c: c.queue)


def rocksdb_copy_changes(rep: RecoveryReport, plan: RecoveryPlan, copy, release) -> None:
    """The RocksDB copy beside file queues (``rocksdbCQDoubleWriteEnable``) after
    RocketMQ's start-up.  5.4+ (``CombineConsumeQueueStore``): truncated with the file
    queues (``truncateDirty`` of both), fed what re-dispatch hands on, then
    ``verifyAndInitOffsetForAllStore``: a copy's queue whose max offset is not the file
    queue's (and not both ≤ 0) is re-initialised to it (``RocksDBConsumeQueue
    .initializeWithOffset``: max and min entries at the file queue's max, no unit
    readable); ``plan.copy_reinit`` holds them.  Before 5.4 the copy is only fed
    (``enableRocksdbCQWrite`` registers its dispatcher before load; nothing truncates it)."""
    combined = release.combined_queue_store
    seen: dict = {}
    changes = {c.queue: c for c in rocksdb_changes(rep, plan, copy, truncate=plan.truncate_cq and combined, seen=seen)}
    plan.copy_changes = sorted(changes.values(), key=lambda c: c.queue)
    reinit, racy = {}, {}
    if combined:
        # start() compares while the copy's group commit (started by its recover()) may
        # still be writing what the recovery dispatched: it sees the max before recovery
        # or after the truncation, or the max of any batch landed so far.  rmqlab applies
        # the comparison once all has landed, and names the queues whose fate depends on
        # when it is made (any of those maxima judged otherwise than the last).
        def differs(mine: int, theirs: int) -> bool:
            return mine != theirs and not (mine <= 0 and theirs <= 0)

        for q in rep.queues:  # the file queues: the assigning store
            c = changes.get(q.queue)
            m, after = q.max_offset_after, (c.max_offset_after if c is not None else 0)
            values, span = seen.get(q.queue, ({0}, None))
            judged = {differs(m, v) for v in values}
            if span is not None:  # batch maxima lo..hi, all >= 1
                judged |= {True} if span != (m, m) else set()
                judged |= {False} if span[0] <= m <= span[1] else set()
            if differs(m, after):
                reinit[q.queue] = m
            if judged - {differs(m, after)}:
                racy[q.queue] = m
    plan.copy_reinit, plan.copy_racy = reinit, racy
    added = sum(c.added_entries for c in plan.copy_changes)
    cut = sum(c.cut_entries for c in plan.copy_changes)
    how = ("CombineConsumeQueueStore: truncateDirty of both stores, the re-dispatch into both" if combined else
           "enableRocksdbCQWrite: fed by the re-dispatch, never truncated (before 5.4)")
    rep.notes.append(f"the RocksDB copy of the queues ({how}): {added} unit(s) put, {cut} cut off past the end"
                     + (f"; {len(reinit)} queue(s) whose max is not the file queue's re-initialised to it at start (verifyAndInitOffsetForAllStore: "
                        + ", ".join(f"{k} → {v}" for k, v in list(reinit.items())[:5]) + ("…" if len(reinit) > 5 else "") + ")" if reinit else "")
                     + (f"; {len(racy)} queue(s) RocketMQ re-initialises or not depending on whether its group commit has written the "
                        "re-dispatch when start() compares (" + ", ".join(list(racy)[:5]) + ("…" if len(racy) > 5 else "")
                        + "): rmqlab follows the start whose writes have landed" if racy else "")
                     + "; applying writes the same into the copy")


def _insert_at_offset(lines: list[str], offset: int, line: str) -> None:
    """Put a dispatch-time log line where RocketMQ writes it: while the scan is in the
    file holding ``offset`` (before the line announcing the next file or the end)."""
    for i, l in enumerate(lines):
        m = re.match(r"recover next physics file, .*/(\d{20})$", l)
        if (m and int(m.group(1)) > offset) or re.match(r"(found a |CRC check failed|recover physics file|recover last 3 physics)", l):
            lines.insert(i, line)
            return
    lines.append(line)
