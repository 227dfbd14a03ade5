"""A store's records as a Parquet dataset, written in runs that each append what the
log gained since the last (``rmqlab export``, :func:`rmqlab.spark.export`).

Layout of the output directory::

    OUT/_rmqlab_export.json                  the manifest: the store, the settings, the
                                             offset exported up to, every run and its files
    OUT/topic_dir=<t>/date=<YYYY-MM-DD>/hour=<HH>/part-<run>-<n>.parquet

Each file holds every column of the decoder (:data:`rmqlab.scan.decode.ARROW_SCHEMA`,
``topic`` included); the directories partition by topic and by the store time's UTC
date and hour (``topic_dir`` is the topic, or for a name a file system would not take —
longer than 100 bytes, or holding ``/`` — its first 60 characters and a hash: the
``topic`` column is always the real name).  BLANK rows are not exported; damaged rows
are, in lenient mode (their ``kind`` says the damage; without a store time they go to
``date=unknown/hour=unknown``).

A run covers ``[start, end)`` of the log: ``start`` the last run's ``end``, ``end`` where
RocketMQ serves the log up to now.  Files are written under names starting with ``_``
(which Parquet readers, Spark's and pyarrow's, skip), renamed into place once every one
is written, and then the manifest is replaced; so a run killed before its commit leaves
the previous dataset exactly as it was, and the next run removes what it left.  Read the
dataset with ``spark.read.parquet(OUT)`` or ``pyarrow.dataset.dataset(OUT, partitioning="hive")``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import RmqlabError

MANIFEST = "_rmqlab_export.json"
STAGING_PREFIX = "_"
PARTITIONS = ("topic_dir", "date", "hour")
#: a topic longer than this (bytes), or holding "/", is shortened for its directory name
MAX_TOPIC_DIR = 100


class ExportError(RmqlabError):
    """The output directory holds something an export cannot continue (another store's
    export, other settings), said with what to do."""


@dataclass
class ExportRun:
    """One run: the offsets it covered, when, and the files it added (relative paths,
    rows each)."""

    run: int
    start: int
    end: int
    finished_at: float
    files: list = field(default_factory=list)  # [[relative path, rows], ...]


@dataclass
class Manifest:
    store: str
    settings: dict
    end_offset: int = 0
    runs: list = field(default_factory=list)

    @classmethod
    def read(cls, out: str | os.PathLike) -> "Manifest | None":
        p = Path(out) / MANIFEST
        if not p.exists():
            return None
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
            return cls(d["store"], d["settings"], int(d["end_offset"]), [ExportRun(**r) for r in d["runs"]])
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ExportError(f"{p}: not an export manifest rmqlab can read ({err}); move it away to export anew") from None

    def write(self, out: str | os.PathLike) -> None:
        """Replace the manifest in one step (write beside it, then rename over it)."""
        p = Path(out) / MANIFEST
        tmp = p.with_name(STAGING_PREFIX + MANIFEST + ".tmp")
        tmp.write_text(json.dumps({"store": self.store, "settings": self.settings, "end_offset": self.end_offset,
                                   "runs": [asdict(r) for r in self.runs]}, indent=1), encoding="utf-8")
        os.replace(tmp, p)

    def files(self) -> set[str]:
        return {f for r in self.runs for f, _ in r.files}

    @property
    def rows(self) -> int:
        return sum(n for r in self.runs for _, n in r.files)


def begin(out: str | os.PathLike, store: str, settings: dict) -> tuple[Manifest, int]:
    """Open (or start) the export in ``out`` for ``store`` with ``settings``: the manifest
    and this run's number.  Files a killed run left (staged ``_part-`` files, and any
    ``part-`` file no run committed) are removed first."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    m = Manifest.read(out)
    if m is None:
        m = Manifest(store, dict(settings))
    else:
        if os.path.realpath(m.store) != os.path.realpath(store):
            raise ExportError(f"{out}: holds an export of {m.store}, not of {store}; export into another directory")
        if m.settings != settings:
            changed = ", ".join(f"{k}: {m.settings.get(k)!r} → {settings.get(k)!r}" for k in sorted(set(m.settings) | set(settings)) if m.settings.get(k) != settings.get(k))
            raise ExportError(f"{out}: was exported with other settings ({changed}); use the same, or another directory")
    committed = m.files()
    for p in out.glob("topic_dir=*/date=*/hour=*/*.parquet"):  # only what an export writes
        rel = p.relative_to(out).as_posix()
        if _PART.fullmatch(p.name) and (p.name.startswith(STAGING_PREFIX) or rel not in committed):
            p.unlink()
    return m, len(m.runs) + 1


