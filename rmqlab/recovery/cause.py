"""Why the next start cuts the log where it does, and what that costs: the cause first.

A recovery report lists what RocketMQ's start-up does; an examiner first wants *why*:
the finding that ends the walk (a zeroed page, a CRC failure, a torn write, a size
that lies, records the queues name but the disk never got) with its file and offset,
and what the records it costs were: records that had reached the disk (readable now,
stored before the checkpoint's last flush, or lying before data that did reach it: the
log is written in offset order) were lost to damage (a disk, a lost page write, a hand);
records past everything that reached the disk were lost to the crash window (written
to memory, never flushed); and which of them the broker had acknowledged under its
flush mode and replication.

Java: ``FlushRealTimeService`` / ``GroupCommitService`` set the checkpoint's
``physicMsgTimestamp`` to the store timestamp of the last record a flush wrote
(``MappedFileQueue.getStoreTimestamp``); the log is flushed in offset order, so every
record up to the newest one stored by then was on disk.  ``SendMessageProcessor``
answers PUT_OK under ASYNC_FLUSH once the record is in the page cache; under SYNC_FLUSH
after its flush (``CommitLog.handleDiskFlush``); a SYNC_MASTER after a slave has it
(``handleHA``).

:func:`cause_of` reads a :class:`~rmqlab.recovery.report.RecoveryReport`;
:func:`consequence_of` names what the next start means for the store as a whole.
Every command that says why (recover, verify, report, map, salvage) reads them here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import SYNC_FLUSH, MessageStoreConfig

#: a lost record whose bytes do not read as a record (damaged, or never written to disk
#: before a crash): its consume-queue unit past the new end of the log says where it was,
#: how big, which queue
UNREADABLE = "unreadable"

#: the consequences, in the words every output uses (report, verify, recover, map)
CLEAN = "clean"
RECOVERS_WITHOUT_LOSS = "crashed, recovers without loss"
RECORDS_LOST = "records lost"
#: nothing cut, but re-dispatch stops at a record no queue can be made for
#: (rmqlab.recovery.report.DispatchStop): consumers never see what follows it
DISPATCH_STOPS = "dispatch stops"
DOES_NOT_START = "does not start"
NOT_JUDGED = "not judged"

YES, UNKNOWN = "yes", "unknown"
#: the cause of a store RocketMQ's load refuses for a commitlog file's length
SHORT_FILE = "SHORT_FILE"

#: the stop kinds (``StopPoint.kind``, verify's finding kinds) in words
_WHAT = {
    "BODY_CRC": "a body CRC failure: the record's body changed after it was written (a flipped bit on the disk, in memory, or by a hand)",
    "PROPERTY_CRC": "a __CRC32# property failure: the record's bytes changed after it was written",
    "BAD_SIZE": "a size that lies: the record's totalSize is impossible here",
    "SIZE_MISMATCH": "a size that lies: the record's length fields disagree with its totalSize",
    "TRUNCATED": "a record cut short by the end of its file",
    "BAD_MAGIC": "bytes that are no record where the next record should start",
    "ILLEGAL_OFFSET": "a record that names another physical offset than where it is",
    "DELAY_PARSE": "a delayed record whose delay level cannot be read",
}


@dataclass
class Cause:
    """Why the next start ends the log where it does, where, and what it costs."""

    #: ZEROED_RANGE, TORN_RECORD, UNWRITTEN, MISSING_FILE, SHORT_FILE, or the walk's stop kind (BODY_CRC, BAD_SIZE, …):
    #: the names of ``rmqlab verify``'s findings
    kind: str
    file: str
    file_offset: int
    physical_offset: int
    #: one sentence: what the bytes there are
    what: str
    #: message records the next start cuts (``RecoveryReport.records_lost``)
    lost: int
    #: of them, those that had reached the disk (lost to damage) and those that never did
    #: (the crash window); and those the checkpoint's last flush had written (on disk)
    lost_on_disk: int
    lost_unwritten: int
    lost_flushed: int
    #: the store's flush mode and role, and what the producers of the lost records were told
    flush_disk_type: str
    broker_role: str
    acknowledged: str
    #: of the lost records, those whose bytes are gone between one the last flush wrote
    #: and one it had not: whether it wrote them is not known (``lost_flushed`` counts
    #: only those known to be flushed)
    lost_flush_unknown: int = 0

    @property
    def where(self) -> str:
        return f"{self.file} @ {self.file_offset}"

    def line(self) -> str:
        """The one line every command opens with."""
        return f"{self.kind} at {self.physical_offset} ({self.where}): {self.what}"

    def meaning(self) -> str:
        """What the cut records were, in one or two sentences."""
        if self.kind == SHORT_FILE:
            return ("Until the file has its configured size again the broker does not start; rmqlab reads it zero-padded, so the plan "
                    "below is what a start after padding it with zeros would do" + (f". {self.acknowledged}" if self.acknowledged else "."))
        if not self.lost:
            return "The next start cuts no message record there."
        parts = []
        if self.lost_on_disk:
            parts.append(f"{self.lost_on_disk} of the {self.lost} record(s) it costs had reached the disk (readable now, or before data that is): "
                         "lost to damage (a disk, a lost page write, a hand), not to the crash")
        if self.lost_unwritten:
            parts.append(f"{self.lost_unwritten} never reached the disk: the crash window (written to memory, not flushed before the crash)")
        if self.lost_flush_unknown:
            parts.append(f"{self.lost_flush_unknown} lay, their bytes gone, between a record the checkpoint's last flush had written and one it "
                         "had not: whether it wrote them is not known")
        return "; ".join(parts) + ". " + self.acknowledged

    def to_dict(self) -> dict:
        import dataclasses

        return dict(dataclasses.asdict(self), line=self.line(), meaning=self.meaning())


def broker_role(cfg: MessageStoreConfig) -> str:
    """``brokerRole`` as the config says it (Java's default ASYNC_MASTER)."""
    return str(cfg.extra.get("brokerRole", "ASYNC_MASTER")).strip().upper()


def acknowledged(flushed: bool | None, cfg: MessageStoreConfig) -> tuple[str, str]:
    """Whether the broker told the producer of a record stored ``flushed`` (before the
    checkpoint's last flush; None: unknown) that it was sent: ``(yes|unknown, why)``."""
    role, mode = broker_role(cfg), cfg.flush_disk_type
    if flushed and mode == SYNC_FLUSH:
        return YES, "SYNC_FLUSH answers after the flush, and it had been flushed"
    if role == "SYNC_MASTER":
        return UNKNOWN, "a SYNC_MASTER answers once a slave has the record: the slave's store says whether it was acknowledged"
    if mode == SYNC_FLUSH:
        return UNKNOWN, ("SYNC_FLUSH answers after the flush, and it was stored after the checkpoint's last flush: acknowledged only if "
                         "its own flush completed before the crash")
    return YES, f"{mode} answers PUT_OK once the record is in memory"


def _acknowledged_sentence(flushed: int, others: int, cfg: MessageStoreConfig, mode_said: bool) -> str:
    mode = cfg.flush_disk_type + ("" if mode_said else " (RocketMQ's default; --config names the broker's)")
    role = broker_role(cfg)
    if role == "SYNC_MASTER":
        return (f"Under {mode} on a SYNC_MASTER, the broker answered each once a slave had it: the slave's store may hold them"
                + (f"; the {flushed} flushed were acknowledged" if flushed and cfg.flush_disk_type == SYNC_FLUSH else "") + ".")
    if cfg.flush_disk_type == SYNC_FLUSH:
        said = [f"the {flushed} flushed were acknowledged to their producers" if flushed else "",
                f"the {others} others only if their own flush completed before the crash (a producer not answered sends again)" if others else ""]
        return f"Under {mode} " + " and ".join(s for s in said if s) + "."
    n = flushed + others
    return f"Under {mode} the broker answered PUT_OK once each was in memory: " + ("it was" if n == 1 else f"all {n} were") + (" acknowledged to its producer." if n == 1 else " acknowledged to their producers.")


def cause_of(rep, cfg: MessageStoreConfig, *, mode_said: bool = True) -> Cause | None:
    """The cause of the cut the report describes, or None where the next start cuts
    nothing (no damage ends the walk and no record is lost).  ``mode_said``: the flush
    mode comes from the broker's config (not RocketMQ's default)."""
    short = _short_file_cause(rep, cfg, mode_said)
    if short is not None:
        return short
    stop = rep.stop
    # damage ends the walk where it costs records, or where a crash left a record's bytes
    # there; after a clean exit, bytes past the last record that cost nothing are only
    # what follows the end of the log (dead bytes), no cause
    damage = stop is not None and not stop.zero_tail and (bool(rep.lost_records) or (rep.mode == "abnormal" and not rep.stop_on_zeros))
    if not damage and not rep.lost_records:
        return _missing_file_cause(rep, cfg, mode_said)
    flushed_ts = (rep.checkpoint or {}).get("physic_msg_timestamp") or 0
    # the log reaches the disk in offset order: everything before the furthest byte known
    # to be there (a record readable now, one the checkpoint's last flush wrote, the
    # records the walk accepts) had reached it; what lies past it never did
    reached = max([r.physical_offset + r.size for r in rep.lost_records if r.confidence != UNREADABLE or 0 < r.store_timestamp <= flushed_ts]
                  + [rep.commitlog_end])
    on_disk = sum(1 for r in rep.lost_records if r.physical_offset + r.size <= reached)
    # the log is flushed in offset order: a record the last flush wrote (stored by its
    # time) says every byte before it was written too, the unreadable records among them
    flushed_end = max([r.physical_offset + r.size for r in rep.lost_records if r.store_timestamp and flushed_ts and r.store_timestamp <= flushed_ts]
                      + [rep.commitlog_end if rep.last_kept_timestamp and rep.last_kept_timestamp <= flushed_ts else -1])
    flushed = sum(1 for r in rep.lost_records if flushed_place(r, flushed_ts, flushed_end))
    # and a record it had not written says none after it was: what lies between the two
    # (unreadable, its time unknown, but on the disk: a record that never reached it was
    # not flushed) may have been flushed or not
    unflushed_from = min([r.physical_offset for r in rep.lost_records if r.store_timestamp and r.store_timestamp > flushed_ts]
                         + [rep.commitlog_end if rep.last_kept_timestamp and rep.last_kept_timestamp > flushed_ts else 1 << 62])
    unknown = 0 if not flushed_ts else sum(1 for r in rep.lost_records if not r.store_timestamp and r.physical_offset + r.size > flushed_end
                                           and r.physical_offset < unflushed_from and r.physical_offset + r.size <= reached)
    if damage:
        kind, file, at, phy = stop.kind, stop.file, stop.file_offset, stop.physical_offset
        what = _WHAT.get(kind, stop.message)
        if stop.zeroed:
            z0, z1 = stop.zeroed[0]
            kind, at, phy = "ZEROED_RANGE", z0, phy - stop.file_offset + z0
            what = (f"{z1 - z0} bytes zeroed amid the data (a page or block lost: a write the disk never made, or a hand); "
                    f"the walk stops at the record it breaks, at {stop.physical_offset}")
        elif rep.stop_is_torn:
            kind = "TORN_RECORD"
            what = "the last record's write was torn: its end never reached the disk"
    else:
        first = rep.lost_records[0]
        kind, file, at, phy = "UNWRITTEN", stop.file if stop else "", stop.file_offset if stop else 0, rep.commitlog_end
        what = (f"the log's data ends here, and the consume queues name {len(rep.lost_records)} record(s) from {first.physical_offset} on: "
                "their bytes never reached the disk")
    unwritten = len(rep.lost_records) - on_disk
    return Cause(kind, file, at, phy, what, len(rep.lost_records), on_disk, unwritten, flushed, cfg.flush_disk_type, broker_role(cfg),
                 _acknowledged_sentence(flushed, len(rep.lost_records) - flushed, cfg, mode_said), unknown)


def _missing_file_cause(rep, cfg: MessageStoreConfig, mode_said: bool) -> Cause | None:
    """A commitlog file missing from the middle of the log whose records the queues name:
    nothing is cut, but those records are gone (RocketMQ answers MESSAGE_WAS_REMOVING)."""
    gone = [m for m in rep.missing_files if m[3]]
    if not gone:
        return None
    name, lo, hi, units = gone[0]
    n = sum(m[3] for m in gone)
    directory = str(Path(rep.root) / "commitlog")
    what = (f"commitlog file {name} ([{lo}, {hi})) is missing: the consume queues name {units} record(s) in it"
            + (f" ({n} in {len(gone)} missing files)" if len(gone) > 1 else "")
            + "; RocketMQ loads the log all the same (MappedFileQueue.load) and answers MESSAGE_WAS_REMOVING for them")
    # the file was written: its records had reached the disk and were lost with it.  The
    # log is flushed in offset order: the last flush had written them where a record after
    # the gap was flushed, none of them where a record before it was not; else unknown
    flushed_ts = (rep.checkpoint or {}).get("physic_msg_timestamp") or 0
    last, ts = rep.last_kept_offset, rep.last_kept_timestamp
    flushed = unknown = 0
    if flushed_ts and ts:
        if last >= gone[-1][2] and ts <= flushed_ts:
            flushed = n
        elif last >= gone[-1][2] or ts <= flushed_ts:
            unknown = n
    return Cause("MISSING_FILE", f"{directory}/{name}", 0, lo, what, n, n, 0, flushed, cfg.flush_disk_type, broker_role(cfg),
                 _acknowledged_sentence(flushed, n - flushed, cfg, mode_said), unknown)


def _short_file_cause(rep, cfg: MessageStoreConfig, mode_said: bool) -> Cause | None:
    """A commitlog file of another length than the configured size: RocketMQ's load
    refuses the store (``MappedFileQueue.load``: "length not matched message store config
    value"), so the broker does not start; the records the queues name in the part a
    short file lacks are gone."""
    if not getattr(rep, "short_files", None):
        return None
    path, base, size, units = rep.short_files[0]
    n = sum(m[3] for m in rep.short_files)
    what = (f"commitlog file {Path(path).name} is {size} bytes, not the configured size: RocketMQ's load refuses the store "
            "(MappedFileQueue.load), so the broker does not start"
            + (f"; the consume queues name {units} record(s) in the part it lacks, from {base + size} on: gone" if units else ""))
    return Cause(SHORT_FILE, path, size, base + size, what, n, n, 0, 0, cfg.flush_disk_type, broker_role(cfg),
                 _acknowledged_sentence(0, n, cfg, mode_said) if n else "")


def flushed_place(r, flushed_ts: int, flushed_end: int) -> bool:
    """Whether the lost record ``r`` was written by the checkpoint's last flush: stored
    by its time, or (unreadable) before the end of records that were."""
    if not flushed_ts:
        return False
    if r.store_timestamp:
        return r.store_timestamp <= flushed_ts
    return r.physical_offset + r.size <= flushed_end


def consequence_of(rep) -> str:
    """What the next start means for the store: :data:`CLEAN` (a clean exit, nothing
    cut), :data:`RECOVERS_WITHOUT_LOSS` (a crash, nothing cut), :data:`RECORDS_LOST`,
    :data:`DISPATCH_STOPS` (nothing cut, but dispatch stops short of the end) or
    :data:`DOES_NOT_START`; :data:`NOT_JUDGED` where rmqlab does not model the start-up."""
    if rep is None or not rep.modelled:
        return NOT_JUDGED
    if not rep.load_ok:
        return DOES_NOT_START
    if rep.records_lost or rep.records_missing:
        return RECORDS_LOST
    if rep.dispatch_stop is not None:
        return DISPATCH_STOPS
    return RECOVERS_WITHOUT_LOSS if rep.mode == "abnormal" else CLEAN


__all__ = ["CLEAN", "Cause", "DISPATCH_STOPS", "DOES_NOT_START", "NOT_JUDGED", "RECORDS_LOST", "RECOVERS_WITHOUT_LOSS", "acknowledged", "cause_of", "consequence_of"]
