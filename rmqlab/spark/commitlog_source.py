"""``spark.read.format("rocketmq")`` — one row per CommitLog record.

Java counterpart: ``CommitLog`` read by ``checkMessageAndReturnSize`` /
``MessageDecoder.decode``, here split into byte ranges and decoded in bulk by
:mod:`rmqlab.scan.decode`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from ..rules import COMMITLOG_DIR
from . import _paths
from ._source import Pushed, PushFilters, StoreDataSource, StoreSourceReader, filter_batch
from .pushdown import KEY_COLUMNS

#: bytes per partition: each Python task costs Spark a fixed time of its own on top of its
#: reading (rmqlab.spark.session.WORKER_SETTINGS says how much; with PySpark's settings,
#: 20 splits of 64 MiB of a 1 GiB log read narrow rows at half the rate of 5 splits of
#: 256 MiB, bench/bench_spark_scaling.py); so splits twice Spark's 128 MiB for files: a
#: 1 GiB commitlog file still makes 4 tasks
DEFAULT_SPLIT_SIZE = 256 << 20
#: rows per Arrow batch handed to the JVM (big batches of wide rows cost it dearly)
DEFAULT_BATCH_ROWS = 8192

#: the ``rocketmq`` source's options (the class docstring lists them from here)
MODE = _paths.Option("mode", "choice", "permissive", (
    "what a damaged record does, as Spark's file sources name it (any case): ``PERMISSIVE`` (the default; ``lenient`` "
    "too): it becomes a row (its ``kind`` says what is wrong, ``error`` where; header fields that could not be trusted "
    "are null) and the scan resynchronises at the next valid record. ``DROPMALFORMED``: the same scan, without those "
    "rows. ``FAILFAST`` (``strict`` too): the job fails at the first damaged record, naming its file and offset."),
    ("permissive", "dropmalformed", "failfast", "lenient", "strict"))


def scan_mode(options) -> tuple[str, bool]:
    """The decoder's mode for option ``mode`` (``lenient`` or ``strict``) and whether
    damaged rows are dropped (``DROPMALFORMED``)."""
    m = MODE.read(options)
    return ("strict", False) if m in ("failfast", "strict") else ("lenient", m == "dropmalformed")
VERIFY_CRC = _paths.Option("verifyCrc", "bool", True, (
    "recompute every body CRC (and the ``__CRC32#`` property CRC where present); a mismatch is damage. ``false``: "
    "skip it, ``crc_ok`` null."))
INCLUDE_BODY = _paths.Option("includeBody", "bool", True, "``false`` leaves ``body`` null and skips the copy.")
TOPICS = _paths.Option("topics", "list", None, "comma-separated topic names; other messages (and BLANK rows) are skipped.")
START_TIME = _paths.Option("startTime", "time", None, (
    "keep messages with ``startTime <= store_timestamp``; ms since the epoch or ISO-8601 (no zone = UTC)."))
END_TIME = _paths.Option("endTime", "time", None, "keep messages with ``store_timestamp < endTime`` (as ``startTime``).")
COLUMNS = _paths.Option("columns", "list", None, (
    "comma-separated column names: the DataFrame has only these, and only these are decoded (the Python Data Source "
    "API has no column pruning, so say it here when a scan needs a few columns: it is several times faster), e.g. "
    "``.option(\"columns\", \"topic,total_size,body,kind\")``. A schema does the same: "
    "``spark.read.format(\"rocketmq\").schema(\"topic string, total_size int\")`` (any of the columns, in any order, "
    "with their types; nullable)."))
PUSHDOWN = _paths.PUSHDOWN
PUSHDOWN_QUEUES = _paths.Option("pushdownQueues", "bool", False, (
    "with ``pushdown``: a ``topic`` filter (and ``queue_id``) is answered from the topic's consume queues, reading "
    "only its records — the rows RocketMQ serves, which are the full scan's but for PREPARED and ROLLBACK transaction "
    "records under that topic (no queue holds them; brokers since 4.x do not write them there)."))
BATCH_ROWS = _paths.Option("batchRows", "int", DEFAULT_BATCH_ROWS, (
    "rows per Arrow batch handed to Spark (wide rows in big batches cost the JVM more than the decoding saves)."))
SPLIT_SIZE = _paths.Option("splitSize", "size", DEFAULT_SPLIT_SIZE, (
    "bytes per partition (``64MiB`` style accepted). A split owns the records that start inside it and finds its "
    "first record by resynchronisation; any split size gives exactly the rows of whole-file scans. Each Python task "
    "costs Spark a fixed time whatever it reads (:data:`rmqlab.spark.session.WORKER_SETTINGS`), hence large splits."))
PAST_END = _paths.Option("pastEnd", "bool", False, (
    "read on past the end of the log. By default a store root on a local path is read as its next start serves it: the "
    "rows stop where that start ends the log (the recovery plan's end, as ``rmqlab dump`` and ``rmqlab recover`` print "
    "it), the damage that ends it the last row; ``true`` reads every record of every file, the cut bytes too (what "
    "``rmqlab salvage`` gives back). A commitlog directory, a single file or a store on shared storage is read whole."))
COMMITLOG_DIRS = _paths.Option("commitlogDirs", "list", None, (
    "the other directories of a log spread over several (``storePathCommitLog=/d1/commitlog,/d2/commitlog``), "
    "comma-separated; ``load()`` names the store root."))
OPTIONS = (MODE, VERIFY_CRC, INCLUDE_BODY, TOPICS, START_TIME, END_TIME, COLUMNS, PUSHDOWN, PUSHDOWN_QUEUES, BATCH_ROWS, SPLIT_SIZE,
           PAST_END, COMMITLOG_DIRS, *_paths.FS_OPTIONS)
#: bytes read past a split's end on non-local filesystems, where a record that starts in
#: the split may end: most records are far smaller, and one that runs further asks for
#: more (NeedMoreBytes) and gets all it needs in one more read
OVERHANG = 64 << 10
#: the most one record can need (maxMessageSize 4 MiB + topic and properties)
MAX_RECORD = (4 << 20) + (64 << 10)

#: The rows' schema; ``tests/spark`` checks that Arrow's version of it is exactly
#: ``rmqlab.scan.decode.ARROW_SCHEMA``.
SCHEMA = StructType(
    [
        StructField("physical_offset", LongType()),
        StructField("total_size", IntegerType()),
        StructField("magic", LongType()),
        StructField("body_crc", IntegerType()),
        StructField("crc_ok", BooleanType()),
        StructField("queue_id", IntegerType()),
        StructField("flag", IntegerType()),
        StructField("queue_offset", LongType()),
        StructField("sys_flag", IntegerType()),
        StructField("born_timestamp", LongType()),
        StructField("born_host", StringType()),
        StructField("store_timestamp", LongType()),
        StructField("store_host", StringType()),
        StructField("reconsume_times", IntegerType()),
        StructField("prepared_transaction_offset", LongType()),
        StructField("topic", StringType()),
        StructField("properties", MapType(StringType(), StringType())),
        StructField("body", BinaryType()),
        StructField("msg_id", StringType()),
        StructField("file", StringType()),
        StructField("kind", StringType()),
        StructField("error", StringType()),
        # the two properties RocketMQ indexes, as its map holds them (pushdown.KEY_COLUMNS)
        *(StructField(c, StringType()) for c in KEY_COLUMNS),
    ]
)


@dataclass(frozen=True)
class CommitLogSplit(InputPartition):
    """One byte range of one commitlog file (small and picklable: it travels to workers)."""

    uri: str  # what pyarrow.fs opens (a local path or a URI)
    file: str  # what the ``file`` column shows
    file_base: int  # the file's start physical offset (its name)
    file_size: int
    start: int
    stop: int
    fs: tuple = field(default=(), repr=False)  # filesystem settings resolved where the read was planned (_paths.fs_settings): may hold credentials
    #: a DLedger data file: entries (a 48-byte header, then the record); the split owns the entries that start in it
    dledger: bool = False
    #: the query's filters this split is read with (pushFilters).  They travel with the
    #: split, not with the reader: Spark 4.1's Python scans may hand a later query the
    #: reader a former query's pushFilters set up (seen here: a count after a filtered
    #: count got the filtered rows), while each query's partitions are its own
    pushed: Pushed = field(default_factory=lambda: Pushed())
    #: in-file positions (int64, ascending) of the only records this split reads, found
    #: by the store's indexes (:mod:`rmqlab.spark.pushdown`); None: the byte range is scanned
    positions: bytes | None = None
    #: the range holds whole records only, the last ending at ``stop`` (a stream's
    #: micro-batch of a live log): walked from ``start``, nothing past ``stop`` looked at
    whole: bool = False
    #: where the store's next start ends the log (physical offset), for a split that
    #: reaches it: its rows at or past it are not served (but the damage that ends the
    #: log, the row exactly there); None: every row (option ``pastEnd``, or no plan)
    log_end: int | None = None


class CommitLogDataSource(StoreDataSource):
    """Read RocketMQ CommitLog files: one row per record, decoded in bulk.

    Register once per session, then read a store root (or its ``commitlog/``
    directory, or a single commitlog file)::

        import rmqlab.spark
        rmqlab.spark.register(spark)

        df = spark.read.format("rocketmq").load("/data/broker-a/store")
        df.groupBy("topic").count().show()

        # the same on shared storage (pyarrow.fs: hdfs://, s3://, file://)
        df = spark.read.format("rocketmq").load("s3://captures/broker-a/store")

        # a time window and two topics, no bodies, no CRC checks (faster)
        df = (spark.read.format("rocketmq")
              .option("topics", "TopicA,TopicB")
              .option("startTime", "2026-01-01T00:00:00")   # or ms since the epoch
              .option("endTime", "2026-01-01T01:00:00")     # exclusive
              .option("includeBody", "false")
              .option("verifyCrc", "false")
              .load(path))

        # a damaged capture: damaged records are rows, as Spark's file sources read
        # malformed input (mode PERMISSIVE, the default); DROPMALFORMED leaves them out,
        # FAILFAST stops at the first
        bad = spark.read.format("rocketmq").load(path).where("error IS NOT NULL")

        # the rows stop where the store's next start ends the log (a crashed store: where
        # its recovery cuts); pastEnd reads the cut too
        from rmqlab.recovery.next_start import log_end
        cut = (spark.read.format("rocketmq").option("pastEnd", "true").load(path)
               .where(f"physical_offset >= {log_end(path)}"))

    **Columns** — those of ``rmqlab dump --json`` (:meth:`rmqlab.format.record.Record.to_dict`):
    ``physical_offset`` (where the record is), ``total_size``, ``magic``, ``body_crc``,
    ``crc_ok`` (null with ``verifyCrc=false``), ``queue_id``, ``flag``,
    ``queue_offset``, ``sys_flag``, ``born_timestamp``/``store_timestamp`` (ms since
    the epoch: ``timestamp_millis(store_timestamp)`` makes a timestamp),
    ``born_host``/``store_host`` (``host:port``), ``reconsume_times``,
    ``prepared_transaction_offset``, ``topic``, ``properties`` (map<string,string>:
    on-disk pairs, empty values kept, a later duplicate name wins), ``body`` (binary,
    as stored), ``msg_id`` (offset msgId); plus ``file`` (the commitlog file),
    ``kind`` (``MESSAGE``, ``BLANK``, or in lenient mode a damage kind:
    ``BAD_MAGIC``, ``BAD_SIZE``, ``SIZE_MISMATCH``, ``TRUNCATED``, ``BODY_CRC``,
    ``PROPERTY_CRC``) and ``error`` (the damage, with file and offset, on every damaged
    row; else null); and
    ``keys`` and ``uniq_key``, the ``KEYS`` and ``UNIQ_KEY`` properties as RocketMQ's own
    map holds them (what it indexes; what key queries filter on).

    **Options** (strings; declared once, in ``OPTIONS``):

    Each file is scanned on its own (a BLANK ends a file; a zero tail is skipped), so
    the rows are those of :meth:`rmqlab.store.commitlog.CommitLog.walk` on a store
    whose files all follow each other — which RocketMQ's are.  A store root on a local
    path is read as its next start serves it (``rmqlab dump``'s records, the damage it
    warns of as rows): up to where that start ends the log
    (:func:`rmqlab.recovery.next_start.log_end`, asked once on the driver), unless
    ``pastEnd``.
    """

    SCHEMA = SCHEMA
    OPTIONS = OPTIONS

    def schema(self):
        return project(SCHEMA, COLUMNS.read(_paths.lower_keys(self.options)))

    def streamReader(self, schema):
        """``spark.readStream.format("rocketmq")``: :class:`rmqlab.spark.stream_source.CommitLogStreamReader`."""
        from .stream_source import CommitLogStreamReader

        return CommitLogStreamReader(CommitLogReader(_paths.lower_keys(self.options), _paths.requested_columns(self.name(), SCHEMA, schema)))



def project(schema: StructType, names: list[str] | None) -> StructType:
    """The columns asked for (option ``columns``), in the order asked."""
    if not names:
        return schema
    by_name = {f.name: f for f in schema.fields}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise _paths.OptionError(f"option columns: no column {', '.join(unknown)}; the columns are {', '.join(by_name)}")
    return StructType([by_name[n] for n in names])


class CommitLogReader(StoreSourceReader):
    FORMAT, LOADS = "rocketmq", "STORE_OR_COMMITLOG_DIR"
    # pushdown (rmqlab.spark.pushdown plans what is read): equality / IN on these, and
    # whole-number ranges (>, >=, <, <=) on these
    PUSH_EQUAL = ("physical_offset", "topic", "queue_id", "kind", "msg_id", "store_timestamp", "born_timestamp", "keys", "uniq_key")
    PUSH_RANGE = ("physical_offset", "store_timestamp", "born_timestamp", "queue_id")

    def __init__(self, options: dict, columns: list[str] | None = None):
        super().__init__(options, None if columns is None or list(columns) == SCHEMA.fieldNames() else list(columns))
        self.split_size = SPLIT_SIZE.read(options)
        self.mode, self.drop_malformed = scan_mode(options)
        self.verify_crc = VERIFY_CRC.read(options)
        self.include_body = INCLUDE_BODY.read(options)
        self.topics = TOPICS.read(options)
        self.start_time = START_TIME.read(options)
        self.end_time = END_TIME.read(options)
        self.batch_rows = BATCH_ROWS.read(options)
        #: more directories of a log spread over several (storePathCommitLog; --commitlog-dir)
        self.commitlog_dirs = COMMITLOG_DIRS.read(options) or []
        self.past_end = PAST_END.read(options)
        self._log_end: list[int | None] = []  # asked once, on the driver
        # self.pushed (PushdownCommitLogReader's pushFilters) reaches read() in each split
        # (CommitLogSplit.pushed)

    def log_end(self) -> int | None:
        """Where the store's next start ends its log, for a store root on a local path
        read without ``pastEnd`` (:func:`rmqlab.recovery.next_start.log_end`); else None:
        every row is read."""
        if not self._log_end:
            import os

            end = None
            local = "://" not in self.path or self.path.startswith("file://")
            root = self.path[len("file://") :] if self.path.startswith("file://") else self.path
            if not self.past_end and local and not self.commitlog_dirs and os.path.isdir(os.path.join(root, COMMITLOG_DIR)):
                from ..recovery.next_start import log_end

                end = log_end(root)
            self._log_end.append(end)
        return self._log_end[0]

    def served(self, splits: list) -> list:
        """``splits`` as the next start serves the log: those past its end left out, those
        reaching it told where it is (:attr:`CommitLogSplit.log_end`)."""
        end = self.log_end()
        if end is None:
            return splits
        kept = [s if s.file_base + s.stop <= end else replace(s, log_end=end) for s in splits if s.file_base + s.start <= end]
        if not kept and splits:  # Spark wants a partition: one that serves nothing
            kept = [replace(splits[0], log_end=end)]
        return kept

    def partitions(self):
        splits = self.served(plan_splits(self.path, self.split_size, self.fs, self.commitlog_dirs))
        if not self.pushed:
            return splits
        plan = self.plan(splits)
        # Spark wants a partition: an empty list of positions reads nothing
        return [replace(s, pushed=self.pushed) for s in plan.splits] or [replace(splits[0], pushed=self.pushed, positions=b"")]

    def file_splits(self) -> list:
        """A split per file of the log, whole (what a stream's micro-batch cuts down)."""
        return plan_splits(self.path, 1 << 62, self.fs, self.commitlog_dirs)

    def plan(self, splits: list | None = None):
        """What the pushed filters leave to read (:func:`rmqlab.spark.pushdown.plan`); its
        ``describe()`` says how much, what narrowed it and where it fell back."""
        from . import pushdown

        splits = self.served(plan_splits(self.path, self.split_size, self.fs, self.commitlog_dirs)) if splits is None else splits
        if not splits:
            return pushdown.ReadPlan([])
        fs, _ = _paths.filesystem(splits[0].uri, self.fs)
        # several directories of one log: positions and offsets hold, the index files are the root's
        return pushdown.plan(splits, self.pushed, self.path, local=_paths.is_local(fs) and not self.commitlog_dirs, dledger=splits[0].dledger,
                             queues=PUSHDOWN_QUEUES.read(self.options))

    def read(self, partition: CommitLogSplit):
        from ..scan import kernels

        # Spark runs a task per core already: one thread per task (the decoder's own
        # second thread made two workers on two cores ~30% slower)
        kernels.set_threads(1)
        topics, start_time, end_time, pushed = self.topics, self.start_time, self.end_time, partition.pushed
        pushed_topics = pushed.value_set("topic")
        if pushed_topics is not None:
            topics = [t for t in (topics if topics is not None else sorted(pushed_topics)) if t in pushed_topics]
        lo, hi = pushed.bounds("store_timestamp")
        if lo is not None:
            start_time = lo if start_time is None else max(start_time, lo)
        if hi is not None:
            end_time = hi + 1 if end_time is None else min(end_time, hi + 1)
        columns = self.columns or SCHEMA.fieldNames()
        # what the rows are judged by (the end of the log, the damage's words, what
        # DROPMALFORMED drops) is read with them, and left out again
        extra = [c for c in ("physical_offset", "kind", "error") if c not in columns]
        batches = read_split(partition, mode=self.mode, verify_crc=self.verify_crc, include_body=self.include_body, topics=topics,
                             start_time=start_time, end_time=end_time, columns=columns + extra, batch_rows=self.batch_rows)
        batches = _as_served(batches, partition, self.drop_malformed, extra)
        if not pushed:
            yield from batches
            return
        for b in batches:
            b = filter_batch(b, pushed)
            if b.num_rows:
                yield b


def _as_served(batches, split: CommitLogSplit, drop_malformed: bool, extra: list[str]):
    """The rows of ``batches`` as the source serves them: none at or past the end of the
    log but the damage that ends it (:attr:`CommitLogSplit.log_end`); every damaged row
    saying what and where in ``error`` (a CRC mismatch too,
    :func:`rmqlab.scan.decode.with_crc_errors`); without the damaged rows under
    DROPMALFORMED; without the ``extra`` columns read to judge them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..scan.decode import KIND_BLANK, KIND_MESSAGE, with_crc_errors

    for b in batches:
        kind = b.column("kind")
        if split.log_end is not None:
            phys = b.column("physical_offset")
            if pc.any(pc.greater_equal(phys, split.log_end)).as_py():
                damage = pc.invert(pc.is_in(kind, pa.array([KIND_MESSAGE, KIND_BLANK])))
                b = b.filter(pc.or_(pc.less(phys, split.log_end), pc.and_(pc.equal(phys, split.log_end), damage)))
                kind = b.column("kind")
        b = with_crc_errors(b, split.file, split.file_base)
        if drop_malformed:
            b = b.filter(pc.is_null(b.column("error")))
        if extra:
            b = b.drop_columns(extra)
        if b.num_rows:
            yield b


class PushdownCommitLogReader(PushFilters, CommitLogReader):
    """The reader with ``pushFilters`` (option ``pushdown=true``)."""


CommitLogDataSource.READER, CommitLogDataSource.PUSHDOWN_READER = CommitLogReader, PushdownCommitLogReader


def commitlog_files(path: str, fs_settings: tuple = (), more_dirs: list[str] | tuple = ()) -> list[tuple[str, str, int, int, bool]]:
    """``(uri, display name, file_base, size, dledger)`` of the log's files under ``path``
    (a store root, a commitlog directory, or one commitlog file) and in ``more_dirs``
    (the other directories of a log spread over several: Java
    ``MultiPathMappedFileQueue.load`` lists every directory and orders the files by
    name), in log order.  A store root whose log is DLedger's (``dledger-<id>/data/``,
    no commitlog files), that directory or one of its files, gives DLedger data files."""
    from pyarrow import fs as pafs

    from ..errors import StoreLayoutError

    out: dict[int, tuple[str, str, int, int, bool]] = {}
    for i, where in enumerate([path, *more_dirs]):
        fs, inner = _paths.filesystem(where, fs_settings)
        dledger = False
        with _paths.storage(where):
            fi = fs.get_file_info(inner)
            if fi.type == pafs.FileType.File and i == 0:
                base = int(fi.base_name) if fi.base_name.isdigit() else 0
                files = [(base, fi.path, fi.size)]
                dledger = _is_dledger_data(inner.rsplit("/", 1)[0])
            elif fi.type == pafs.FileType.Directory:
                d = _dledger_data_dir(fs, inner) if i == 0 else None
                dledger = d is not None
                if d is None:
                    d = _paths.store_subdir(fs, inner, COMMITLOG_DIR, where) if i == 0 else inner
                files = _paths.offset_named_files(fs, d)
        if fi.type not in (pafs.FileType.File, pafs.FileType.Directory) or (i and fi.type != pafs.FileType.Directory):
            raise StoreLayoutError(where, None, "no such file or directory" if fi.type == pafs.FileType.NotFound else "not a directory of the log")
        for base, p, size in files:
            if base in out:
                raise StoreLayoutError(_paths.display_path(where, p), None, f"{out[base][1]} has the same name: one offset in two directories of the log")
            out[base] = (_paths.child_uri(where, p), _paths.display_path(where, p), base, size, dledger)
    return [out[b] for b in sorted(out)]


def _is_dledger_data(directory: str) -> bool:
    from ..format.dledger import DATA_DIR, DLEDGER_PREFIX

    parts = directory.rstrip("/").rsplit("/", 2)
    return len(parts) >= 2 and parts[-1] == DATA_DIR and parts[-2].startswith(DLEDGER_PREFIX)


def _dledger_data_dir(fs, p: str) -> str | None:
    """The DLedger data directory ``p`` is, or holds (``dledger-<id>/`` or a store root
    whose log is DLedger's: one ``dledger-<id>/data/``, no commitlog files), else None."""
    from ..format.dledger import DATA_DIR, DLEDGER_PREFIX

    p = p.rstrip("/")
    if _is_dledger_data(p):
        return p
    if p.rsplit("/", 1)[-1].startswith(DLEDGER_PREFIX) and _paths.is_dir(fs, p + "/" + DATA_DIR):
        return p + "/" + DATA_DIR
    if _paths.is_dir(fs, p + "/" + COMMITLOG_DIR) and _paths.offset_named_files(fs, p + "/" + COMMITLOG_DIR):
        return None
    found = [d.path for d in _paths.list_dirs(fs, p) if d.base_name.startswith(DLEDGER_PREFIX) and _paths.is_dir(fs, d.path + "/" + DATA_DIR)]
    return found[0] + "/" + DATA_DIR if len(found) == 1 else None


def plan_splits(path: str, split_size: int, fs_settings: tuple = (), more_dirs: list[str] | tuple = ()) -> list[CommitLogSplit]:
    out = []
    for uri, shown, base, size, dledger in commitlog_files(path, fs_settings, more_dirs):
        for start in range(0, size, split_size):
            out.append(CommitLogSplit(uri, shown, base, size, start, min(size, start + split_size), fs_settings, dledger))
    return out


def read_split(split: CommitLogSplit, columns: list[str] | None = None, **kw):
    """Arrow batches of one split (runs on a worker; heavy imports happen here): the
    decoder's (:data:`rmqlab.scan.decode.ARROW_SCHEMA`) when ``columns`` is None, else
    exactly ``columns`` of :data:`SCHEMA` (the key columns built from the properties)."""
    if columns is None:
        yield from _read_split(split, **kw)
        return
    props = tuple(KEY_COLUMNS[c] for c in KEY_COLUMNS if c in columns)
    decoded = [c for c in columns if c not in KEY_COLUMNS]
    for batch in _read_split(split, columns=decoded, java_properties=props, **kw):
        yield _spark_batch(batch, columns)


def _spark_batch(batch, columns: list[str]):
    """``batch`` (the decoder's, with ``java_property:`` columns on message batches) as
    the source's ``columns``."""
    import pyarrow as pa

    from ..scan.decode import JAVA_PROPERTY_PREFIX

    names = batch.schema.names
    arrays = []
    for c in columns:
        if c in KEY_COLUMNS:
            at = JAVA_PROPERTY_PREFIX + KEY_COLUMNS[c]
            arrays.append(batch.column(at) if at in names else pa.nulls(batch.num_rows, pa.string()))
        else:
            arrays.append(batch.column(c))
    return pa.RecordBatch.from_arrays(arrays, names=columns)


def _read_split(split: CommitLogSplit, **kw):
    import pyarrow as pa

    from ..scan import decode as fd

    fs, inner = _paths.filesystem(split.uri, split.fs)
    if split.dledger:
        yield from _read_dledger_split(split, fs, inner, **kw)
        return
    if split.whole:
        split = replace(split, positions=_whole_positions(split, inner))
    if split.positions is not None:
        yield from _read_positions(split, fs, inner, **kw)
        return
    common = dict(file_base=split.file_base, file_size=split.file_size, file=split.file, stop=split.stop, **kw)
    if _paths.is_local(fs):
        from ..files.extent import data_end

        with pa.memory_map(inner, "r") as mm:
            buf = mm.read_buffer()
            yield from fd.scan_range(buf, start=split.start, data_end=data_end(inner, split.file_size), **common)
        return
    pos, resync = split.start, None
    with _paths.storage(split.file):
        fh = fs.open_input_file(inner)
    with fh:
        end = min(split.file_size, split.stop + OVERHANG)
        while True:
            with _paths.storage(split.file):
                buf = fh.read_at(end - pos, pos)
            try:
                yield from fd.scan_range(buf, buf_offset=pos, start=pos, resync=resync, **common)
                return
            except fd.NeedMoreBytes as more:
                pos, resync = more.position, more.resync
                end = min(split.file_size, pos + max(more.needed, MAX_RECORD))  # a rare big record


def _read_positions(split: CommitLogSplit, fs, inner: str, *, mode: str = "strict", verify_crc: bool = True, include_body: bool = True, topics=None,
                    start_time=None, end_time=None, columns=None, batch_rows: int = DEFAULT_BATCH_ROWS, java_properties=()):
    """The message records at the split's positions (the store's indexes named them; the
    planner reads them only from a local file).  A position where no message record
    starts (an index entry whose hash collided, dead bytes past a recovery's cut that
    no scan would have read as a record either) gives no row; strict mode still fails on
    a record whose CRC does not match, as the scan does."""
    import numpy as np
    import pyarrow as pa

    from ..format.record import BODY_CRC, PROPERTY_CRC, RecordError
    from ..scan import decode as fd

    P = np.frombuffer(split.positions, np.int64)
    if not len(P):
        return
    if not _paths.is_local(fs):
        raise _paths.OptionError(f"{split.file}: records at positions are read from local files only")
    with pa.memory_map(inner, "r") as mm:
        buf = mm.read_buffer()
        a = np.frombuffer(buf, np.uint8)
        rest = _message_positions(a, P, split.file_base)
        decode = dict(file_base=split.file_base, file=split.file, verify_crc=verify_crc, include_body=include_body, columns=columns,
                      batch_rows=batch_rows, java_properties=java_properties, crc_mismatch="flag" if mode == "lenient" else "raise")
        while len(rest):
            try:
                for batch in fd.decode_positions(buf, rest, **decode):
                    batch = _option_filters(batch, topics, start_time, end_time)
                    if batch.num_rows:
                        yield batch
                return
            except RecordError as err:
                if err.kind in (BODY_CRC, PROPERTY_CRC):
                    raise
                # a position the quick test took that is no record: the records before it
                # were given, go on after it (always past one position at least)
                after = rest[rest > err.offset] if err.offset is not None else rest[1:]
                rest = after if len(after) < len(rest) else rest[1:]


def _whole_positions(split: CommitLogSplit, inner: str) -> bytes:
    """The positions of the records of a range of whole records (:attr:`CommitLogSplit.whole`)."""
    import pyarrow as pa

    from ..format.commitlog import MAGIC_BLANK
    from ..store.follow import LogFollower

    with pa.memory_map(inner, "r") as mm:
        buf = mm.read_buffer()
        positions, end = LogFollower.walk_records(buf, split.start, split.stop)
        # a BLANK filling the file to its end is where a whole file's records end
        blank_to_end = end < split.stop == split.file_size and end + 8 <= len(buf) and struct.unpack_from(">iI", buf, end) == (split.file_size - end, MAGIC_BLANK)
    if end != split.stop and not blank_to_end:
        from ..format.record import RecordError

        raise RecordError(split.file, end, "BAD_SIZE", f"the records from {split.start} end at {end}, not at {split.stop} where the stream's planning found them end")
    return positions.tobytes()


def _message_positions(a, P, file_base: int):
    """The positions of ``P`` (ascending) where a message record can start in the file
    ``a``: a message magic, a size that fits, and the record's own physicalOffset field
    naming where it is (what resynchronisation also asks, :func:`rmqlab.scan.decode.is_valid_position`)."""
    import numpy as np

    from ..format.commitlog import FIXED_SIZE_V1_IPV4, MESSAGE_MAGICS
    from ..format.layout import MAGIC_AT, PHYSICAL_OFFSET_AT, field_at

    n = len(a)
    P = P[(P >= 0) & (P + PHYSICAL_OFFSET_AT + 8 <= n)]
    size = field_at(a, P, ">i4").astype(np.int64)
    magic = field_at(a, P + MAGIC_AT, ">u4")
    stored = field_at(a, P + PHYSICAL_OFFSET_AT, ">i8")
    ok = np.isin(magic, MESSAGE_MAGICS) & (size >= FIXED_SIZE_V1_IPV4) & (P + size <= n) & (stored == file_base + P)
    return P[ok]


def _option_filters(batch, topics, start_time, end_time):
    """The options ``topics``, ``startTime``, ``endTime`` on a decoded batch (the scan
    applies them inside the decoder)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if topics:
        batch = batch.filter(pc.is_in(batch.column("topic"), pa.array(list(topics))))
    if start_time is not None:
        batch = batch.filter(pc.greater_equal(batch.column("store_timestamp"), start_time))
    if end_time is not None:
        batch = batch.filter(pc.less(batch.column("store_timestamp"), end_time))
    return batch


def _read_dledger_split(split: CommitLogSplit, fs, inner: str, *, mode: str = "strict", verify_crc: bool = True, include_body: bool = True, topics=None,
                        start_time=None, end_time=None, columns=None, batch_rows: int = DEFAULT_BATCH_ROWS, java_properties=()):
    """The records of the DLedger entries that start in the split: the first entry at or
    after its start is found by its header (magic 1 and ``pos`` equal to where it is,
    ``DLedgerEntryCoder``), then entries are walked as DLedger's recovery walks them and
    their records decoded at their positions.  Bytes past the split are read as far as
    its last entry reaches."""
    import pyarrow as pa

    from ..format.record import RecordError
    from ..scan import decode as fd
    from ..store.dledger import DLEDGER_ENTRY, next_entry, walk_segments

    lo = split.start
    if _paths.is_local(fs):
        mm = pa.memory_map(inner, "r")
        buf, off = mm.read_buffer(), 0
    else:
        mm = None
        with _paths.storage(split.file):
            fh = fs.open_input_file(inner)
        hi = min(split.file_size, split.stop + OVERHANG)
        with _paths.storage(split.file):
            buf, off = fh.read_at(hi - lo, lo), lo
    try:
        data = memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf
        first = next_entry(data, split.file_base + off, lo - off, split.stop - off)
        if first is None:
            return
        segments = walk_segments(data, split.file_base + off, start=first, stop=split.stop - off)
        w = segments[-1]
        if mm is None and w.problem is not None and w.problem[1].startswith("entry of") and off + w.problem[0] < split.stop:
            # the last entry runs past what was read: read on to its end (at most one more read)
            need = struct.unpack_from(">i", data, w.problem[0] + 4)[0]
            with _paths.storage(split.file):
                buf = fh.read_at(min(split.file_size, off + w.problem[0] + need + 8) - lo, lo)
            data = memoryview(buf).cast("B")
            segments = walk_segments(data, split.file_base + off, start=first, stop=split.stop - off)
        for w in segments:
            P = w.record_positions
            if len(P):
                batches = fd.decode_positions(data, P, file_base=split.file_base + off, file=split.file, verify_crc=verify_crc, include_body=include_body,
                                              columns=columns, batch_rows=batch_rows, java_properties=java_properties,
                                              crc_mismatch="flag" if mode == "lenient" else "raise")
                for batch in batches:
                    batch = _option_filters(batch, topics, start_time, end_time)
                    if batch.num_rows:
                        yield batch
            if w.problem is not None and off + w.problem[0] < split.stop:
                at, why = off + w.problem[0], w.problem[1]
                if mode == "strict":
                    raise RecordError(split.file, at, DLEDGER_ENTRY, why)
                row = {n: None for n in SCHEMA.fieldNames()}
                row.update(physical_offset=split.file_base + at, file=split.file, kind=DLEDGER_ENTRY, error=f"{split.file} @ {at}: {DLEDGER_ENTRY}: {why}")
                yield pa.RecordBatch.from_pylist([row], schema=fd.ARROW_SCHEMA)
    finally:
        if mm is not None:
            mm.close()

