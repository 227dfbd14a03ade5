"""What a recovery did (or, in a dry run, would do): plain data, a text rendering, JSON.

Kafka's ``LogSegment.recover()`` returns how many bytes it truncated; this is the same
idea with every decision RocketMQ's start-up makes spelled out: the mode and why, the
file the commitlog scan started from, where and why it stopped, what was cut (bytes
and the records that were still readable in them), which consume queues were cut or
rebuilt, which index files were dropped, and the log lines RocketMQ would have
written.  Everything is dataclasses of plain values, so ``to_dict()`` is the JSON of
``rmqlab recover --json`` and an HTML renderer can walk the same structure.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .. import reprs
from .cause import UNREADABLE, Cause, consequence_of  # noqa: F401  (UNREADABLE: its users import it from here)


#: the recovery report's mode where rmqlab makes no plan for the store
NOT_MODELLED = "not modelled"


@dataclass
class StopPoint:
    """Where the commitlog scan stopped and why (Java ``checkMessageAndReturnSize`` failed)."""

    kind: str  # BAD_MAGIC, BODY_CRC, SIZE_MISMATCH, BAD_SIZE, TRUNCATED, DELAY_PARSE, PROPERTY_CRC, ILLEGAL_OFFSET
    file: str
    file_offset: int
    physical_offset: int
    message: str
    zero_tail: bool  # the stop is the ordinary zero tail (magic 0 with only zeros after)
    zeroed: list = field(default_factory=list)  # [start, end) runs of zeros between the stop and the file's last non-zero byte


@dataclass
class CutRange:
    """Bytes recovery removes from the log (or leaves behind past its new end)."""

    file: str
    file_offset: int
    length: int  # non-zero extent: from the cut to the last non-zero byte
    what: str  # "tail" (after the new end, in the file that holds it) or "file" (a deleted file)
    sidecar: str | None = None  # where the bytes were saved (in-place runs)


@dataclass
class LostRecord:
    """A message record RocketMQ's truncation removes: readable in the cut bytes (see
    ``rmqlab salvage``; ``confidence`` its salvage confidence), or ``UNREADABLE``."""

    physical_offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    confidence: str
    #: its storeTimestamp where readable (0: unreadable)
    store_timestamp: int = 0


@dataclass
class GroupLoss:
    """What a recovery's cut of one queue costs one consumer group (its committed
    offset from config/consumerOffset.json): the cut messages it had not consumed yet,
    and whether its committed offset ends up past the queue's new end."""

    group: str
    queue: str
    committed_offset: int
    cut_from: int  # the cut queue offsets: [cut_from, cut_to)
    cut_to: int
    unconsumed_lost: int  # cut messages at or past the committed offset
    new_max_offset: int

    @property
    def committed_past_end(self) -> bool:
        return self.committed_offset > self.new_max_offset


@dataclass
class QueueShort:
    """A consume queue RocketMQ's recovery leaves short: the log holds ``missing``
    records of it (from ``first_queue_offset``, the first at ``first_physical_offset``)
    between the queue's end and ``redispatch_from``, where re-dispatch starts."""

    queue: str
    missing: int
    first_queue_offset: int
    first_physical_offset: int
    redispatch_from: int


@dataclass
class DispatchStop:
    """Where re-dispatch stops writing consume queues for good: the first record handed
    to dispatch whose queue's directory cannot be made (its topic is longer than a file
    name may be).  Java ``ConsumeQueue.putMessagePositionInfoWrapper`` (and
    ``BatchConsumeQueue``'s) tries 30 times a second apart, then
    ``RunningFlags.makeLogicsQueueError``: ``isCQWriteable`` is false from then on, so
    no queue gets a unit of any later record, and ``isWriteable`` too, so the broker
    refuses every put (``HookUtils.checkBeforePutMessage``: SERVICE_NOT_AVAILABLE) and
    its shutdown keeps ``abort``: every start stops at the same record."""

    physical_offset: int
    queue: str  # "topic/queueId" of that record
    #: records handed to dispatch from there on (that one included) that go to a consume
    #: queue and that no queue holds: consumers never see them
    records: int = 0


@dataclass
class QueueChange:
    """One consume queue's recovery."""

    queue: str  # "topic/queueId"
    entries_before: int  # valid entries found by Java ConsumeQueue.recover (from min offset)
    max_offset_before: int  # next queue offset after ConsumeQueue.recover
    max_physic_offset_before: int
    deleted_files: list[str] = field(default_factory=list)  # past the first invalid entry
    cut_entries: int = 0  # pointing at or past the new end of the log
    cut_messages: int = 0  # the queue offsets they covered (more than the units for a batch queue's inner batches)
    added_entries: int = 0  # re-dispatched from the commitlog
    created: bool = False  # the directory was missing: rebuilt from the commitlog
    unmakeable: bool = False  # ... but cannot be made: its topic is longer than a file name may be
    max_offset_after: int = 0