_PART = re.compile(r"_?part-\d{5}-\d{5}\.parquet")


def topic_dir(topic: str | None) -> str:
    """The directory name of a topic's partition (see the module)."""
    if topic is None:
        return "unknown"
    raw = topic.encode("utf-8")
    if len(raw) <= MAX_TOPIC_DIR and "/" not in topic and topic not in (".", "..") and not topic.startswith(STAGING_PREFIX):
        return topic
    safe = topic.replace("/", "%2F")[:60]
    return f"{safe}~{hashlib.sha1(raw).hexdigest()[:16]}"


#: rows a partition's file gathers before writing them as one row group, and the bytes
#: all partitions may hold gathered (then every partition writes what it holds): big
#: row groups write and read faster than one per decoded batch and partition
ROW_GROUP_ROWS = 1 << 17
GATHERED_BYTES = 128 << 20
#: Parquet encodings (measured on bench/bench_export.py's store: zstd level 1 with
#: these writes 35-40% faster than zstd's default with every column dictionary-encoded
#: and given statistics, and the files are smaller): dictionaries only where values
#: repeat (a dictionary of bodies or msgIds is tried, found too big and thrown away at
#: every row group; property names repeat, their values mostly not: the names' dictionary
#: makes the generated 1 GiB store's files 3% smaller, in the same time), min/max
#: statistics only on what queries filter by (Spark and pyarrow skip row groups with them)
DICTIONARY_COLUMNS = ("topic", "kind", "born_host", "store_host", "file", "error", "properties.key_value.key")
STATISTICS_COLUMNS = ("physical_offset", "total_size", "queue_id", "queue_offset", "born_timestamp", "store_timestamp", "topic", "kind", "sys_flag", "msg_id")
WRITER_OPTIONS = {"compression": "zstd", "compression_level": 1}


HOUR_MS = 3_600_000


def _in_partition_order(codes: np.ndarray, hours: np.ndarray) -> bool:
    """Whether rows of these topic codes and hours come partition by partition, in the
    order :func:`np.lexsort` gives them (topics by code, then hours)."""
    dc = np.diff(codes)
    return bool(((dc > 0) | ((dc == 0) & (np.diff(hours) >= 0))).all())


def _partitions(batch: pa.RecordBatch):
    """``((topic_dir, date, hour), rows)`` of a batch, each partition's rows in batch
    order: vectorised (one Python string per distinct topic, none per record; each
    partition a slice of the batch, sorted by one ``take`` unless its rows come
    partition by partition already, as a batch of one topic and hour does)."""
    enc = pc.dictionary_encode(batch.column("topic"))
    codes = np.asarray(pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False), np.int64)
    names = [topic_dir(t) for t in enc.dictionary.to_pylist()]
    ts = batch.column("store_timestamp")
    valid = np.asarray(pc.is_valid(ts).to_numpy(zero_copy_only=False), bool)
    hours = np.where(valid, np.nan_to_num(ts.to_numpy(zero_copy_only=False).astype("float64"), nan=0).astype(np.int64) // HOUR_MS, np.iinfo(np.int64).min)
    if _in_partition_order(codes, hours):
        c, h, grouped = codes, hours, batch
    else:
        order = np.lexsort((hours, codes))  # stable: each partition keeps the batch's order
        c, h = codes[order], hours[order]
        grouped = batch.take(pa.array(order, pa.int64()))
    cuts = np.flatnonzero((c[1:] != c[:-1]) | (h[1:] != h[:-1])) + 1
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(c)]):
        code, hour = int(c[lo]), int(h[lo])
        if hour == np.iinfo(np.int64).min:
            date, hh = "unknown", "unknown"
        else:
            date, hh = str(np.datetime64(hour, "h").astype("datetime64[D]")), f"{hour % 24:02d}"
        yield (names[code] if code >= 0 else "unknown", date, hh), grouped.slice(lo, hi - lo)


