"""Salvage: the records RocketMQ's next start throws away, read back from the bytes.

RocketMQ's start-up walks the log from a start file and ends it at the *first* record
whose magic, size or CRC is wrong: everything after that point is cut, readable records
included (one flipped bit mid-file loses the rest of the file), and truncation leaves the
old bytes of cut records in place.  Salvage carves the bytes for records instead of
following the chain (:mod:`rmqlab.scan.carve`: magic, size, self-recorded offset and CRC
must agree) and says of each what the next start does with it, by where it lies against
the end of the log the recovery plan gives (:mod:`rmqlab.recovery.next_start`):

``cut``
    at or past the end of the log: the next start cuts it.  Exactly the readable records
    ``rmqlab recover`` counts as lost (one carver, one end of the log).  The default.
``past-damage``
    before the end of the log, in a file whose chain breaks at damage before it (a walk
    from the file's first record stops there; the next start's walk never reads it):
    RocketMQ keeps it and serves it where a consume queue points at it.
``in-log``
    before the end of the log, on its file's chain: RocketMQ keeps and serves it.
``past-walk``
    only for a single commitlog file given alone (no store to plan the next start for):
    past where the file's own chain stops.

Each record also says whether it was stored before the checkpoint's last flush, whether
its producer was told it was stored under the store's flush mode
(:func:`rmqlab.recovery.cause.acknowledged`), and which consumer groups had consumed it
(their committed offsets, ``config/consumerOffset.json``) and which had not: a re-send is
then a decision the output supports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from ..config import MessageStoreConfig
from ..rules import CHECKPOINT_FILE, COMMITLOG_DIR
from ..errors import RmqlabError, StoreFormatError
from ..files import MappedFile, MappedFileQueue
from ..format.record import Record
from ..scan.acceptance import scan_file
from ..scan.carve import CERTAIN, LIKELY, WEAK, carve, find_magic_positions  # noqa: F401  (re-exported: the confidences)

CUT = "cut"
PAST_DAMAGE = "past-damage"
IN_LOG = "in-log"
PAST_WALK = "past-walk"
#: every ``where``, in the order a log holds them
EVERYWHERE = (IN_LOG, PAST_DAMAGE, CUT, PAST_WALK)


@dataclass
class SalvagedRecord:
    """One record found by carving, and what the next start does with it: ``where`` it
    lies (``cut``: past the end the next start gives the log), how sure the carver is,
    whether it was flushed, acknowledged to its producer, consumed by each group.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> first = next(iter_salvage(shipped_dir() / "damaged"))
    >>> first.record.physical_offset, first.record.topic, first.where, first.confidence, first.flushed
    (263948, 'Orders', 'cut', 'certain', True)
    """

    record: Record
    file: str
    file_offset: int
    confidence: str  # certain | likely | weak
    where: str  # cut | past-damage | in-log | past-walk
    reason: str  # a sentence: why this confidence
    #: stored at or before the checkpoint's last flush (None: no checkpoint to tell by)
    flushed: bool | None = None
    #: whether its producer was told it was stored: yes | unknown (and why)
    acknowledged: str | None = None
    acknowledged_why: str = ""
    #: the consumer groups whose committed offset on its queue is past it, and those not
    consumed_by: list[str] = field(default_factory=list)
    pending_for: list[str] = field(default_factory=list)

    @property
    def physical_offset(self) -> int:
        return self.record.physical_offset

    def to_dict(self) -> dict:
        """``rmqlab dump --json`` keys plus a ``salvage`` object."""
        d = self.record.to_dict()
        d["salvage"] = {
            "file": self.file,
            "file_offset": self.file_offset,
            "confidence": self.confidence,
            "where": self.where,
            "reason": self.reason,
            "flushed": self.flushed,
            "acknowledged": self.acknowledged,
            "acknowledged_why": self.acknowledged_why,
            "consumed_by": self.consumed_by,
            "pending_for": self.pending_for,
        }
        return d


def _file_base(path: Path) -> int:
    return int(path.name) if path.name.isdigit() and len(path.name) == 20 else 0


def chain_end_in_file(buf) -> int | None:
    """Where a walk of this file's record chain from its first byte stops (the first
    record RocketMQ's acceptance rule refuses, CRC included, or the zero tail); ``None``
    when the walk leaves the file through a BLANK or at its last byte.  Not the end of
    the log (the next start may not walk this file at all): what lies after it before
    the end of the log is ``past-damage``.  Recovery's own scan
    (:func:`rmqlab.scan.acceptance.scan_file`), vectorised."""
    s = scan_file(buf)
    return None if s.blank or s.end >= len(buf) else s.end


def salvage_path(path: str | os.PathLike, **kwargs) -> list[SalvagedRecord]:
    """:func:`iter_salvage` as a list (small stores, tests).

    >>> from rmqlab.lab.samples import shipped_dir
    >>> cut = salvage_path(shipped_dir() / "damaged")   # what the next start throws away, readable
    >>> len(cut), cut[0].where, cut[0].acknowledged
    (38, 'cut', 'yes')
    """
    return list(iter_salvage(path, **kwargs))


def iter_salvage(path: str | os.PathLike, *, where: Iterable[str] | None = None, include_weak: bool = False, mapped_file_size: int | None = None,
                 more_dirs: tuple = (), config: MessageStoreConfig | None = None, rocketmq_version: str | None = None,
                 log_end: int | None = None) -> Iterator[SalvagedRecord]:
    """Salvage a single commitlog file or a whole store (its ``commitlog/`` directory),
    record by record as found (a capture of any size in bounded memory).

    ``where``: which records (:data:`CUT`, :data:`PAST_DAMAGE`, :data:`IN_LOG`; for a
    single file :data:`PAST_WALK`, :data:`IN_LOG`); default: what the next start cuts
    (for a single file: what lies past its walk).  ``log_end``: the end of the log when
    the caller has it; else the recovery plan's (``config``, ``rocketmq_version``: the
    store's settings and whose rules).  A path that is neither a commitlog file, a
    ``commitlog/`` directory nor a store root is refused (:class:`StoreFormatError`),
    before anything is read.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> past = list(iter_salvage(shipped_dir() / "damaged", where=(PAST_DAMAGE,)))
    >>> len(past), past[0].record.physical_offset, past[0].confidence   # after a flipped body at 137674
    (190, 137971, 'certain')

    (A walk from the first file stops at that older damage; RocketMQ's start does not walk
    there and still serves these records: they are not lost, and not what salvage gives
    by default.)
    """
    path = Path(path)
    if not path.exists():
        raise StoreFormatError(path, None, "no such file or directory")
    if path.is_file():
        want = set(where or (PAST_WALK,))
        return _salvage_file(MappedFile(path, _file_base(path)), include_weak, want)
    want = set(where or (CUT,))
    from ..store.layout import dledger_log_dir

    dl_dir = dledger_log_dir(path)
    if dl_dir is not None or (path.name == "data" and path.parent.name.startswith("dledger-")):
        return _salvage_dledger(dl_dir or path.parent, mapped_file_size, include_weak, want)
    directory = path / COMMITLOG_DIR if (path / COMMITLOG_DIR).is_dir() else path
    if not any(p.is_file() and p.name.isdigit() for p in directory.iterdir()):
        what = f"its {COMMITLOG_DIR}/ holds no commitlog file" if directory != path else f"neither a store root (no {COMMITLOG_DIR}/) nor a commitlog directory (no offset-named files)"
        raise StoreFormatError(path, None, f"nothing to salvage: {what}")
    root = path if directory != path else path.parent
    # more_dirs: the other directories of a log spread over several (MultiPathMappedFileQueue.load)
    queue = MappedFileQueue([directory, *more_dirs], mapped_file_size, strict=False)
    try:
        fate = _Fate(root, config, rocketmq_version, log_end, queue)
    except BaseException:
        queue.close()
        raise
    return _salvage_files(queue, include_weak, want, fate)


class _Fate:
    """What the next start does with a store's records: the end of the log, the
    checkpoint's last flush, the flush mode, the consumer groups' offsets."""

    def __init__(self, root: Path, config: MessageStoreConfig | None, rocketmq_version: str | None, log_end: int | None, queue: MappedFileQueue):
        from ..recovery.cause import acknowledged
        from ..recovery.next_start import log_end as next_start_end
        from ..store.checkpoint import read_checkpoint_fields
        from ..store.metadata import read_consumer_offsets

        self.acknowledged = acknowledged
        self.config = config or MessageStoreConfig()
        if log_end is None and (root / COMMITLOG_DIR).is_dir():
            log_end = next_start_end(root, config=config, rocketmq_version=rocketmq_version)
        if log_end is None:  # no plan for this store: where the last file's chain ends
            from ..store.commitlog import CommitLog

            log = CommitLog([d for d in {f.path.parent for f in queue.files}] or [root], strict=False)
            try:
                log_end = log.served_end()
            finally:
                log.close()
        self.log_end = log_end
        cp = read_checkpoint_fields(root) if (root / CHECKPOINT_FILE).is_file() else None
        self.flushed_ts = (cp or {}).get("physic_msg_timestamp") or 0
        try:
            self.offsets = read_consumer_offsets(root)
        except RmqlabError:
            self.offsets = None
        self.groups: dict[tuple[str, int], list[tuple[str, int]]] = {}
        if self.offsets is not None:
            for (topic, group), queues in self.offsets.table.items():
                for qid, committed in queues.items():
                    self.groups.setdefault((topic, qid), []).append((group, committed))

    def tell(self, s: SalvagedRecord) -> SalvagedRecord:
        r = s.record
        s.flushed = (r.store_timestamp <= self.flushed_ts) if self.flushed_ts and r.store_timestamp else None
        s.acknowledged, s.acknowledged_why = self.acknowledged(s.flushed, self.config)
        for group, committed in sorted(self.groups.get((r.topic, r.queue_id), ())):
            (s.consumed_by if committed > r.queue_offset else s.pending_for).append(group)
        return s


def _salvage_dledger(dledger_dir: Path, mapped_file_size: int | None, include_weak: bool, want: set) -> Iterator[SalvagedRecord]:
    """A DLedger log (``dledger-<id>/``): the log ends where DLedger's recovery ends it
    (:class:`~rmqlab.store.dledger.DLedgerCommitLog`), records are found by their magic
    and self-recorded offset as in a commitlog file, and followed by an entry header."""
    from ..store.dledger import DLedgerCommitLog

    log = DLedgerCommitLog(dledger_dir, mapped_file_size, strict=False)
    try:
        end = log.max_offset()
        for f in log.queue.files:
            for c in carve(f.buf, file=str(f.path), file_base=f.file_from_offset, include_weak=include_weak, dledger=True):
                at = CUT if c.record.physical_offset >= end else IN_LOG
                if at in want:
                    yield SalvagedRecord(c.record, c.file, c.file_offset, c.confidence, at, c.reason)
    finally:
        log.close()


def _salvage_file(mf: MappedFile, include_weak: bool, want: set) -> Iterator[SalvagedRecord]:
    """One commitlog file given alone: no store to plan the next start for, so records
    are told apart by the file's own walk."""
    try:
        stop = chain_end_in_file(mf.buf)
        start = 0 if IN_LOG in want else (len(mf.buf) if stop is None else stop)
        for c in carve(mf.buf, file=str(mf.path), file_base=mf.file_from_offset, start=start, include_weak=include_weak):
            at = PAST_WALK if stop is not None and c.file_offset >= stop else IN_LOG
            if at in want:
                yield SalvagedRecord(c.record, c.file, c.file_offset, c.confidence, at, c.reason)
    finally:
        mf.close()


def _salvage_files(queue: MappedFileQueue, include_weak: bool, want: set, fate: _Fate) -> Iterator[SalvagedRecord]:
    end = fate.log_end
    try:
        for f in queue.files:
            base = f.file_from_offset
            before_end = base < end
            if not before_end and CUT not in want:
                break
            # where the file's own chain breaks at damage (None: it does not); past the end
            # of the log every record is cut, wherever the chain breaks
            broken = chain_end_in_file(f.buf) if before_end and (PAST_DAMAGE in want or IN_LOG in want) else None
            start = 0 if (IN_LOG in want or PAST_DAMAGE in want) else max(0, end - base)
            for c in carve(f.buf, file=str(f.path), file_base=base, start=start, include_weak=include_weak):
                phy = c.record.physical_offset
                at = CUT if phy >= end else PAST_DAMAGE if broken is not None and c.file_offset >= broken else IN_LOG
                if at in want:
                    yield fate.tell(SalvagedRecord(c.record, c.file, c.file_offset, c.confidence, at, c.reason))
    finally:
        queue.close()