@dataclass
class IndexChange:
    file: str
    action: str  # "dropped" (endTimestamp > checkpoint indexMsgTimestamp), "created", "extended"
    end_timestamp: int | None = None
    index_msg_timestamp: int | None = None
    entries_added: int = 0


@dataclass
class ReleaseOutcome:
    """Where another RocketMQ release the store may come from would start and end its
    recovery, when that differs from the plan's (the store does not say which wrote it)."""

    release: str  # "5.4.0", or "5.4.0 and 5.5.0" where they start alike
    rule: str
    start_file: str
    start_reason: str
    commitlog_end: int
    records_scanned: int
    records_lost: int  # message records past its end of the log (readable or known from queue units)


@dataclass
class RecoveryReport:
    """Everything :func:`rmqlab.recovery.recover` decided and did: ``to_text()`` is what
    ``rmqlab recover`` prints, ``to_dict()`` its ``--json``.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> from rmqlab.recovery import recover
    >>> rep = recover(shipped_dir() / "crashed")
    >>> print(rep.to_text().splitlines()[1])
      outcome        records lost: the next start ends the log at 276681 and cuts 12 message record(s)
    >>> [(q.queue, q.max_offset_before, q.max_offset_after) for q in rep.queues][:2]
    [('Audit/0', 138, 137), ('Orders/0', 124, 122)]
    >>> rep.to_dict()["cause"]["kind"]
    'UNWRITTEN'
    """

    root: str
    applied: str  # "dry-run", "copy" or "in-place"
    target: str | None  # the store that was changed (None in a dry run)
    mode: str  # "normal" or "abnormal"
    mode_reason: str
    #: the RocketMQ release whose start-up rules the plan follows (rmqlab.releases)
    release: str = ""
    #: which releases the store may come from and why (rmqlab.store.release.ReleaseReading.to_dict)
    release_reading: dict = field(default_factory=dict)
    #: the other candidate releases whose recovery would start or end elsewhere: when not
    #: empty, the store does not say which release to follow and applying refuses
    release_outcomes: list[ReleaseOutcome] = field(default_factory=list)
    load_ok: bool = True
    load_problems: list[str] = field(default_factory=list)
    #: why the broker's start-up never ends after this recovery (4.x: a reput that cannot
    #: reach the log's end); "" if it ends
    start_hangs: str = ""
    checkpoint: dict = field(default_factory=dict)
    min_timestamp: int = 0
    rule: str = ""  # which start rule was used
    start_file: str = ""
    start_reason: str = ""
    files_scanned: list[str] = field(default_factory=list)
    max_phy_offset_in_cq_before: int = -1
    #: the consume queues' units at or past the new end of the log are cut (Java: always
    #: where the queues reach it, ``maxPhyOffsetOfConsumeQueue >= processOffset``;
    #: rocketmq-rust compares its lowest dispatch progress, which can lie below the end)
    queues_truncated: bool = True
    dispatch_from: int = -1  # normal mode: records after this offset are re-dispatched
    commitlog_end: int = 0  # Java processOffset: the new end of the log
    commitlog_end_before: int = 0  # end of the furthest bytes that looked like data before
    stop: StopPoint | None = None
    #: records the walk did not accept and stepped over, going on with the next file
    #: (``Release.invalid_record_skips_file``): the log is not cut there, and the rest
    #: of their file is neither walked nor dispatched again
    skipped: list[StopPoint] = field(default_factory=list)
    records_scanned: int = 0
    records_redispatched: int = 0  # records the dispatcher actually had to look at
    records_checked_crc: int = 0
    cut: list[CutRange] = field(default_factory=list)
    cut_bytes: int = 0
    lost_records: list[LostRecord] = field(default_factory=list)
    #: commitlog files missing from the middle of the log (RocketMQ loads it all the same):
    #: each ``[name, from offset, to offset, queue units pointing into it]``; those units'
    #: records are gone (RocketMQ answers MESSAGE_WAS_REMOVING), though nothing is cut
    missing_files: list = field(default_factory=list)
    #: ``[path, start offset, length, units]`` of each commitlog file whose length is not
    #: the configured size (RocketMQ's load refuses the store), with the queue units that
    #: point into the part a short one lacks
    short_files: list = field(default_factory=list)
    #: the storeTimestamp of the last record the log keeps (0: none read)
    last_kept_timestamp: int = 0
    #: where that record is (-1: none)
    last_kept_offset: int = -1
    #: the record the walk stops at is the last data of the log, torn at its end
    stop_is_torn: bool = False
    #: the bytes where the walk stops are zeros (what follows them is not: else the zero tail)
    stop_on_zeros: bool = False
    #: how much of the plan the report holds: "full", or "outcome" (the end of the log, the
    #: records lost and the cause, without re-dispatch's changes: plan(outcome_only=True))
    scope: str = "full"
    #: why the log ends where it does and what that costs (rmqlab.recovery.cause); None: nothing cut
    cause: Cause | None = None
    tail_zeroed: bool = False  # --zero-tail: the non-zero bytes left past the new end in its file were zeroed
    deleted_commitlog_files: list[str] = field(default_factory=list)
    queues: list[QueueChange] = field(default_factory=list)
    index: list[IndexChange] = field(default_factory=list)
    max_phy_offset_in_cq_after: int | None = None
    #: records with a key or UNIQ_KEY that no index will hold after the recovery (Java
    #: buildIndex skips what is below the kept index's endPhyOffset, and re-dispatch
    #: starts later): how many, and the first offsets
    queues_short: list[QueueShort] = field(default_factory=list)
    group_losses: list[GroupLoss] = field(default_factory=list)
    #: lost records of the timer topic that were still to fire (rmqlab.store.timer)
    timers_cut: list[LostRecord] = field(default_factory=list)
    index_unfindable: int = 0
    #: where the writer's re-indexing stops for good (rocketmq-rust:
    #: Release.index_rebuild_contiguous); None where it does not
    index_stops_at: int | None = None
    #: where re-dispatch stops putting units in any consume queue (None: it does not)
    dispatch_stop: DispatchStop | None = None
    index_unfindable_first: list[int] = field(default_factory=list)
    log_lines: list[str] = field(default_factory=list)  # what RocketMQ would log, <store> for the root
    sidecar: str | None = None
    notes: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    #: parts of the store whose recovery rmqlab does not model (each ``path: kind — why``): applying refuses
    not_modelled: list[str] = field(default_factory=list)

    # -- views ----------------------------------------------------------------------------
    @property
    def changed_queues(self) -> list[QueueChange]:
        return [q for q in self.queues if q.deleted_files or q.cut_entries or q.added_entries or q.created]

    @property
    def records_lost(self) -> int:
        return len(self.lost_records)

    def outcome(self) -> str:
        """What the next start does, in the words every output uses (recover, verify, the report)."""
        if not self.load_ok:
            return (f"RocketMQ's load refuses the store ({self.load_problems[0] if self.load_problems else 'see below'}): the broker does not start"
                    + (f"; {self.records_short} record(s) the queues name lie in the part of a short commitlog file that is gone" if self.records_short else ""))
        stop = self.dispatch_stop
        return (f"the next start ends the log at {self.commitlog_end} and cuts "
                + (f"{self.records_lost} message record(s)" if self.records_lost else "no message record")
                + (f"; {self.records_missing} record(s) the queues name lie in missing commitlog file(s)" if self.records_missing else "")
                + (f"; its dispatch stops for good at {stop.physical_offset}, a record of {stop.queue}, whose directory cannot be made: "
                   f"{stop.records} record(s) from there on reach no consume queue, and the broker refuses every put" if stop else ""))

    @property
    def records_missing(self) -> int:
        """Records the queues name (below the end of the log) in commitlog files that are gone."""
        return sum(m[3] for m in self.missing_files)

    @property
    def records_short(self) -> int:
        """Records the queues name in the part of a short commitlog file that is gone."""
        return sum(m[3] for m in self.short_files)

    @property
    def records_lost_readable(self) -> int:
        """Lost records still readable in the cut bytes (``rmqlab salvage`` gets them back)."""
        return sum(1 for r in self.lost_records if r.confidence != UNREADABLE)

    @property
    def consequence(self) -> str:
        """What the next start means for the store, in the words every output uses (rmqlab.recovery.cause.consequence_of)."""
        return consequence_of(self)

    @property
    def modelled(self) -> bool:
        """rmqlab models the store's start-up (a plan was made: not a DLedger log, ...)."""
        return self.mode != NOT_MODELLED

    def queue(self, name: str) -> QueueChange | None:
        return next((q for q in self.queues if q.queue == name), None)

    def to_dict(self) -> dict:
        """Plain JSON-ready data (``rmqlab recover --json``)."""
        return dataclasses.asdict(self)

    def to_text(self) -> str:
        """The human rendering ``rmqlab recover`` prints."""
        out = []
        what = {"dry-run": "DRY RUN — nothing was changed", "copy": f"applied to a copy: {self.target}", "in-place": f"applied IN PLACE to {self.target}"}[self.applied]
        out.append(f"recover {self.root}  ({what})")
        if self.modelled:
            out.append(f"  outcome        {self.consequence}: {self.outcome()}")
        if self.cause is not None:
            out.append(f"  cause          {self.cause.line()}")
            out.append(f"                 {self.cause.meaning()}")
        if self.not_modelled:
            out.append("  NOT APPLICABLE rmqlab does not model what RocketMQ's start-up does with these parts; --out and --in-place refuse:")
            out += [f"                 {p}" for p in self.not_modelled]
            if not self.modelled:
                out.append(f"  no plan        {self.mode_reason}")
                return "\n".join(out)
            out.append("  the plan below is the classic store's recovery only:")
        if not self.load_ok:
            out.append("  RocketMQ would refuse to load this store:")
            out += [f"    {p}" for p in self.load_problems]
        if self.start_hangs:
            out.append(f"  RocketMQ's start-up would never end: {self.start_hangs}")
        out.append(f"  mode           {self.mode} — {self.mode_reason}")
        if self.release:
            r = self.release_reading
            said = "given" if r.get("told") else " or ".join(r.get("candidates", [])) + (f": {'; '.join(r['evidence'])}" if r.get("evidence") else "")
            from ..releases import release as _release

            out.append(f"  release        {_release(self.release).title}'s rules (the store: {said})")
        for o in self.release_outcomes:
            out.append(f"  RELEASES DIFFER RocketMQ {o.release} would start at {o.start_file} ({o.start_reason}) and end the log at {o.commitlog_end} "
                       f"({o.records_lost} record(s) lost, {o.records_scanned} scanned); the store does not say which release wrote it: "
                       "--rocketmq-version chooses (--out and --in-place refuse until then)")
        if self.checkpoint:
            cp = self.checkpoint
            out.append(
                f"  checkpoint     physic={cp.get('physic_msg_timestamp')} logics={cp.get('logics_msg_timestamp')} "
                f"index={cp.get('index_msg_timestamp')}" + (f" logicsPhysicalOffset={cp['logics_physical_offset']}" if cp.get("logics_physical_offset") else "")
                + f"  minTimestamp={self.min_timestamp}"
            )
        out.append(f"  start file     {self.start_file} — {self.start_reason}")
        out.append(f"  scanned        {len(self.files_scanned)} file(s), {self.records_scanned} records, body CRC checked on {self.records_checked_crc}")
        for k in self.skipped:
            out.append(f"  stepped over   {k.physical_offset} ({k.file} @ {k.file_offset}) — {k.kind}: {k.message}")
        if self.stop is not None:
            s = self.stop
            why = "end of data (zero tail)" if s.zero_tail else f"{s.kind}: {s.message}"
            out.append(f"  stopped at     {s.physical_offset} ({s.file} @ {s.file_offset}) — {why}")
            for z0, z1 in s.zeroed:
                out.append(f"  zeroed range   {s.file} bytes [{z0}, {z1}) ({z1 - z0} bytes) are zero amid the data after the stop: a page or block zeroed")
        out.append(f"  end of log     {self.commitlog_end}" + (f"  (data-like bytes went up to {self.commitlog_end_before})" if self.commitlog_end_before > self.commitlog_end else ""))
        if self.cut_bytes:
            left = sum(c.length for c in self.cut if c.what == "tail")
            out.append(f"  past the end   {self.cut_bytes} non-zero bytes in {len(self.cut)} range(s): " + (
                f"{left} in the last file, {'zeroed (--zero-tail)' if self.tail_zeroed else 'left where they are (RocketMQ leaves them; --zero-tail zeroes them)'}"
                if left else "") + (", " if left and left < self.cut_bytes else "") + (f"{self.cut_bytes - left} in files recovery deletes" if left < self.cut_bytes else ""))
            for c in self.cut:
                side = f" → saved in {c.sidecar}" if c.sidecar else ""
                what = "left" if c.what == "tail" and not self.tail_zeroed else "zeroed" if c.what == "tail" else "file"
                out.append(f"                 {what:6} {c.file} @ {c.file_offset}, {c.length} bytes{side}")
        else:
            out.append("  cut            nothing but zeros")
        if self.lost_records:
            unreadable = self.records_lost - self.records_lost_readable
            out.append(f"  lost records   {len(self.lost_records)} message record(s) past the new end of the log: {self.records_lost_readable} readable in the cut bytes "
                       f"(rmqlab salvage recovers them), {unreadable} unreadable (damaged or never written; known from their consume-queue entries):")
            for r in self.lost_records[:20]:
                out.append(f"                 {r.physical_offset:>12}  {r.topic}/{r.queue_id} queue offset {r.queue_offset}, {r.size} bytes ({r.confidence})")
            if len(self.lost_records) > 20:
                out.append(f"                 … {len(self.lost_records) - 20} more")
        else:
            out.append("  lost records   none")
        if self.dispatch_stop is not None:
            st = self.dispatch_stop
            out.append(f"  dispatch stops at {st.physical_offset}, a record of {st.queue}: no directory can have its topic's name, so RocketMQ's dispatch "
                       "tries its unit 30 times a second apart, then writes no consume queue again (ConsumeQueue.putMessagePositionInfoWrapper: "
                       f"RunningFlags.makeLogicsQueueError); {st.records} record(s) from there on reach no queue and the broker refuses every put "
                       "(HookUtils.checkBeforePutMessage: SERVICE_NOT_AVAILABLE)")
        if self.timers_cut:
            out.append(f"  timers cut     {len(self.timers_cut)} pending timer message(s) among them never fire (rmq_sys_wheel_timer offsets "
                       + ", ".join(str(r.queue_offset) for r in self.timers_cut[:10]) + (" …" if len(self.timers_cut) > 10 else "") + ")")
        for f in self.deleted_commitlog_files:
            out.append(f"  deleted        commitlog/{f}")
        out.append(f"  consume queues max physical offset {self.max_phy_offset_in_cq_before} before" + (f", {self.max_phy_offset_in_cq_after} after" if self.max_phy_offset_in_cq_after is not None else ""))
        for q in self.changed_queues:
            parts = []
            if q.unmakeable:
                parts.append("cannot be rebuilt: the topic is longer than a file name may be on this filesystem, so its directory cannot be made "
                             "and RocketMQ's dispatch fails there (ConsumeQueue.putMessagePositionInfoWrapper: makeLogicsQueueError, no put succeeds after it)")
            elif q.created:
                parts.append("rebuilt from the commitlog (directory was missing)")
            if q.deleted_files:
                parts.append(f"files past the first invalid entry deleted: {', '.join(q.deleted_files)}")
            if q.cut_entries:
                parts.append(f"{q.cut_entries} entries cut (pointed at or past the end of the log)")
            if q.added_entries:
                parts.append(f"{q.added_entries} entries re-dispatched")
            out.append(f"    {q.queue:<28} {'; '.join(parts)}; max offset {q.max_offset_before} → {q.max_offset_after}")
        for g in self.group_losses:
            past = f"; its committed offset {g.committed_offset} ends past the queue's new end {g.new_max_offset}" if g.committed_past_end else ""
            out.append(f"  group loss     {g.group} on {g.queue}: {g.unconsumed_lost} cut message(s) it had not consumed yet "
                       f"(queue offsets [{g.cut_from}, {g.cut_to}) are cut, it had committed {g.committed_offset}){past}")
        for q in self.queues_short:
            out.append(f"  left short     {q.queue}: {q.missing} record(s) of the log (queue offset {q.first_queue_offset} on, the first at {q.first_physical_offset}) "
                       f"lie between the queue's end and where re-dispatch starts ({q.redispatch_from}): RocketMQ's recovery does not put them back")
        if self.index_unfindable:
            first = ", ".join(map(str, self.index_unfindable_first))
            why = (f"re-dispatch stops indexing at {self.index_stops_at} (the notes say why)" if self.index_stops_at is not None
                   else "re-dispatch starts after them, below it RocketMQ never indexes again")
            out.append(f"  unfindable     {self.index_unfindable} record(s) with a key or UNIQ_KEY stay in the log but no index will hold "
                       f"them (first at {first}): {why}")
        for ix in self.index:
            extra = f" (endTimestamp {ix.end_timestamp} > indexMsgTimestamp {ix.index_msg_timestamp})" if ix.action == "dropped" else (f", {ix.entries_added} entries" if ix.entries_added else "")
            out.append(f"  index          {ix.action} {ix.file}{extra}")
        out.append(f"  re-dispatched  {self.records_redispatched} record(s) went through dispatch (the rest were already in their queues and index)")
        if self.sidecar:
            out.append(f"  sidecar        {self.sidecar} (every cut byte, with manifest.json)")
        for n in self.notes:
            out.append(f"  note           {n}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:  # notebooks
        return reprs.html("recovery_report", self)
