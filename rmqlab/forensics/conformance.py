"""How a store departs from what an Apache RocketMQ release would write and read.

``rmqlab verify STORE --against R`` — the check the authors of another implementation of
the format (rocketmq-rust, :mod:`rmqlab.store.release`) run in their CI: every way the
store's bytes differ from what Apache RocketMQ release R writes, by kind, with a count,
the file and byte offset of the first case, the Java class and method whose rule it
breaks, and what a Java broker of release R does with it on start-up and on lookups.  A
store R itself wrote has none.

The departures are of two sorts.  *Format rules* R follows that the store does not: the
index key of a UNIQ_KEY (``IndexService.buildIndex``), the checkpoint's byte 40
(``StoreCheckpoint``), the timer store's files (``TimerMessageStore``), the lock file
(``DefaultMessageStore.start``).  And *everything verify calls an error* when it judges
the store by R's rules (:func:`rmqlab.forensics.verify.verify_store` with
``rocketmq_version=R``): a record, unit or entry R's reader would not accept, with the
broker's behaviour from :mod:`rmqlab.forensics.kinds`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..config import MessageStoreConfig
from ..releases import release as release_named
from ..rules import CHECKPOINT_FILE, LOCK_FILE
from ..store.checkpoint import read_checkpoint_fields
from ..store.release import byte_40_starts_no_record, rust_timer_paths
from .kinds import kind_of
from .verify import ERROR, verify_store

#: what Java's DefaultMessageStore.start writes into the lock file
JAVA_LOCK_CONTENT = b"lock"


@dataclass
class Departure:
    """One kind of departure: how many cases, the first one's place, the rule it
    breaks (Java class and method) and what release R's broker does.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from rmqlab.lab.samples import write_other_writers
    >>> samples = Path(tempfile.mkdtemp())
    >>> _ = write_other_writers(samples)          # what `rmqlab samples` writes beside its own
    >>> d = conformance(samples / "rocketmq-rust" / "clean", "5.3.3").departures[1]
    >>> d.kind, d.count, d.title
    ('INDEX_UNIQ_FORM', 600, 'UNIQ_KEYs indexed as topic#U#key')
    """

    kind: str
    title: str
    count: int
    file: str | None
    offset: int | None
    rule: str
    broker: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class ConformanceReport:
    """What :func:`conformance` found; ``conforms`` when nothing departs, ``to_text()``
    what ``rmqlab verify --against`` prints.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> print(conformance(shipped_dir() / "clean", "5.3.3").to_text())
    conformance of .../clean with Apache RocketMQ 5.3.3: conforms — nothing departs from what it writes and reads
    """

    root: str
    against: str
    departures: list[Departure] = field(default_factory=list)

    @property
    def conforms(self) -> bool:
        return not self.departures

    def to_dict(self) -> dict:
        return {"store": self.root, "against": self.against, "conforms": self.conforms, "departures": [d.to_dict() for d in self.departures]}

    def to_text(self) -> str:
        head = f"conformance of {self.root} with Apache RocketMQ {self.against}: "
        if self.conforms:
            return head + "conforms — nothing departs from what it writes and reads"
        out = [head + f"{len(self.departures)} kind(s) of departure"]
        for d in self.departures:
            where = f"{d.file} @ {d.offset}" if d.offset is not None else (d.file or "")
            out.append(f"  {d.kind:<22} {d.count:>7}  {d.title}")
            out.append(f"      first: {where}")
            out.append(f"      rule:  {d.rule}")
            out.append(f"      {self.against} does: {d.broker}")
        return "\n".join(out)


def conformance(root: str | os.PathLike, against: str, config: MessageStoreConfig | None = None) -> ConformanceReport:
    """Every way the store at ``root`` departs from what Apache RocketMQ ``against``
    writes and reads (see the module).  Read-only.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from rmqlab.lab.samples import write_other_writers
    >>> samples = Path(tempfile.mkdtemp())
    >>> _ = write_other_writers(samples)
    >>> report = conformance(samples / "rocketmq-rust" / "clean", "5.3.3")
    >>> report.conforms, [(d.kind, d.count) for d in report.departures]
    (False, [('INDEX_HASH', 335), ('INDEX_UNIQ_FORM', 600), ('CHECKPOINT_BYTE_40', 1), ('LOCK_CONTENT', 1)])
    """
    rel = release_named(against)
    if rel.writer != "apache":
        raise ValueError(f"--against names an Apache RocketMQ release, not {rel.title}")
    root = Path(root)
    rep = ConformanceReport(str(root), rel.name)
    verified = verify_store(root, config, rocketmq_version=rel.name)
    by_kind: dict[str, list] = {}
    for f in verified.findings:
        if f.kind == "INDEX_UNIQ_FORM" or f.severity == ERROR:
            by_kind.setdefault(f.kind, []).append(f)
    for kind, found in by_kind.items():
        first = found[0]
        if kind == "INDEX_UNIQ_FORM":
            n = verified.stats.get("index_uniq_form", len(found))
            rep.departures.append(Departure(
                kind, "UNIQ_KEYs indexed as topic#U#key", n, first.file, first.offset,
                "IndexService.buildIndex: a record's UNIQ_KEY is indexed as topic#UNIQ_KEY (IndexService.buildKey)",
                f"start-up loads the index as it is (IndexService.load); queryMessage by a UNIQ_KEY looks topic#UNIQ_KEY up and finds none of these {n} "
                "records (the admin's queryMsgByUniqueKey, message traces); KEYS and TAGS lookups are unaffected"))
        else:
            rep.departures.append(Departure(kind, kind_of(kind).title, len(found), first.file, first.offset,
                                            "verify's rule of this kind (rmqlab's documentation: Kinds of finding)", kind_of(kind).broker))
    _checkpoint(root, rel, rep, config)
    _timers(root, rep)
    _lock(root, rep)
    return rep


def _checkpoint(root: Path, rel, rep: ConformanceReport, config: MessageStoreConfig | None) -> None:
    cp = read_checkpoint_fields(root)
    if not cp or cp["logics_physical_offset"] <= 0:
        return
    value = cp["logics_physical_offset"]
    path = str(root / CHECKPOINT_FILE)
    if rel.checkpoint_longs < 6:
        rep.departures.append(Departure(
            "CHECKPOINT_BYTE_40", "the checkpoint holds a sixth long", 1, path, 40,
            f"StoreCheckpoint.flush ({rel.name}): five longs, the rest of the page zero",
            f"{rel.name} reads five longs and ignores byte 40; its next flush writes zeros there"))
        return
    if byte_40_starts_no_record(root, cp, config):
        rep.departures.append(Departure(
            "CHECKPOINT_BYTE_40", "the checkpoint's byte 40 is no record's start", 1, path, 40,
            f"StoreCheckpoint.flush ({rel.name}): byte 40 is logicsPhysicalOffset, the physical offset of the last record dispatched to a consume queue",
            f"abnormal start-up walks back to the newest commitlog file whose first record's physicalOffset is at or below {value} "
            "(ConsumeQueueStore.isMappedFileMatchedRecover): read as an offset, a value past the last record's start lets recovery start later "
            "than the records the queues miss"))


def _timers(root: Path, rep: ConformanceReport) -> None:
    present = rust_timer_paths(root)
    if present:
        rep.departures.append(Departure(
            "TIMER_LAYOUT", "timer store files of another layout", len(present), str(root / present[0]), None,
            "TimerMessageStore (TimerLog under timerlog/ as files named by offset, TimerWheel in timerwheel, TimerCheckpoint in config/timercheck)",
            f"a Java broker's timer store does not read {', '.join(present)}: timer messages held there are not delivered by it, and "
            "config/timercheck is read as its own TimerCheckpoint fields"))


def _lock(root: Path, rep: ConformanceReport) -> None:
    try:
        head = (root / LOCK_FILE).read_bytes()[:64]
    except OSError:
        return
    if head.strip(b"\0") and head != JAVA_LOCK_CONTENT:
        rep.departures.append(Departure(
            "LOCK_CONTENT", "the lock file holds something else than Java's \"lock\"", 1, str(root / LOCK_FILE), 0,
            "DefaultMessageStore.start: the lock file is locked (FileChannel.tryLock) and the 4 bytes \"lock\" written at its start",
            f"nothing: it locks the file, writes \"lock\" over the first 4 bytes and ignores the rest ({head.splitlines()[0].decode('ascii', 'replace')!r})"))
