"""A store's life in time: how many records each topic stored per minute, from the
records' own ``storeTimestamp`` (Java ``MessageExt.storeTimestamp``, set by
``CommitLog.asyncPutMessage`` when the broker appends the record).

A :class:`Timeline` is an accumulator fed batches of decoded records (``rmqlab map``'s
pass over the log feeds one when asked, so a report reads the log once for both);
:func:`store_timeline` is the same in a pass of its own.  The bucket follows the
capture's span and memory stays bounded whatever the store's size and age: a bucket
starts at one second and widens (5 s, 15 s, 1 min, 5 min, ... a month) while the span
would need more than :data:`MAX_BUCKETS` of them or the counted (topic, bucket) pairs
pass :data:`MAX_CELLS`; topics past :data:`TOPICS_TRACKED` are counted together as
:data:`OTHER` (their totals stay exact).
Read-only.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

#: bucket widths in milliseconds, narrowest first
WIDTHS = (1_000, 5_000, 15_000, 60_000, 5 * 60_000, 15 * 60_000, 3_600_000, 6 * 3_600_000, 86_400_000, 7 * 86_400_000, 30 * 86_400_000)
#: buckets a capture's span is drawn in at most (a chart of a few hundred columns)
MAX_BUCKETS = 400
#: (topic, bucket) cells counted at most before the buckets widen
MAX_CELLS = 50_000
#: topics counted per bucket (the first seen); the rest share one row
TOPICS_TRACKED = 24
OTHER = "(other topics)"


def width_for(first_ms: int, last_ms: int, rows: int) -> int:
    """The narrowest bucket that draws the span ``[first_ms, last_ms]`` in at most
    :data:`MAX_BUCKETS` buckets and ``rows`` topic rows in at most :data:`MAX_CELLS`
    cells (what a :class:`Timeline` widens to as it counts)."""
    span = last_ms - first_ms
    return next((w for w in WIDTHS if span // w + 1 <= MAX_BUCKETS and (span // w + 2) * rows <= MAX_CELLS), WIDTHS[-1])


class Timeline:
    """Records per topic per time bucket, and around the checkpoint: ``flushed_ms`` (the
    checkpoint's ``physicMsgTimestamp``, the store time of the last record flushed) splits
    the records into those flushed and those stored after it (a crash's window).
    :func:`store_timeline` makes one; ``to_dict()`` is what ``rmqlab report --json``
    shows of it.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> t = store_timeline(shipped_dir() / "clean")
    >>> t.to_dict()["records"], dict(t.totals)
    (904, {'Orders': 501, 'Payments': 265, 'Audit': 138})
    """

    def __init__(self, flushed_ms: int | None = None):
        self.width = WIDTHS[0]
        self.cells: Counter = Counter()  # (topic, bucket start ms) -> records
        self.totals: Counter = Counter()  # topic -> records (exact, every topic)
        self.after_flush: Counter = Counter()  # topic -> records stored after flushed_ms
        self.flushed_ms = flushed_ms
        self.first_ms: int | None = None
        self.last_ms: int | None = None
        self.records = 0
        self._tracked: set[str] = set()

    def add(self, names: list[str], codes, store_timestamps) -> None:
        """One batch of message records: each one's topic as a code into ``names``, and
        its store timestamp (ms), in the same order."""
        ts = np.asarray(store_timestamps, np.int64)
        codes = np.asarray(codes, np.int64)
        if not len(ts):
            return
        lo, hi = int(ts.min()), int(ts.max())
        self.first_ms = lo if self.first_ms is None else min(self.first_ms, lo)
        self.last_ms = hi if self.last_ms is None else max(self.last_ms, hi)
        self.records += len(ts)
        buckets = ts - ts % self.width
        for code, topic in enumerate(names):
            sel = codes == code
            if not sel.any():
                continue
            self.totals[topic] += int(sel.sum())
            if self.flushed_ms is not None:
                late = int((ts[sel] > self.flushed_ms).sum())
                if late:
                    self.after_flush[topic] += late
            if topic not in self._tracked and len(self._tracked) < TOPICS_TRACKED:
                self._tracked.add(topic)
            row = topic if topic in self._tracked else OTHER
            b, n = np.unique(buckets[sel], return_counts=True)
            for start, count in zip(b.tolist(), n.tolist()):
                self.cells[(row, start)] += count
        self._fit()

    def _fit(self) -> None:
        """Widen the buckets while the span needs more than :data:`MAX_BUCKETS` of them
        (:func:`width_for`, the rule the Spark job picks its width by) or the counted
        cells pass :data:`MAX_CELLS`."""
        span_width = width_for(self.first_ms, self.last_ms, 1) if self.first_ms is not None else WIDTHS[0]
        while (len(self.cells) > MAX_CELLS or self.width < span_width) and self.width != WIDTHS[-1]:
            self._widen()

    @classmethod
    def from_counts(cls, width: int, cells: dict, totals: dict, after_flush: dict, *, first_ms: int | None, last_ms: int | None,
                    flushed_ms: int | None = None) -> "Timeline":
        """A timeline counted elsewhere (a Spark job's aggregates): ``cells`` (topic, bucket
        start) → records for buckets of ``width`` ms, ``totals`` and ``after_flush`` topic →
        records.  Topics past :data:`TOPICS_TRACKED` (fewest records first) share
        :data:`OTHER`, as they do here."""
        tl = cls(flushed_ms)
        tl.width = width
        tl.totals, tl.after_flush = Counter(totals), Counter(after_flush)
        tl._tracked = {t for t, _ in tl.totals.most_common(TOPICS_TRACKED)}
        for (topic, start), n in cells.items():
            tl.cells[(topic if topic in tl._tracked else OTHER, start)] += n
        tl.first_ms, tl.last_ms, tl.records = first_ms, last_ms, sum(tl.totals.values())
        tl._fit()
        return tl

    def _widen(self) -> None:
        self.width = WIDTHS[WIDTHS.index(self.width) + 1]
        cells: Counter = Counter()
        for (topic, start), n in self.cells.items():
            cells[(topic, start - start % self.width)] += n
        self.cells = cells

    def series(self) -> dict[str, dict[int, int]]:
        """topic -> {bucket start ms: records}, topics by their record count."""
        rows = sorted({t for t, _ in self.cells}, key=lambda t: (t == OTHER, -self.totals.get(t, 0), t))
        out: dict[str, dict[int, int]] = {t: {} for t in rows}
        for (topic, start), n in sorted(self.cells.items(), key=lambda kv: kv[0][1]):
            out[topic][start] = n
        return out

    def to_dict(self) -> dict:
        return {
            "bucket_ms": self.width,
            "records": self.records,
            "first_store_timestamp": self.first_ms,
            "last_store_timestamp": self.last_ms,
            "per_topic": dict(self.totals.most_common()),
            "flushed_store_timestamp": self.flushed_ms,
            "after_flush": dict(self.after_flush.most_common()),
            "series": {t: {str(k): v for k, v in s.items()} for t, s in self.series().items()},
        }


def feed(timeline: Timeline, batch, is_message: np.ndarray) -> None:
    """Feed the message records of one bulk-decoded batch (:mod:`rmqlab.scan.decode`,
    with the ``topic`` and ``store_timestamp`` columns) to ``timeline``."""
    if not is_message.any():
        return
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(batch.column("topic").filter(is_message))
    ts = np.asarray(batch.column("store_timestamp").filter(is_message).to_numpy(zero_copy_only=False), np.int64)
    timeline.add(enc.dictionary.to_pylist(), enc.indices.to_numpy(zero_copy_only=False), ts)


def store_timeline(root: str | os.PathLike, *, config=None, flushed_ms: int | None = None, progress=None) -> Timeline:
    """The :class:`Timeline` of the store at ``root`` in one pass over its log (every
    record the lenient walk reads, past damage too).  Read-only.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> from rmqlab.store import read_checkpoint
    >>> root = shipped_dir() / "crashed"
    >>> t = store_timeline(root, flushed_ms=read_checkpoint(root / "checkpoint").physic_msg_timestamp)
    >>> t.to_dict()["records"], t.to_dict()["after_flush"]      # the crash window's records never reached the disk
    (892, {})
    """
    import pyarrow.compute as pc

    from ..scan import decode as fd
    from ..store.reader import StoreReader

    tl = Timeline(flushed_ms)
    with StoreReader(root, config, strict=False) as store:
        files = list(store.commitlog.queue.files)
        lo = files[0].file_from_offset if files else 0
        for f in files:
            for batch in fd.scan_range(f.buf, file_base=f.file_from_offset, file=str(f.path), mode="lenient", verify_crc=False, include_body=False,
                                       columns=("physical_offset", "topic", "store_timestamp", "kind"), data_end=f.data_end):
                is_msg = np.asarray(pc.equal(batch.column("kind"), fd.KIND_MESSAGE).fill_null(False).to_numpy(zero_copy_only=False), bool)
                feed(tl, batch, is_msg)
                if progress is not None and batch.num_rows:
                    progress.update(int(batch.column("physical_offset")[-1].as_py() or 0) - lo, tl.records)
    return tl