class _PartFile:
    """One partition's staged file of a piece of work: rows gathered, then written as
    row groups of :data:`ROW_GROUP_ROWS` (on ``pool``'s threads when given: Arrow's
    Parquet writer releases the GIL, so two files' row groups are encoded at once; one
    file's are written in order, one at a time)."""

    def __init__(self, final: Path, rel: str, schema: pa.Schema, pool=None):
        final.parent.mkdir(parents=True, exist_ok=True)
        names = set(schema.names)

        def present(columns):  # the column paths whose top-level column the schema has
            return [c for c in columns if c.split(".")[0] in names]

        self.writer = pq.ParquetWriter(final.with_name(STAGING_PREFIX + final.name), schema, **WRITER_OPTIONS,
                                       use_dictionary=present(DICTIONARY_COLUMNS), write_statistics=present(STATISTICS_COLUMNS))
        self.rel, self.rows, self.gathered, self.gathered_rows, self.gathered_bytes = rel, 0, [], 0, 0
        self.pool, self.writing, self.writing_bytes = pool, None, 0

    def add(self, rows: pa.RecordBatch, nbytes: int) -> None:
        self.gathered.append(rows)
        self.gathered_rows += rows.num_rows
        self.gathered_bytes += nbytes
        self.rows += rows.num_rows
        if self.gathered_rows >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.gathered:
            table = pa.Table.from_batches(self.gathered)
            size = max(ROW_GROUP_ROWS, self.gathered_rows)
            self.wait()  # this file's row group before: one at a time, in order
            if self.pool is None:
                self.writer.write_table(table, row_group_size=size)
            else:
                self.writing, self.writing_bytes = self.pool.submit(self.writer.write_table, table, row_group_size=size), self.gathered_bytes
        self.gathered, self.gathered_rows, self.gathered_bytes = [], 0, 0

    def wait(self) -> None:
        """Until the row group being written is (its error raised here)."""
        if self.writing is not None:
            w, self.writing, self.writing_bytes = self.writing, None, 0
            w.result()

    def close(self) -> None:
        try:
            self.flush()
            self.wait()
        finally:
            self.writer.close()


def write_batches(out: str | os.PathLike, run: int, part: int, batches, *, start: int, end: int) -> list[list]:
    """Write the rows of ``batches`` with ``start <= physical_offset < end`` (BLANK rows
    left out) into staged files under ``out``'s partition directories, one per partition
    this piece of work touched (memory stays that of :data:`GATHERED_BYTES` of rows,
    gathered or being written, and the open files' buffers); returns
    ``[[relative final path, rows], ...]``.  Row groups are written on two threads where
    the loops may use two (:func:`rmqlab.scan.kernels.set_threads`)."""
    return write_pieces(out, run, ((part, b) for b in batches), start=start, end=end)


def write_pieces(out: str | os.PathLike, run: int, pieces, *, start: int, end: int, progress=None) -> list[list]:
    """:func:`write_batches` of several pieces of work in turn: ``pieces`` yields
    ``(part, batch)``, the batches of one part after another.  A part's files are
    finished while the next part's batches are gathered (their last row groups written
    on the Parquet threads meanwhile), so that the work does not stop at each part's
    end.  ``progress.update(bytes done, rows)`` is told after every batch."""
    from concurrent.futures import ThreadPoolExecutor

    from .kernels import threads

    out = Path(out)
    files: dict[tuple, _PartFile] = {}  # the current part's, by partition
    ending: list[_PartFile] = []  # the parts' before it, their last row groups being written
    done: list[_PartFile] = []
    pool = ThreadPoolExecutor(threads(), thread_name_prefix="rmqlab-parquet") if threads() > 1 else None
    current, rows = None, 0
    try:
        for part, b in pieces:
            if part != current:
                for f in files.values():
                    f.flush()  # its last rows on their way, without waiting for them
                ending += files.values()
                files, current = {}, part
            still = []
            for f in ending:  # closed once their row groups are written
                if f.writing is None or f.writing.done():
                    f.close()
                    done.append(f)
                else:
                    still.append(f)
            ending = still
            po = b.column("physical_offset")
            mask = pc.and_(pc.and_(pc.greater_equal(po, start), pc.less(po, end)), pc.not_equal(pc.fill_null(b.column("kind"), ""), "BLANK"))
            if not pc.all(mask).as_py():  # most batches keep every row: no copy then
                b = b.filter(mask)
            if b.num_rows:
                per_row = b.nbytes / b.num_rows
                for (t, d, h), part_rows in _partitions(b):
                    f = files.get((t, d, h))
                    if f is None:
                        rel = Path(f"topic_dir={t}") / f"date={d}" / f"hour={h}" / f"part-{run:05d}-{part:05d}.parquet"
                        f = files[(t, d, h)] = _PartFile(out / rel, rel.as_posix(), part_rows.schema, pool)
                    f.add(part_rows, int(per_row * part_rows.num_rows))
                rows += b.num_rows
                if sum(f.gathered_bytes + f.writing_bytes for f in [*files.values(), *ending]) > GATHERED_BYTES:
                    for f in files.values():
                        f.flush()
                    for f in [*files.values(), *ending]:
                        f.wait()
            if progress is not None and len(po):
                progress.update(max(0, min(int(po[-1].as_py()), end) - start), rows)
    finally:
        try:
            for f in [*ending, *files.values()]:
                f.close()
                done.append(f)
        finally:
            if pool is not None:
                pool.shutdown()
    return sorted([f.rel, f.rows] for f in done)


