"""Incidents of known cause, on stores Apache RocketMQ 5.3.3 wrote, judged by RocketMQ.

A base store is written by RocketMQ's own ``DefaultMessageStore`` through the harness
(:mod:`tests.oracle.harness`) under ASYNC_FLUSH and under SYNC_FLUSH, and copied live
once every record is dispatched (what a SIGKILL leaves); its checkpoint is then set as a
flush in the middle of the log would have left it (:func:`tests.oracle.workload.broker_checkpoint`:
the records stored by then were on disk).  RocketMQ loads the undamaged copy once: its
walk of the log is the truth of what was stored, where, and when.

Each incident damages a copy of a base one known way (``INCIDENTS``): the crash window
(what a power loss leaves of a log flushed only up to the checkpoint), a zeroed page
before the last flush and a zeroed sector after it, a body byte flipped in the newest
and in the oldest file (after a crash, and after a clean shutdown, whose start never
reads the oldest), a torn last write, a short and a missing commitlog file, a deleted
consume queue and a deleted index.  RocketMQ's own start on another copy says where the
log ends; from that and the truth the incident knows which acknowledged messages are
lost, which of them had been flushed, and the cause (kind, file, offset).  :func:`judge`
then asks rmqlab: its recovery, its cause, and every command (``tests.forensics.test_one_story.agree``).

The suite runs every incident once (``tests/oracle/test_incidents.py``); the long sweep,
a page zeroed at every page and a body byte flipped in every record, is
``scripts/incidents.py``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.oracle.harness import Oracle, load_request, write_request
from tests.oracle.workload import random_message, write_lines

FILE = 32768
CONFIG = {
    "mappedFileSizeCommitLog": str(FILE),
    "mappedFileSizeConsumeQueue": "400",
    "maxHashSlotNum": "128",
    "maxIndexNum": "512",
    "messageIndexEnable": "true",
    "checkCRCOnRecover": "true",
}
FLUSHES = ("ASYNC_FLUSH", "SYNC_FLUSH")
#: Java MessageDecoder, V1 record with IPv4 hosts: the body starts at byte 88 (after bodyLength)
BODY_AT = 88
PAGE, SECTOR = 4096, 512


@dataclass
class Base:
    """A store RocketMQ wrote and a kill left (``crash``), or shut down (``clean``), with
    what RocketMQ's own walk of it says was stored."""

    flush: str
    crash: Path
    clean: Path
    config: dict
    #: RocketMQ's walk of the undamaged crash copy: its MESSAGE records, in log order
    records: list[dict]
    #: the checkpoint's physicMsgTimestamp: records stored by then were flushed
    flushed_ts: int

    def files(self, root: Path) -> list[Path]:
        """The commitlog files holding records, oldest first."""
        starts = {r["physicalOffset"] // FILE for r in self.records}
        return [root / "commitlog" / f"{n * FILE:020d}" for n in sorted(starts)]

    def first_unflushed(self) -> dict:
        return next(r for r in self.records if r["storeTimestamp"] > self.flushed_ts)


@dataclass
class Incident:
    """One damaged copy: what was done, the cause rmqlab must name, and the truth."""

    name: str
    base: Base
    root: Path
    #: (kind, file, offset) of the cause, or None where nothing is lost
    cause: tuple[str, Path, int] | None
    #: RocketMQ's answer on a copy (dump.json's shape)
    rocketmq: dict = field(default_factory=dict)

    @property
    def loads(self) -> bool:
        return self.rocketmq.get("ok", True) and self.rocketmq["recovery"]["loadResult"]

    @property
    def end(self) -> int:
        return self.rocketmq["recovery"]["commitLogMaxOffsetAfterRecovery"]

    def lost(self) -> list[dict]:
        """The acknowledged messages (every put was answered PUT_OK) RocketMQ no longer
        serves after its start, as far as the store keeps a trace of them: those at or
        past its end of the log that a consume queue names or whose bytes are still
        there, and those its queues name in a commitlog file that is gone.  A transaction
        half (PREPARED, ROLLBACK: no queue names it) whose bytes are gone leaves nothing
        to count by (:meth:`untraceable`)."""
        gone = {int(p.name) for p in self.base.files(self.base.crash) if not (self.root / "commitlog" / p.name).exists()}
        return [r for r in self.base.records if (r["physicalOffset"] >= self.end and (_queued(r) or self._bytes_there(r)))
                or (r["physicalOffset"] // FILE * FILE in gone and _queued(r))]

    def untraceable(self) -> list[dict]:
        """Lost transaction halves of which the damaged store keeps no trace."""
        return [r for r in self.base.records if r["physicalOffset"] >= self.end and not _queued(r) and not self._bytes_there(r)]

    def _bytes_there(self, r: dict) -> bool:
        path = self.root / "commitlog" / f"{r['physicalOffset'] // FILE * FILE:020d}"
        if not path.exists():
            return False
        with open(path, "rb") as fh:
            fh.seek(r["physicalOffset"] % FILE)
            head = fh.read(8)
        return len(head) == 8 and struct.unpack(">i", head[:4])[0] == r["size"]

    def lost_flushed(self) -> int:
        return sum(1 for r in self.lost() if r["storeTimestamp"] <= self.base.flushed_ts)


def _queued(r: dict) -> bool:
    """A record a consume queue names (not a PREPARED or ROLLBACK half: Java's dispatch
    skips them)."""
    return r["sysFlag"] & 0xC in (0, 8)


# -- the bases -----------------------------------------------------------------------------------
def bases(oracle: Oracle, tmp: Path, seed: int = 11, n: int = 260) -> dict[str, Base]:
    """RocketMQ writes one workload under each flush mode (single puts: every record's
    put answered on its own), then loads the undamaged crash copy: the truth."""
    rng = random.Random(seed)
    key_pool = [f"k{i}" for i in range(12)] + ["shared"]
    lines = [random_message(rng, seq, key_pool, ["TopicA", "TopicB", "TopicC"]) for seq in range(n)]
    jobs = []
    for flush in FLUSHES:
        d = tmp / flush.lower()
        d.mkdir(parents=True)
        config = dict(CONFIG, flushDiskType=flush)
        jobs.append((flush, d, config, write_request(d / "clean", config, write_lines(d / "in.jsonl", lines), crash_copy=d / "crash")))
    for (flush, *_), ans in zip(jobs, oracle.map(j[-1] for j in jobs)):
        if not ans.get("ok", True) or any(r["status"] != "PUT_OK" for r in ans["results"]):
            raise AssertionError(f"RocketMQ did not write the {flush} base: {ans}")
    out, reads = {}, []
    for flush, d, config, _ in jobs:
        truth = d / "truth"
        shutil.copytree(d / "crash", truth)
        reads.append(load_request(truth, config))
        out[flush] = Base(flush, d / "crash", d / "clean", config, [], 0)
    for base, ans in zip(out.values(), oracle.map(reads)):
        base.records = [w for w in ans["commitLogWalk"] if w["kind"] == "MESSAGE"]
        base.flushed_ts = last_flush(base)
    return out


def last_flush(base: Base) -> int:
    """Set the crash copy's checkpoint as the broker's last flush before the kill left it,
    at the record in the middle of the second-to-last file holding records: its three
    timestamps that record's storeTimestamp (FlushRealTimeService / GroupCommitService
    set physicMsgTimestamp from the flushed file; the consume queues and the index were
    flushed as far), nothing else (5.3.3 writes no logicsPhysicalOffset).  The harness
    copies a live store before its first flush, so the checkpoint it left is zeros.
    Returns the timestamp: records stored by then were on disk.

    A flush lies between two records; a store written fast gives many records one
    millisecond, so the flush is put between the two records nearest that middle whose
    store times differ: records were stored before it and after it."""
    n = int(base.files(base.crash)[-2].name) // FILE
    ts_all = [r["storeTimestamp"] for r in base.records]
    mid = next(i for i, r in enumerate(base.records) if r["physicalOffset"] // FILE == n)
    mid += sum(1 for r in base.records if r["physicalOffset"] // FILE == n) // 2
    steps = sorted((i for i in range(len(ts_all) - 1) if ts_all[i] < ts_all[i + 1]), key=lambda i: abs(i - mid))
    if not steps:
        raise AssertionError("every record RocketMQ wrote has one store time: no flush can lie between two of them")
    ts = ts_all[steps[0]]
    with open(base.crash / "checkpoint", "r+b") as fh:
        fh.write(struct.pack(">qqq", ts, ts, ts))
    return ts


# -- the incidents -------------------------------------------------------------------------------
def _zero(path: Path, at: int, n: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(bytes(n))


def body_at(record: dict) -> int:
    """Where the record's body starts in it: after bodyLength, at byte 88 with IPv4 hosts;
    each IPv6 host (sysFlag BORNHOST_V6_FLAG 0x10, STOREHOSTADDRESS_V6_FLAG 0x20) is 12
    bytes longer (MessageDecoder)."""
    return BODY_AT + 12 * bool(record["sysFlag"] & 0x10) + 12 * bool(record["sysFlag"] & 0x20)


def body_length(path: Path, record: dict) -> int:
    """The record's bodyLength (the 4 bytes before its body)."""
    with open(path, "rb") as fh:
        fh.seek(record["physicalOffset"] - int(path.name) + body_at(record) - 4)
        return struct.unpack(">i", fh.read(4))[0]


def _flip_body(path: Path, record: dict) -> None:
    """A bit flipped in the middle of the record's body (what its body CRC covers)."""
    n = body_length(path, record)
    if n <= 0:
        raise ValueError(f"the record at {record['physicalOffset']} has no body to flip a bit of")
    pos = record["physicalOffset"] - int(path.name) + body_at(record) + n // 2
    data = bytearray(path.read_bytes())
    data[pos] ^= 0x40
    path.write_bytes(bytes(data))


def _with_body(base: Base, file_no: int) -> dict:
    """A queued record of that file with a body of some length."""
    path = base.crash / "commitlog" / f"{file_no * FILE:020d}"
    return next(r for r in base.records if r["physicalOffset"] // FILE == file_no and _queued(r) and body_length(path, r) > 16)


def crash_window(base: Base, root: Path):
    """A power loss: the log reached the disk up to the checkpoint's last flush; every
    byte after it is zeros (the consume queues, written later, kept their units)."""
    r = base.first_unflushed()
    n = r["physicalOffset"] // FILE
    path = root / "commitlog" / f"{n * FILE:020d}"
    at = r["physicalOffset"] - n * FILE
    _zero(path, at, FILE - at)
    for later in base.files(root):
        if int(later.name) > n * FILE:
            _zero(later, 0, FILE)
    return ("UNWRITTEN", path, at)


def zeroed_page_before_flush(base: Base, root: Path):
    """A 4 KiB page of the oldest file (flushed long before the crash) zeroed."""
    path = base.files(root)[0]
    _zero(path, 2 * PAGE, PAGE)
    return ("ZEROED_RANGE", path, 2 * PAGE)


def zeroed_sector_after_flush(base: Base, root: Path):
    """A 512-byte sector zeroed inside the records stored after the last flush."""
    r = next(x for x in base.records if x["storeTimestamp"] > base.flushed_ts and x["size"] > 2 * SECTOR)
    path = root / "commitlog" / f"{r['physicalOffset'] // FILE * FILE:020d}"
    at = (r["physicalOffset"] % FILE + SECTOR) // SECTOR * SECTOR
    _zero(path, at, SECTOR)
    return ("ZEROED_RANGE", path, at)


def flip_newest(base: Base, root: Path):
    files = base.files(root)
    r = _with_body(base, int(files[-1].name) // FILE)
    _flip_body(files[-1], r)
    return ("BODY_CRC", files[-1], r["physicalOffset"] % FILE)


def flip_oldest(base: Base, root: Path):
    """After a crash: abnormal recovery walks from the oldest file here (the checkpoint's
    minTimestamp is before every record), so the flip ends the log."""
    files = base.files(root)
    r = _with_body(base, 0)
    _flip_body(files[0], r)
    return ("BODY_CRC", files[0], r["physicalOffset"])


def flip_oldest_clean(base: Base, root: Path):
    """After a clean shutdown: normal recovery starts at the file of the queues' max
    physical offset and never reads the oldest: nothing is cut, RocketMQ serves the
    damaged record as it is."""
    _flip_body(base.files(root)[0], _with_body(base, 0))
    return None


def torn_write(base: Base, root: Path):
    """The last record's write torn: its second half never reached the disk."""
    r = base.records[-1]
    path = root / "commitlog" / f"{r['physicalOffset'] // FILE * FILE:020d}"
    at = r["physicalOffset"] % FILE
    _zero(path, at + r["size"] // 2, r["size"] - r["size"] // 2)
    return ("TORN_RECORD", path, at)


def short_file(base: Base, root: Path):
    """A commitlog file cut short (a copy interrupted, a full disk): RocketMQ's load
    refuses the store."""
    path = base.files(root)[1]
    os.truncate(path, FILE // 2)
    return ("SHORT_FILE", path, FILE // 2)


def missing_file(base: Base, root: Path):
    """The newest file holding records deleted (the empty pre-allocated one after it stays)."""
    path = base.files(root)[-1]
    path.unlink()
    return ("MISSING_FILE", path, 0)


def queue_deleted(base: Base, root: Path):
    """A consume queue deleted: RocketMQ's abnormal recovery re-dispatches it whole."""
    shutil.rmtree(root / "consumequeue" / "TopicB" / "1")
    return None


def index_deleted(base: Base, root: Path):
    """The index deleted: rebuilt from what recovery re-dispatches; nothing is lost."""
    shutil.rmtree(root / "index")
    return None


#: name -> (damage, the base copy it applies to: "crash" or "clean", flush modes)
INCIDENTS: dict[str, tuple[Callable, str, tuple[str, ...]]] = {
    "crash window": (crash_window, "crash", FLUSHES),
    "zeroed page before the last flush": (zeroed_page_before_flush, "crash", ("ASYNC_FLUSH",)),
    "zeroed sector after the last flush": (zeroed_sector_after_flush, "crash", ("ASYNC_FLUSH",)),
    "flip in the newest file": (flip_newest, "crash", ("ASYNC_FLUSH",)),
    "flip in the oldest file": (flip_oldest, "crash", ("ASYNC_FLUSH",)),
    "flip in the oldest file, clean shutdown": (flip_oldest_clean, "clean", ("ASYNC_FLUSH",)),
    "torn write": (torn_write, "crash", ("ASYNC_FLUSH",)),
    "short file": (short_file, "crash", ("ASYNC_FLUSH",)),
    "missing file": (missing_file, "crash", ("ASYNC_FLUSH",)),
    "consume queue deleted": (queue_deleted, "crash", ("ASYNC_FLUSH",)),
    "index deleted": (index_deleted, "crash", ("ASYNC_FLUSH",)),
}


def make(oracle: Oracle, all_bases: dict[str, Base], tmp: Path, cases=None) -> list[Incident]:
    """Every incident (``cases``: ``(name, flush, damage)`` triples, default ``INCIDENTS``
    under each of its flush modes) made on a copy, and RocketMQ started on another."""
    if cases is None:
        cases = [(name, flush, fn) for name, (fn, _, flushes) in INCIDENTS.items() for flush in flushes]
    made, reads = [], []
    for i, (name, flush, fn) in enumerate(cases):
        base = all_bases[flush]
        which = INCIDENTS[name][1] if name in INCIDENTS else "crash"
        root = tmp / f"incident-{i}" / "store"
        shutil.copytree(base.crash if which == "crash" else base.clean, root)
        _writable(root)
        cause = fn(base, root)
        rocket = tmp / f"incident-{i}" / "rocketmq"
        shutil.copytree(root, rocket)
        made.append(Incident(f"{name} ({flush})", base, root, cause))
        reads.append(load_request(rocket, base.config))
    for inc, ans in zip(made, oracle.map(reads)):
        inc.rocketmq = ans
    return made


def _writable(root: Path) -> None:
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)


# -- the judgement -------------------------------------------------------------------------------
def judge(inc: Incident) -> list[str]:
    """What rmqlab says against the truth: the end of the log (RocketMQ's), the
    acknowledged messages lost and those of them flushed, the cause (kind, file, offset)
    and what the producers were told; then every command's agreement.  Empty: all agree."""
    from rmqlab.config import MessageStoreConfig
    from rmqlab.recovery import recover

    from tests.forensics.test_one_story import agree

    out = []
    cfg = MessageStoreConfig.from_mapping(inc.base.config)
    rep = recover(inc.root, config=cfg)

    def check(ok: bool, what: str) -> None:
        if not ok:
            out.append(f"{inc.name}: {what}")

    if not inc.loads:
        check(rep.consequence == "does not start", f"RocketMQ's load fails, rmqlab says {rep.consequence!r}")
    else:
        check(rep.commitlog_end == inc.end, f"the end of the log: RocketMQ {inc.end}, rmqlab {rep.commitlog_end}")
        lost = inc.lost()
        check(rep.records_lost + rep.records_missing == len(lost),
              f"acknowledged messages lost: {len(lost)}, rmqlab {rep.records_lost} cut + {rep.records_missing} in missing files")
        if lost and rep.cause is not None:
            # rmqlab knows a lost record flushed by its time, or by lying before one that was;
            # the records whose bytes are gone between a flushed and an unflushed one it
            # counts apart (lost_flush_unknown): the truth lies in that span
            c = rep.cause
            check(c.lost_flushed <= inc.lost_flushed() <= c.lost_flushed + c.lost_flush_unknown,
                  f"of them flushed before the crash: {inc.lost_flushed()}, rmqlab {c.lost_flushed} (+ {c.lost_flush_unknown} unknown)")
            told = "answered PUT_OK once each was in memory" if inc.base.flush == "ASYNC_FLUSH" else "only if their own flush completed"
            if inc.base.flush == "SYNC_FLUSH" and not len(lost) - inc.lost_flushed():
                told = "flushed were acknowledged"
            check(told in rep.cause.acknowledged, f"what the producers were told: {rep.cause.acknowledged!r}")
    got = None if rep.cause is None else (rep.cause.kind, Path(rep.cause.file), rep.cause.file_offset)
    check(got == inc.cause, f"the cause: {inc.cause}, rmqlab {got}")
    if inc.loads:
        try:
            agree(inc.root)
        except AssertionError as err:
            out.append(f"{inc.name}: the commands disagree: {str(err).splitlines()[0] if str(err) else repr(err)}")
    return out


def summary(incidents: list[Incident]) -> str:
    return json.dumps([{"incident": i.name, "cause": None if i.cause is None else [i.cause[0], str(i.cause[1]), i.cause[2]],
                        "rocketmq_end": i.end if i.loads else None, "lost": len(i.lost()) if i.loads else None} for i in incidents], indent=1)
