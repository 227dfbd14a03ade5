"""A whole store at a glance (``rmqlab map``): the log as a strip of pixels along its
physical offsets, each pixel's bytes by topic, BLANK ends, damage, unwritten and dead
bytes; the ends that matter (where RocketMQ serves the log to, where its recovery would
end it, the checkpoint's offsets); under it each consume queue and index file as the
range of the log it covers, consumer groups' committed positions, and ``verify``'s
findings where they are.

One pass over the log with the bulk decoder (lenient: damage is a row), aggregated per
pixel as it goes: memory is ``width`` × topics shown, whatever the store's size.  The
recovery plan and the findings are the caller's (``rmqlab recover``'s dry run and
``rmqlab verify``: a layer above this one runs them); :mod:`rmqlab.render.storemap`
draws it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import reprs
from ..store.reader import StoreReader
from ..recovery.next_start import Asked

#: topics drawn in their own colour; the rest are "other"
TOPICS_SHOWN = 8
#: distinct topics counted on their own while the pass runs (more go to "other" at once:
#: memory stays bounded on a store of many topics, LMQ's)
TOPICS_COUNTED = 256
OTHER = "(other topics)"
_NONE = np.iinfo(np.int64).max  # no record starts in a pixel (first_start)
#: findings kept on the map (the rest counted)
FINDINGS_SHOWN = 500


@dataclass
class StoreMap:
    """What ``rmqlab map`` draws (see the module).  Arrays are per pixel of the strip.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> m = build_map(shipped_dir() / "damaged", width=200)
    >>> m.width, m.served_end, m.topics[:3]
    (200, 263650, ['Orders', 'Payments', 'Audit'])
    >>> m.record_at(m.pixel(263650)) is not None, int(m.damage_bytes.sum()) > 0
    (True, True)
    """

    root: str
    width: int
    lo: int  # the first physical offset drawn (the first file's)
    hi: int  # one past the last (the last file's end)
    files: list = field(default_factory=list)  # {name, base, size, data_end, kind}
    topics: list = field(default_factory=list)  # the topics shown, then OTHER
    topic_bytes: np.ndarray | None = None  # (len(topics), width): message bytes by topic
    records: np.ndarray | None = None  # (width,) records starting there
    blank_bytes: np.ndarray | None = None
    damage_bytes: np.ndarray | None = None  # bytes of records lenient decoding calls damaged
    first_start: np.ndarray | None = None  # (width,) the first record (any kind) starting there, -1 for none
    last_start: np.ndarray | None = None  # (width,) the last one, -1 for none
    served_end: int = 0  # where RocketMQ serves the log up to
    recovery: dict = field(default_factory=dict)  # {mode, end, end_before} of recovery's dry run
    checkpoint: dict = field(default_factory=dict)
    queues: list = field(default_factory=list)  # {name, lo, hi, units}
    index_files: list = field(default_factory=list)  # {name, lo, hi, entries}
    groups: list = field(default_factory=list)  # {group, queue, committed, phy}
    findings: list = field(default_factory=list)  # {kind, severity, file, offset, phy, message}
    findings_left_out: int = 0

    def _repr_html_(self) -> str:  # notebooks: the picture
        return reprs.html("storemap", self)

    def pixel(self, phy: int) -> int:
        return int(min(self.width - 1, max(0, (phy - self.lo) * self.width // max(1, self.hi - self.lo))))

    def span(self, px: int) -> tuple[int, int]:
        """The log's bytes ``[a, b)`` pixel ``px`` stands for."""
        n = max(1, self.hi - self.lo)
        return self.lo + (px * n + self.width - 1) // self.width, self.lo + ((px + 1) * n + self.width - 1) // self.width

    def record_at(self, px: int) -> int | None:
        """The physical offset of the record to show for pixel ``px``: the first one
        starting in it, else the last one starting before it in the same file (it may
        reach into the pixel; the caller reads its size), or None."""
        if self.first_start is None or not 0 <= px < self.width:
            return None
        if self.first_start[px] >= 0:
            return int(self.first_start[px])
        before = self.last_start[:px][self.last_start[:px] >= 0]
        f = self.file_at(self.span(px)[0])
        # not across a file boundary: a file's records end in it (BLANK or its end)
        return int(before[-1]) if len(before) and f is not None and before[-1] >= f["base"] else None

    def file_at(self, phy: int) -> dict | None:
        """The commitlog file (of :attr:`files`) holding offset ``phy``."""
        return next((f for f in self.files if f["base"] <= phy < f["base"] + f["size"]), None)

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if not isinstance(v, np.ndarray) and v is not None}
        d["pixels"] = {"topic_bytes": {t: self.topic_bytes[i].tolist() for i, t in enumerate(self.topics)} if self.topic_bytes is not None else {},
                       "records": self.records.tolist() if self.records is not None else [],
                       "blank_bytes": self.blank_bytes.tolist() if self.blank_bytes is not None else [],
                       "damage_bytes": self.damage_bytes.tolist() if self.damage_bytes is not None else [],
                       "first_record": self.first_start.tolist() if self.first_start is not None else []}
        return d


