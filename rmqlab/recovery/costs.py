"""What the store's next start costs: the records it cuts (and the one that ends the
log), the commitlog files missing from the log or short, the keys left unfindable, the
queues left short, what the cut takes from each consumer group, the timer messages it
cuts; then why (:mod:`rmqlab.recovery.cause`).

The recovery plan (:func:`rmqlab.recovery.recover.plan`) decides where the log ends;
these read the plan and fill in its report's cost.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from ..config import MessageStoreConfig
from ..errors import StoreFormatError
from ..files.extent import nonzero_extent, nonzero_past
from ..format import commitlog as cl
from ..format.layout import store_timestamp_at
from ..format.record import decode_record
from ..rules import goes_to_consume_queue, goes_to_index
from ..scan.acceptance import scan_file
from .cause import cause_of
from .model import RecoveryPlan
from .redispatch import BULK_DISPATCH_MIN, file_view
from .report import UNREADABLE, CutRange, GroupLoss, LostRecord, QueueShort, RecoveryReport


def timers_cut(rep: RecoveryReport, root: Path, cfg: MessageStoreConfig) -> None:
    """The pending timer messages among the lost records: records of the timer topic
    the timer log does not hold yet or holds in a slot still to fire
    (:mod:`rmqlab.store.timer`).  The timer store's own recovery
    (``TimerMessageStore.recover``) does not know they are gone: their units then name
    bytes past the end of the log (apache/rocketmq#10668)."""
    from ..format.timer import TIMER_TOPIC
    from ..store.timer import TimerStore, read_time_ms

    lost = [r for r in rep.lost_records if r.topic == TIMER_TOPIC]
    timer = None
    if not lost:
        return
    try:
        timer = TimerStore.of(root, cfg)
        if timer is None:
            rep.timers_cut = lost
            return
        units, _ = timer.units()
        fire = timer.to_fire(units, read_time_ms(timer.checkpoint()))
    except StoreFormatError as err:
        rep.notes.append(f"the timer store cannot be read ({err}): which cut timer messages were pending is unknown")
        return
    finally:
        if timer is not None:
            timer.close()
    # pending: not in the timer log yet (enqueued at start), or in a slot still to fire
    at = np.array([r.physical_offset for r in lost], np.int64)
    offsets = units["commitlog_offset"].astype(np.int64)
    pending = ~np.isin(at, offsets) | np.isin(at, offsets[fire])
    rep.timers_cut = [r for r, p in zip(lost, pending.tolist()) if p]


def _lost_records(rep: RecoveryReport, plan: RecoveryPlan) -> None:
    """Bytes past the new end, and the records still readable in them (carved: the
    same function ``rmqlab salvage`` gives them back with)."""
    from ..scan.carve import carve

    process = plan.process
    files = plan.files
    cut: list[CutRange] = []
    lost: list[LostRecord] = []
    for f, start_in, (_, b) in nonzero_past(files, process):
        cut.append(CutRange(str(f.path), start_in, b - start_in, "tail" if f.file_from_offset <= process else "file"))
        for s in carve(f.buf, file=str(f.path), file_base=f.file_from_offset, start=start_in):
            r = s.record
            lost.append(LostRecord(r.physical_offset, r.total_size, r.topic, r.queue_id, r.queue_offset, s.confidence, r.store_timestamp))
    # records whose bytes no longer read as a record (the damage itself) are lost too:
    # their consume-queue entries past the new end say where they were
    readable = {r.physical_offset for r in lost}
    for q in (plan.queues or {}).values():
        e, base = q.suffix_from(process)
        offs = e["commitlog_offset"]
        qoffs = q.queue_offsets(e, base)
        for i in np.flatnonzero(offs >= process).tolist():
            phy = int(offs[i])
            if phy not in readable:
                readable.add(phy)
                lost.append(LostRecord(phy, int(e["size"][i]), q.topic, q.queue_id, int(qoffs[i]), UNREADABLE))
    # the record the walk stops at, whose header still reads (its CRC or a length fails):
    # lost too, though no queue names it (a PREPARED or ROLLBACK half) and the carver,
    # which wants its CRC, does not take it
    stop = _record_at_stop(plan, process)
    if stop is not None:
        named = next((r for r in lost if r.physical_offset == stop.physical_offset), None)
        if named is None:
            lost.append(LostRecord(stop.physical_offset, stop.total_size, stop.topic, stop.queue_id, stop.queue_offset, UNREADABLE, stop.store_timestamp))
        elif not named.store_timestamp:
            named.store_timestamp = stop.store_timestamp  # when it was stored: what the last flush had written
    lost.sort(key=lambda r: r.physical_offset)
    rep.cut = cut
    rep.cut_bytes = sum(c.length for c in cut)
    rep.lost_records = lost
    if cut:
        last = max(cut, key=lambda c: c.file_offset + c.length)
        base = next(f.file_from_offset for f in files if str(f.path) == last.file)
        rep.commitlog_end_before = base + last.file_offset + last.length
    else:
        rep.commitlog_end_before = process


def _record_at_stop(plan: RecoveryPlan, process: int):
    """The message record at ``process`` (where the walk stopped) read without its CRC,
    if its header is a record's that names this offset as its own, else None."""
    f = next((f for f in reversed(plan.files) if f.file_from_offset <= process < f.file_from_offset + len(f.buf)), None)
    if f is None:
        return None
    try:
        rec = decode_record(f.buf, process - f.file_from_offset, file=str(f.path), file_base=f.file_from_offset, check_crc=False)
    except StoreFormatError:
        return None
    return rec if rec is not None and not rec.is_blank and rec.stored_physical_offset == process else None


def _stop_shape(rep: RecoveryReport, plan: RecoveryPlan) -> None:
    """What the bytes where the walk stops look like, for the cause: zeros there, or the
    last data of the log torn at its end (nothing readable after the stop, and the
    non-zero bytes end inside the record it claims to be); and the store time of the
    last record kept."""
    rep.last_kept_offset, rep.last_kept_timestamp = _last_kept(plan)
    stop = rep.stop
    f = None if stop is None else next((f for f in plan.files if str(f.path) == stop.file), None)
    if f is None:
        return
    at = stop.file_offset
    rep.stop_on_zeros = not any(bytes(f.buf[at : at + 8]))
    if not stop.zero_tail and at + 4 <= len(f.buf) and not any(r.physical_offset > plan.process and r.confidence != UNREADABLE for r in rep.lost_records):
        claimed = struct.unpack_from(">i", f.buf, at)[0]
        ext = nonzero_extent(f.path, at)
        rep.stop_is_torn = 0 < claimed <= len(f.buf) - at and ext is not None and ext[1] < at + claimed


def what_the_cut_costs(rep: RecoveryReport, plan: RecoveryPlan, cfg: MessageStoreConfig, *, mode_said: bool) -> None:
    """The records the cut loses, the files missing from the log, and why (the cause)."""
    _lost_records(rep, plan)
    _stop_shape(rep, plan)
    _missing_files(rep, plan)
    _short_files(rep, plan)
    rep.cause = cause_of(rep, cfg, mode_said=mode_said)


def _missing_files(rep: RecoveryReport, plan: RecoveryPlan) -> None:
    """Commitlog files missing from the middle of the log, and how many queue units that
    recovery keeps point into each: Java's ``MappedFileQueue.load`` checks lengths only and
    ``checkSelf`` logs the gap, so the broker starts and answers those units with
    MESSAGE_WAS_REMOVING (``findMappedFileByOffset`` finds no file): their records are gone."""
    if plan.commitlog is None or not plan.commitlog.missing:
        return
    fsize, end = plan.config.mapped_file_size_commit_log, rep.commitlog_end
    for a, b in plan.commitlog.missing:
        offsets = np.concatenate([q.offsets_from(a) for q in (plan.queues or {}).values()] or [np.zeros(0, np.int64)])
        offsets = offsets[(offsets < b) & (offsets < end)]
        for lo in range(a, b, fsize):
            hi = min(lo + fsize, b)
            rep.missing_files.append([f"{lo:020d}", lo, hi, int(((offsets >= lo) & (offsets < hi)).sum())])


def _short_files(rep: RecoveryReport, plan: RecoveryPlan) -> None:
    """Commitlog files shorter than the configured size, and how many queue units point
    into the part each lacks: Java's ``MappedFileQueue.load`` refuses a file of another
    length ("length not matched message store config value"), so the broker does not
    start; the records of the missing part are gone whatever is done next."""
    if plan.commitlog is None:
        return
    fsize = plan.config.mapped_file_size_commit_log
    for base, path, size in plan.commitlog.misfits:
        lo, hi = base + size, base + fsize
        units = 0
        if size < fsize:
            offsets = np.concatenate([q.offsets_from(lo) for q in (plan.queues or {}).values()] or [np.zeros(0, np.int64)])
            units = int(((offsets >= lo) & (offsets < hi)).sum())
        rep.short_files.append([str(path), base, size, units])


def _last_kept(plan: RecoveryPlan) -> tuple[int, int]:
    """The physical offset and storeTimestamp of the last message record the walk
    accepted ((-1, 0): none)."""
    for p in plan.positions[-2:][::-1].tolist():  # the last may be a file's BLANK
        f = next((f for f in reversed(plan.files) if f.file_from_offset <= p), None)
        at = p - f.file_from_offset if f is not None else -1
        if f is not None and at + 8 <= len(f.buf) and struct.unpack_from(">I", f.buf, at + 4)[0] in cl.MESSAGE_MAGICS:
            return int(p), int(store_timestamp_at(f.buf, at))
    return -1, 0


def unfindable_keys(rep: RecoveryReport, plan: RecoveryPlan, cfg: MessageStoreConfig) -> None:
    """Keyed records that no index holds after the recovery.  The kept index files
    hold everything below the newest one's endPhyOffset; re-dispatch indexes the
    records it hands on (abnormal: every record from the start file; normal: those
    past the queues' max offset).  What lies between the two was indexed only in the
    files a crash dropped, or never: Java's buildIndex will not index it again
    (apache/rocketmq#8007, with ``messageIndexSafe`` off).  Read with the reput's own
    reader, so the keys are the ones dispatch would index."""

    files = plan.files
    if not cfg.message_index_enable or not files or not len(plan.positions):
        return
    lo = plan.index_end_phy + 1  # the record at endPhyOffset is the last one indexed
    later = plan.handed_to_dispatch()
    hi = int(later[0]) if len(later) else rep.commitlog_end
    spans = [(lo, hi)] if hi > lo else []
    if rep.index_stops_at is not None:  # where the writer's index build stops (Release.index_rebuild_contiguous)
        spans.append((max(rep.index_stops_at, hi, 0), rep.commitlog_end))
    spans = [(a, b) for a, b in spans if b > a]
    if not spans:
        return
    count, first = 0, []
    for cols in (c for a, b in spans for c in _requests_between(plan, a, b, cfg)):
        if isinstance(cols, list):  # a few records, read one by one (no Arrow)
            keyed_at = [r.commitlog_offset for r in cols if goes_to_index(r.sys_flag) and ((r.keys or "").strip(" ") or (r.uniq_key or "").strip(" "))]
        else:
            import pyarrow.compute as pc

            keyed = np.zeros(len(cols), bool)
            for col in (cols.keys, cols.uniq_key):
                keyed |= np.asarray(pc.fill_null(pc.greater(pc.utf8_length(pc.utf8_trim(col, " ")), 0), False).to_numpy(zero_copy_only=False), bool)
            keyed &= np.asarray(goes_to_index(cols.sys_flag), bool)
            keyed_at = cols.commitlog_offset[keyed].tolist()
        count += len(keyed_at)
        first += keyed_at[: 5 - len(first)] if len(first) < 5 else []
    rep.index_unfindable, rep.index_unfindable_first = count, first


def _walked(plan: RecoveryPlan) -> dict[int, tuple[np.ndarray, int]]:
    """The record starts recovery's own scan found, per file it walked from its first
    byte (index into ``plan.files`` → (in-file starts, how far that walk read)):
    within them a walk without CRCs finds the same records, so they need not be walked
    again.  The start file of a walk begun inside it (enableAcceleratedRecovery) is left
    out: a walk from the file's start might not reach where that one began."""
    begun_inside = bool(plan.files) and plan.scan_at > plan.files[plan.start_index].file_from_offset
    # a walk that met a BLANK read its file to the end (the BLANK fills the rest)
    return {i: (s.starts, plan.files[i].file_size if s.blank else s.end) for i, s in plan.scans if not (begun_inside and i == plan.start_index)}


def _requests_between(plan: RecoveryPlan, lo: int, hi: int, cfg: MessageStoreConfig, before: tuple[int, int] | None = None):
    """The dispatch requests (columns, a file at a time) of the records the acceptance
    walk finds in ``[lo, hi)`` of the log, read with the reput's own reader; a file
    whose records there do not read is skipped (recovery's own scan says where the log
    ends, before it).  Where recovery's scan walked the file up to ``hi`` or past it,
    its record starts are taken (a clean store's queues end a few records before the
    end of the log: the walk of the whole last file again cost ~0.5 s a GiB).
    ``before``: (offset, size) of a record a queue's unit says ends at ``lo``; where
    the acceptance walk from that record reaches ``lo``, the walk of its file starts
    there instead of at the file's first byte (a queue ending in the file before
    recovery's start file: the walk of a whole 1 GiB file cost ~1.5 s).  Fewer than
    :data:`~rmqlab.recovery.redispatch.BULK_DISPATCH_MIN` records of a file come as a list
    of :class:`~rmqlab.scan.dispatch_request.DispatchRequest` s, read one by one: the bulk
    reader's compiled loops and Arrow cost a small store's dry run ~0.5 s to load."""
    from ..format.record import RecordError
    from ..scan.dispatch_request import read_dispatch_columns, read_dispatch_request

    fsize = cfg.mapped_file_size_commit_log
    walked = _walked(plan)
    for i, f in enumerate(plan.files):
        a, b = max(lo, f.file_from_offset), min(hi, f.file_from_offset + f.file_size)
        if a >= b:
            continue
        view = file_view(f, fsize)
        known = walked.get(i)
        if known is not None and b - f.file_from_offset <= known[1]:
            starts = known[0]
        else:
            starts = _walk_from(view, f.file_from_offset, lo, before)
        starts = starts[(starts + f.file_from_offset >= a) & (starts + f.file_from_offset < b)]
        if not len(starts):
            continue
        try:
            if len(starts) < BULK_DISPATCH_MIN:
                yield [read_dispatch_request(view, int(p), file_base=f.file_from_offset, file=str(f.path), delay_levels={}) for p in starts.tolist()]
            else:
                yield read_dispatch_columns(view, starts, file_base=f.file_from_offset, file=str(f.path), delay_levels={})
        except RecordError:
            continue


def group_losses(rep: RecoveryReport, root: Path) -> None:
    """Per consumer group (config/consumerOffset.json, as ConfigManager.load reads it),
    what the queues' cut costs it: the cut messages at or past its committed offset
    were never delivered to it and are gone; a committed offset past a queue's new end
    means it had consumed messages the recovery removed."""
    from ..store.metadata import read_consumer_offsets

    cut = {q.queue: q for q in rep.queues if q.cut_entries}
    if not cut:
        return
    try:
        offsets = read_consumer_offsets(root)
    except StoreFormatError as err:
        rep.notes.append(f"consumer offsets not read: {err}")
        return
    for (topic, group), queues in sorted(offsets.table.items()):
        for qid, committed in sorted(queues.items()):
            q = cut.get(f"{topic}/{qid}")
            if q is None:
                continue
            lo, hi = q.max_offset_before - q.cut_messages, q.max_offset_before
            lost = max(0, hi - max(committed, lo))
            rep.group_losses.append(GroupLoss(group, q.queue, committed, lo, hi, lost, q.max_offset_after))


def _walk_from(view, base: int, lo: int, before: tuple[int, int] | None) -> np.ndarray:
    """The in-file record starts of the acceptance walk (no CRCs) of the file at
    ``base``, from the record ``before`` names when it lies in the file and the walk
    from it reaches ``lo`` as its next record's start (or where it stops: a BLANK, the
    end), else from the file's first byte."""
    if before is not None and base <= before[0] and before[0] + before[1] == lo <= base + len(view):
        s = scan_file(view, check_crc=False, start=before[0] - base)
        if len(s.starts) and int(s.starts[0]) == before[0] - base and int(s.sizes[0]) == before[1] \
                and (len(s.starts) > 1 and int(s.starts[1]) == lo - base or len(s.starts) == 1 and s.end == lo - base):
            return s.starts
    return scan_file(view, check_crc=False).starts


def queues_left_short(rep: RecoveryReport, plan: RecoveryPlan, cfg: MessageStoreConfig) -> None:
    """Queues that end before the re-dispatch starts while the log holds more of their
    records in between: RocketMQ's recovery does not put those back (abnormal: it
    re-dispatches from the start file the checkpoint chooses; normal: only past the
    queues' max physical offset), so the queue stays short of them (Java
    ``ConsumeQueue.recover`` ends a queue at its first invalid unit; the reput starts
    later).  The log between each such queue's end and the re-dispatch start is read
    with the reput's own reader."""

    later = plan.handed_to_dispatch()
    hi = int(later[0]) if len(later) else rep.commitlog_end
    ends = {k: max(q.physic_end, plan.files[0].file_from_offset if plan.files else 0) for k, q in (plan.queues or {}).items()}
    ends = {k: e for k, e in ends.items() if e < hi}
    if not ends or not plan.files:
        return
    lo = min(ends.values())
    # the last unit of a queue that ends there: where its record is, its file's walk can start
    first = min(ends, key=ends.get)
    unit = plan.queues[first].last_unit() if ends[first] == plan.queues[first].physic_end else None
    found: dict[tuple[str, int], list] = {}
    for cols in _requests_between(plan, lo, hi, cfg, None if unit is None else (int(unit["commitlog_offset"]), int(unit["size"]))):
        if isinstance(cols, list):
            rows = [(r.topic, r.queue_id, r.commitlog_offset, r.consume_queue_offset) for r in cols if goes_to_consume_queue(r.sys_flag)]
        else:
            rows = [(cols.topic_of(r), int(cols.queue_id[r]), int(cols.commitlog_offset[r]), int(cols.consume_queue_offset[r]))
                    for r in np.flatnonzero(goes_to_consume_queue(cols.sys_flag)).tolist()]
        for topic, qid, phy, qoff in rows:
            k = (topic, qid)
            if k in ends and phy >= ends[k]:
                got = found.setdefault(k, [0, qoff, phy])
                got[0] += 1
    rep.queues_short = [QueueShort(f"{k[0]}/{k[1]}", n, qoff, phy, hi) for k, (n, qoff, phy) in sorted(found.items())]


# -- applying ----------------------------------------------------------------------------------------