def commit(out: str | os.PathLike, manifest: Manifest, run: int, start: int, end: int, files: list[list]) -> ExportRun:
    """Make a run's staged files part of the dataset and record the run: every file
    renamed into place, then the manifest replaced (its ``end_offset`` is where the next
    run starts)."""
    out = Path(out)
    for rel, _ in files:
        final = out / rel
        os.replace(final.with_name(STAGING_PREFIX + final.name), final)
    r = ExportRun(run, start, end, time.time(), sorted(files))
    manifest.runs.append(r)
    manifest.end_offset = end
    manifest.write(out)
    return r


def settings_of(mode: str, include_body: bool, verify_crc: bool) -> dict:
    """What a dataset's rows depend on; every run of one export must use the same."""
    return {"mode": mode, "include_body": include_body, "verify_crc": verify_crc, "schema": "rmqlab.scan.decode.ARROW_SCHEMA"}


def plan_run(manifest: Manifest, log_min: int, log_end: int, out) -> tuple[int, list[str]]:
    """Where a run starts, and what the user should know about it: records deleted by
    the broker's clean-up before they were exported; a log that now ends before the last
    run did (a recovery cut it) is refused."""
    start = manifest.end_offset
    notes = []
    if log_end < start:
        raise ExportError(f"{out}: the last run exported the log up to offset {start}, but it now ends at {log_end} "
                          "(a recovery cut it, or the log was replaced): export into a new directory")
    if log_min > start:
        notes.append(f"records at offsets [{start}, {log_min}) were deleted from the log (clean-up) before they were exported")
        start = log_min
    return start, notes


def export_files(out, store: str, files, log_min: int, log_end: int, *, mode: str = "strict", include_body: bool = True, verify_crc: bool = True,
                 progress=None) -> tuple[ExportRun, list[str]]:
    """One run over a local log: ``files`` the commitlog files in log order (objects with
    ``buf``, ``file_from_offset``, ``file_size`` and ``path``), ``[log_min, log_end)``
    where the log's records are now.  Returns the run and its notes."""
    from .ahead import read_ahead
    from .decode import scan_range, with_crc_errors

    manifest, run = begin(out, store, settings_of(mode, include_body, verify_crc))
    start, notes = plan_run(manifest, log_min, log_end, out)

    def pieces():  # each file a piece of work, one decode running on from file to file
        for n, f in enumerate(files):
            base = f.file_from_offset
            lo, hi = max(start - base, 0), min(f.file_size, log_end - base)
            if lo >= hi:
                continue
            for b in scan_range(f.buf, file_base=base, file_size=f.file_size, file=str(f.path), start=lo, stop=hi, mode=mode,
                                verify_crc=verify_crc, include_body=include_body):
                yield n, with_crc_errors(b, str(f.path), base)  # a CRC mismatch's row says it, as Spark's source does

    # the next batch decoded while one is written
    written = write_pieces(out, run, read_ahead(pieces()), start=start, end=log_end, progress=progress)
    return commit(out, manifest, run, start, log_end, written), notes