class LogPixels:
    """The map's counts of the log's records per pixel, fed the batches of one lenient
    pass over the log: the map's own, or verify's when a report draws both (one pass
    for the two; verify's checks CRCs, and a record whose CRC fails is drawn as the
    message it is, as the map's own pass, which does not check them, draws it).  Fed in
    log order (the first :data:`TOPICS_COUNTED` topics met are counted on their own);
    ``timeline`` is fed the same records."""

    #: the columns :meth:`add` reads
    COLUMNS = ("physical_offset", "total_size", "topic", "kind", "error", "store_timestamp")

    def __init__(self, lo: int, hi: int, width: int, timeline=None):
        self.lo, self.hi, self.width, self.timeline = lo, hi, width, timeline
        self.span = max(1, hi - lo)
        self.counts: dict[str, np.ndarray] = {}
        self.records = np.zeros(width, np.int64)
        self.blank = np.zeros(width, np.int64)
        self.damage = np.zeros(width, np.int64)
        self.first_start, self.last_start = np.full(width, _NONE, np.int64), np.full(width, -1, np.int64)
        self.data_end: dict[int, int] = {}  # a file's base -> where its records end

    @classmethod
    def of_log(cls, root, config=None, width: int = 1200, timeline=None) -> "LogPixels | None":
        """Counts for the log of the store at ``root``, to be fed verify's pass over it
        (:func:`~rmqlab.forensics.verify.verify_store`'s ``on_batch``); None where that
        pass does not tell its batches (a DLedger log, read entry by entry) or there is
        no log."""
        from ..store.dledger import DLedgerCommitLog

        with StoreReader(root, config, strict=False) as store:
            files = store.commitlog.queue.files
            if isinstance(store.commitlog, DLedgerCommitLog) or not files:
                return None
            return cls(files[0].file_from_offset, files[-1].file_from_offset + files[-1].file_size, width, timeline)

    def _spread(self, into: np.ndarray, start: np.ndarray, size: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Each record's bytes to the pixels it covers (pixel i holds the log's bytes
        [lo + i*span/width, lo + (i+1)*span/width)): into ``into``, or with ``rows``
        (each record's row of the 2-D ``into``) into that row."""
        lo, span, width = self.lo, self.span, self.width
        end = start + size
        first = np.minimum(width - 1, (start - lo) * width // span)
        last = np.minimum(width - 1, np.maximum(end - 1 - lo, start - lo) * width // span)
        one = first == last
        flat = into.reshape(-1)
        at = first if rows is None else rows * width + first
        if one.any():  # bincount's float sums are exact below 2^53
            flat += np.bincount(at[one], weights=size[one], minlength=len(flat)).astype(np.int64)
        for a, b, p0, p1, base in zip(start[~one].tolist(), end[~one].tolist(), first[~one].tolist(), last[~one].tolist(), (at - first)[~one].tolist()):
            edges = lo + (np.arange(p0, p1 + 2) * span + width - 1) // width  # pixel boundaries, rounded up
            edges[0], edges[-1] = a, b
            flat[base + p0 : base + p1 + 1] += np.maximum(np.diff(edges), 0)

    def add(self, base: int, file_size: int, batch) -> None:
        """One batch of the lenient scan of the file starting at ``base``.  On the thread
        beside verify's in a report: numpy and Arrow calls that each see the whole batch,
        few of them (the GIL it holds is verify's time)."""
        from ..format.record import BODY_CRC, PROPERTY_CRC
        from ..scan import compute as ac
        from ..scan.decode import KIND_BLANK, KIND_MESSAGE

        lo, span, width = self.lo, self.span, self.width
        n = batch.num_rows
        if not n:
            return
        phy = np.asarray(batch.column("physical_offset").to_numpy(zero_copy_only=False), np.int64)
        size = np.asarray(ac.fill_null(batch.column("total_size"), 8).to_numpy(zero_copy_only=False), np.int64).clip(min=0)
        kinds, kind = _codes(batch.column("kind"))
        error = batch.column("error")
        read_whole = np.ones(n, bool) if error.null_count == n else np.asarray(ac.is_null(error).to_numpy(zero_copy_only=False), bool)
        is_blank = np.isin(kind, [i for i, k in enumerate(kinds) if k == KIND_BLANK])
        # a CRC kind on a row without an error: a record read whole whose CRC fails (verify's
        # pass checks them); with an error, bytes that stopped the decoder
        is_msg = np.isin(kind, [i for i, k in enumerate(kinds) if k == KIND_MESSAGE]) | (
            np.isin(kind, [i for i, k in enumerate(kinds) if k in (BODY_CRC, PROPERTY_CRC)]) & read_whole)
        is_bad = ~is_blank & ~is_msg
        px = np.minimum(width - 1, (phy - lo) * width // span)
        if (px[1:] >= px[:-1]).all():  # a scan's rows come in log order: each pixel's a run
            cut = np.flatnonzero(px[1:] != px[:-1]) + 1
            firsts, lasts = np.concatenate(([0], cut)), np.concatenate((cut - 1, [n - 1]))
            at = px[firsts]
            self.first_start[at] = np.minimum(self.first_start[at], phy[firsts])
            self.last_start[at] = np.maximum(self.last_start[at], phy[lasts])
        else:
            np.minimum.at(self.first_start, px, phy)
            np.maximum.at(self.last_start, px, phy)
        self.records += np.bincount(px[is_msg], minlength=width)
        if is_blank.any():
            self._spread(self.blank, phy[is_blank], size[is_blank])
        if is_bad.any():
            self._spread(self.damage, phy[is_bad], np.minimum(size[is_bad], base + file_size - phy[is_bad]))
        if is_msg.any():
            names, codes = _codes(batch.column("topic"), is_msg)
            mphy, msize = phy[is_msg], size[is_msg]
            if self.timeline is not None:
                self.timeline.add(names, codes, np.asarray(ac.fill_null(batch.column("store_timestamp"), 0).to_numpy(zero_copy_only=False), np.int64)[is_msg])
            spread = np.zeros((len(names), width), np.int64)
            self._spread(spread, mphy, msize, codes)
            present = np.bincount(codes, minlength=len(names)) > 0
            for c, t in enumerate(names):
                if not present[c]:
                    continue  # the null slot, no record of it here
                if t not in self.counts and len(self.counts) >= TOPICS_COUNTED:
                    t = OTHER
                arr = self.counts.get(t)
                if arr is None:
                    arr = self.counts[t] = np.zeros(width, np.int64)
                arr += spread[c]
        self.data_end[base] = max(self.data_end.get(base, base), int((phy + size).max()))

    def into(self, m: StoreMap, qfiles) -> None:
        """The counts onto ``m``, with each of ``qfiles`` (the log's files, as the store
        reader lists them) as far as its records go."""
        for f in qfiles:
            base = f.file_from_offset
            data_end = self.data_end.get(base, base)
            kind = "empty" if data_end == base else ("full" if data_end >= base + f.file_size - 8 else "partly written")
            m.files.append({"name": f.path.name, "base": base, "size": f.file_size, "data_end": min(data_end, base + f.file_size), "kind": kind})
        counts = self.counts
        order = sorted((t for t in counts if t != OTHER), key=lambda t: -int(counts[t].sum()))
        shown, rest = order[:TOPICS_SHOWN], order[TOPICS_SHOWN:] + ([OTHER] if OTHER in counts else [])
        m.topics = shown + ([OTHER] if rest else [])
        rows = [counts[t] for t in shown] + ([np.sum([counts[t] for t in rest], axis=0)] if rest else [])
        m.topic_bytes = np.array(rows, np.int64) if rows else np.zeros((0, self.width), np.int64)
        m.records, m.blank_bytes, m.damage_bytes = self.records, self.blank, self.damage
        m.first_start, m.last_start = np.where(self.first_start == _NONE, -1, self.first_start), self.last_start


def _codes(column, rows: np.ndarray | None = None) -> tuple[list, np.ndarray]:
    """(the distinct values of ``column``'s ``rows`` — a mask; default all — in the order
    they first appear there, each row's index into them; a null is the last value, None):
    one dictionary encoding, its few values the only Python objects."""
    from ..scan import compute as ac

    if rows is not None and not rows.all():
        column = ac.filter(column, ac.mask(rows))
    enc = ac.dictionary_encode(column)
    values = enc.dictionary.to_pylist()
    codes = np.asarray(ac.fill_null(enc.indices, len(values)).to_numpy(zero_copy_only=False), np.int64)
    return values + [None], codes


def build_map(root: str | os.PathLike, *, config=None, width: int = 1200, findings=(), recovery=None, progress=None, file: str | None = None, timeline=None, pixels: LogPixels | None = None) -> StoreMap:
    """The map of the store at ``root`` (read-only; ``config``: a
    :class:`~rmqlab.config.MessageStoreConfig`, default sizes inferred from the files).  ``findings``: verify's
    (:class:`~rmqlab.forensics.verify.Finding`); ``recovery``: recovery's dry-run report
    (``mode``, ``commitlog_end``, ``commitlog_end_before``), or None; ``file``: one
    commitlog file's name, to draw only its bytes (zoomed in: the rest of the map —
    queues, index files, ends, findings — is drawn where it falls in that file);
    ``timeline``: a :class:`~rmqlab.forensics.timeline.Timeline` fed the records of the
    same pass (a report's: one pass over the log for both); ``pixels``: the
    :class:`LogPixels` of a pass already made over the whole log (verify's, in a
    report): the map then reads no record itself, and ``timeline`` was fed there.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> m = build_map(shipped_dir() / "clean", width=400)
    >>> len(m.files), int(m.records.sum())
    (5, 904)
    """
    from ..errors import RmqlabError
    from ..scan import decode as fd

    # the end of the log is the next start's: the dry run's when given, else asked of the plan
    if recovery is not None and recovery.modelled:
        end, cut = recovery.commitlog_end, recovery.queues_truncated
    else:
        asked = Asked(root, config)
        end, cut = asked.log_end, asked.queues_truncated
    with StoreReader(root, config, strict=False, log_end=end, queues_truncated=cut) as store:
        qfiles = list(store.commitlog.queue.files)
        if file is not None:
            names = [f.path.name for f in qfiles]
            qfiles = [f for f in qfiles if f.path.name == file]
            if not qfiles:
                raise RmqlabError(f"{store.root / 'commitlog' / file}: no such commitlog file (the log's files: {', '.join(names) or 'none'})")
        if not qfiles:
            return StoreMap(str(root), width, 0, 0)
        lo, hi = qfiles[0].file_from_offset, qfiles[-1].file_from_offset + qfiles[-1].file_size
        m = StoreMap(str(store.root), width, lo, hi)
        if pixels is not None and (pixels.lo, pixels.hi, pixels.width) != (lo, hi, width):
            raise RmqlabError(f"{store.root / 'commitlog'}: the log's files changed while it was read (offsets {pixels.lo}-{pixels.hi}, now {lo}-{hi})")
        if pixels is None:
            pixels = LogPixels(lo, hi, width, timeline)
            for f in qfiles:
                for batch in fd.scan_range(f.buf, file_base=f.file_from_offset, file=str(f.path), mode="lenient", verify_crc=False, include_body=False,
                                           columns=LogPixels.COLUMNS if timeline is not None else LogPixels.COLUMNS[:-1], data_end=f.data_end):
                    pixels.add(f.file_from_offset, f.file_size, batch)
                    if progress is not None:
                        progress.update(pixels.data_end.get(f.file_from_offset, f.file_from_offset) - lo, int(pixels.records.sum()))
        pixels.into(m, qfiles)
        m.served_end = store.commitlog.served_end()
        cp = store.checkpoint()
        if cp is not None:
            m.checkpoint = {k: v for k, v in cp.to_dict().items() if isinstance(v, int)}
        _queues(store, m)
        _index_files(store, m)
        _groups(store, m)
    if recovery is not None:
        cause = getattr(recovery, "cause", None)
        m.recovery = {"mode": getattr(recovery, "mode", None), "end": recovery.commitlog_end, "end_before": recovery.commitlog_end_before,
                      "consequence": getattr(recovery, "consequence", None), "cause": None if cause is None else cause.line(),
                      # what recovery does to each index file and queue (the report's IndexChange / QueueChange)
                      "dropped_index": [Path(i.file).name for i in getattr(recovery, "index", ()) if i.action == "dropped"],
                      "queues": {q.queue: {"cut": q.cut_entries, "added": q.added_entries, "created": q.created}
                                 for q in getattr(recovery, "queues", ()) if q.cut_entries or q.added_entries or q.created}}
        have = {q["name"] for q in m.queues}
        for name, change in m.recovery["queues"].items():
            if change["created"] and name not in have:  # no directory: a track for the queue recovery rebuilds
                m.queues.append({"name": name, "units": 0, "lo": None, "hi": None})
    mark_findings(m, findings)
    return m


def _queues(store: StoreReader, m: StoreMap) -> None:
    from ..errors import RmqlabError

    for q in store.queue_ids():
        try:
            cq = store.consume_queue(q.topic, q.queue_id)
            lo, hi = cq.valid_range(store.commitlog.min_offset)
            first, last = (cq.get(lo), cq.get(hi - 1)) if hi > lo else (None, None)
        except (RmqlabError, OSError):
            continue
        m.queues.append({"name": f"{q.topic}/{q.queue_id}", "units": hi - lo, "lo": first.commitlog_offset if first else None,
                         "hi": last.commitlog_offset + last.size if last else None})


def _index_files(store: StoreReader, m: StoreMap) -> None:
    for f in store.index.files:
        h = f.header
        m.index_files.append({"name": f.name, "lo": h.begin_phy_offset, "hi": h.end_phy_offset, "entries": max(0, h.index_count - 1)})


def _groups(store: StoreReader, m: StoreMap) -> None:
    from ..errors import RmqlabError
    from ..lookup import consumer_progress
    from ..store.metadata import read_consumer_offsets

    try:
        rows = consumer_progress(store, read_consumer_offsets(store.root))
    except (RmqlabError, OSError, ValueError):
        return
    for r in rows:
        phy = None
        try:
            e = store.consume_queue(r.topic, r.queue_id).get(r.committed_offset)
            phy = e.commitlog_offset if e is not None and e.size > 0 else None
        except (RmqlabError, OSError):
            pass
        m.groups.append({"group": r.group, "queue": f"{r.topic}/{r.queue_id}", "committed": r.committed_offset, "lag": r.lag, "phy": phy})


def mark_findings(m: StoreMap, findings) -> None:
    """verify's findings (:class:`~rmqlab.forensics.verify.Finding`) on the map, where
    each falls in the log (the first :data:`FINDINGS_SHOWN`; the rest counted)."""
    names = {f["name"]: f["base"] for f in m.files}
    for f in findings:
        if len(m.findings) >= FINDINGS_SHOWN:
            m.findings_left_out += 1
            continue
        name = Path(f.file).name if f.file else ""
        phy = names[name] + (f.offset or 0) if name in names and f.offset is not None else None
        m.findings.append({"kind": f.kind, "severity": f.severity, "file": f.file, "offset": f.offset, "phy": phy, "message": f.message})
