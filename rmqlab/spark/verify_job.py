"""``rmqlab.spark.verify(spark, store)`` — :func:`rmqlab.forensics.verify.verify_store`
as a distributed job: the same findings, for stores too big for one process.

``rmqlab verify`` reads a store in one pass; here the work is cut three ways:

* **one file at a time** (one Spark task each, the ``rocketmq.checks`` source below):
  each commitlog file walked as RocketMQ's recovery walks it and on past damage
  (:meth:`~rmqlab.forensics.verify._Verifier.walk_file`), each index file's header,
  slots and chains (``check_index_file``), each consume queue's valid range and stale
  entries (``prepare_queue``) — the very code ``rmqlab verify`` runs, so a rule has one
  owner;
* **joins** over the records (``rocketmq.dispatch`` below: what dispatch reads of each
  record, Java ``DispatchRequest``) and the ``rocketmq.consumequeue`` and
  ``rocketmq.index`` sources: queue entries ↔ records (``CQ_DANGLING``,
  ``CQ_BEYOND_END``, ``CQ_MISMATCH``), queue offsets in log order
  (``QUEUE_OFFSET_GAP``), each queue's last record (``CQ_BEHIND``,
  ``CQ_MISSING_QUEUE``), index entries ↔ keyed records (``INDEX_DANGLING``,
  ``INDEX_BEYOND_END``, ``INDEX_HASH``, ``INDEX_MISSING``);
* **on the driver**, what is small and store-wide: the layout, the checkpoint, abort and
  lock, ``delayOffset.json``, the timer store, where the log ends (from one summary row
  per commitlog file), dead bytes, and the cap of findings listed per kind and file.

What reaches the driver is per file, per queue or per finding kind, never the store's
records or entries.  The store must be a path every worker can read (local disk on
``local[N]``, a shared mount on a cluster): the per-file checks memory-map its files.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import ArrayType, BooleanType, IntegerType, LongType, StringType, StructField, StructType

from . import _paths

#: the findings' columns, those of ``rmqlab verify --json``
FINDING_COLUMNS = ("kind", "severity", "file", "offset", "message")
FINDINGS_SCHEMA = StructType(
    [
        StructField("kind", StringType()),
        StructField("severity", StringType()),
        StructField("file", StringType()),
        StructField("offset", LongType()),
        StructField("message", StringType()),
    ]
)
#: what the per-file tasks give: findings (``part`` = ``finding``, ``phy`` the log
#: position one is about), one summary per file or queue (``info``: JSON), and the
#: index entries no slot chain reaches (``unreached``: file, entry number in ``offset``)
CHECKS_SCHEMA = StructType(
    [StructField("part", StringType())]
    + FINDINGS_SCHEMA.fields
    + [StructField("phy", LongType()), StructField("info", StringType())]
)
#: one row per record of the log (every record the walk finds, past damage too)
DISPATCH_SCHEMA = StructType(
    [
        StructField("physical_offset", LongType()),
        StructField("total_size", IntegerType()),
        StructField("topic", StringType()),
        StructField("queue_id", IntegerType()),
        StructField("queue_offset", LongType()),
        StructField("tags_code", LongType()),
        StructField("sys_flag", IntegerType()),
        StructField("in_cq", BooleanType()),
        StructField("store_timestamp", LongType()),
        StructField("key_hashes", ArrayType(LongType())),
        StructField("file", StringType()),
        StructField("file_offset", LongType()),
        StructField("last_queue_offset", LongType()),  # the last queue offset the record takes (an inner batch: INNER_NUM of them)
    ]
)
QUEUES_PER_TASK = 256


# -- the store's config, as the tasks must read it --------------------------------------------
def config_option(config) -> str:
    """A :class:`~rmqlab.config.MessageStoreConfig` (or None: infer from the files) as
    the string an option carries to the tasks."""
    if config is None:
        return ""
    d = asdict(config)
    d.pop("extra", None)
    return json.dumps(d)


def config_from_option(text: str | None):
    from ..config import MessageStoreConfig

    return MessageStoreConfig.from_mapping(json.loads(text)) if text else None


def _verifier(options):
    from ..forensics.verify import _Verifier

    return _Verifier(options["path"], config_from_option(options.get("storeconfig")))


# -- per-file checks -----------------------------------------------------------------------
@dataclass(frozen=True)
class Unit(InputPartition):
    """One commitlog file (``log``), one index file (``index``) or some consume queues
    (``queues``: ``(topic, queue id)`` pairs)."""

    part: str
    index: int = -1
    queues: tuple = ()


class ChecksDataSource(DataSource):
    """``rocketmq.checks``: verify's checks of single files, one task per file (see the
    module docstring).  Options: ``path`` (a store root), ``storeConfig`` (JSON, from
    :func:`config_option`)."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq.checks"

    def schema(self):
        return CHECKS_SCHEMA

    def reader(self, schema):
        return ChecksReader(_paths.lower_keys(self.options))


class ChecksReader(DataSourceReader):
    def __init__(self, options: dict):
        self.options = options

    def partitions(self):
        v = _verifier(self.options)
        try:
            store = v.store
            units = [Unit("log", i) for i in range(len(store.commitlog.queue.files))]
            units += [Unit("index", i) for i in range(len(store.index.files))]
            lay = store.layout
            qids = [(q.topic, q.queue_id) for q in store.queue_ids() if not lay.apart_from_join(q.topic)]
            units += [Unit("queues", queues=tuple(qids[i : i + QUEUES_PER_TASK])) for i in range(0, len(qids), QUEUES_PER_TASK)]
        finally:
            v.store.close()
        return units or [Unit("none")]

    def read(self, unit: Unit):
        import numpy as np

        from ..files.extent import nonzero_extent
        from ..store.reader import QueueId

        v = _verifier(self.options).unit()
        rows = []
        try:
            if unit.part == "log":
                files = v.store.commitlog.queue.files
                f = files[unit.index]
                all_zero = nonzero_extent(f.path, 0) is None
                v.walk_file(f, unit.index == len(files) - 1)
                rows.append(_summary("log", str(f.path), index=unit.index, base=f.file_from_offset, stopped=v.stopped,
                                     stop_at=v.log_end if v.stopped else None, by_damage=v.stopped_by_damage,
                                     end=v.log_end if not v.stopped and v.n_records else None, all_zero=all_zero))
            elif unit.part == "index":
                f = v.store.index.files[unit.index]
                ix = v.check_index_file(f)
                reached = np.unpackbits(ix.reached)[: ix.count].astype(bool)
                for e in (np.flatnonzero(~reached[1:]) + 1).tolist():
                    rows.append(("unreached", None, None, str(f.path), e, None, None, None))
                rows.append(_summary("index", str(f.path), index=unit.index, end_phy=int(f.header.end_phy_offset)))
            elif unit.part == "queues":
                min_off = v.store.commitlog.min_offset
                for topic, qid in unit.queues:
                    Q = v.prepare_queue(QueueId(topic, qid), min_off)
                    if Q is None:
                        continue
                    files = [(f.file_from_offset, len(f.buf), str(f.path)) for f in Q.cq.queue.files]
                    rows.append(_summary("queue", str(Q.cq.directory), topic=topic, queue_id=qid, lo=Q.lo, hi=Q.hi, files=files))
        finally:
            v.store.close()
        for finding, phy in v.raw:
            rows.append(("finding", finding.kind, finding.severity, finding.file, finding.offset, finding.message, phy, None))
        yield from rows


def _summary(part: str, file: str, **info) -> tuple:
    return (part, None, None, file, None, None, None, json.dumps(info))


# -- the records, as dispatch reads them ---------------------------------------------------------
class DispatchDataSource(DataSource):
    """``rocketmq.dispatch``: one row per record of the log with what RocketMQ's
    dispatch takes from it (Java ``DispatchRequest``: queue, queue offset, tagsCode,
    sysFlag) and the hashes its keys have in the index (``IndexService.buildIndex``):
    every record the walk finds, past damage too, in byte-range splits.  Options:
    ``path``, ``storeConfig``, ``splitSize``."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq.dispatch"

    def schema(self):
        return DISPATCH_SCHEMA

    def reader(self, schema):
        return DispatchReader(_paths.lower_keys(self.options))


class DispatchReader(DataSourceReader):
    def __init__(self, options: dict):
        from .commitlog_source import DEFAULT_SPLIT_SIZE

        self.options = options
        self.split_size = _paths.opt_size(options, "splitSize", DEFAULT_SPLIT_SIZE)

    def partitions(self):
        from ..store.layout import commitlog_dirs
        from .commitlog_source import plan_splits

        cfg = config_from_option(self.options.get("storeconfig"))
        # the log's directories, as the driver's verifier reads them (storePathCommitLog)
        dirs = [str(d) for d in commitlog_dirs(self.options["path"], cfg)]
        if len(dirs) == 1:  # the root: its commitlog/ or its DLedger log
            return plan_splits(self.options["path"], self.split_size)
        return plan_splits(dirs[0], self.split_size, (), dirs[1:])

    def read(self, split):
        from ..config import MessageStoreConfig
        from ..rules import parse_delay_levels
        from ..scan import kernels

        kernels.set_threads(1)
        cfg = config_from_option(self.options.get("storeconfig")) or MessageStoreConfig()
        delay = parse_delay_levels(cfg.message_delay_level)
        for batch in _records(split):
            yield _dispatch_batch(batch, split, delay, cfg.message_index_enable)


def _records(split):
    """The decoder's rows of one split that verify's walk hands to its joins: records,
    not BLANKs or damage (a CRC mismatch is still a record)."""
    import pyarrow.compute as pc

    from ..forensics.verify import _COLUMNS
    from ..scan.decode import JAVA_PROPERTY_PREFIX, KIND_BLANK
    from ..scan.dispatch_request import DispatchColumns
    from .commitlog_source import _read_split

    batches = _read_split(split, mode="lenient", include_body=False, columns=_COLUMNS, java_properties=DispatchColumns.JAVA_PROPERTIES)
    for batch in batches:
        if JAVA_PROPERTY_PREFIX + DispatchColumns.JAVA_PROPERTIES[0] not in batch.schema.names:
            continue  # BLANK and damage rows only
        keep = pc.and_(pc.not_equal(batch.column("kind"), KIND_BLANK), batch.column("error").is_null())
        batch = batch.filter(keep)
        if batch.num_rows:
            yield batch


def _dispatch_batch(batch, split, delay, index_enable: bool):
    import numpy as np
    import pyarrow as pa

    from ..rules import goes_to_consume_queue, goes_to_index
    from ..scan.dispatch_request import DispatchColumns

    cols = DispatchColumns.from_arrow(batch, delay)
    n = len(cols)
    counts = np.zeros(n, np.int64)
    hashes = np.zeros(0, np.int64)
    if index_enable:
        rec, hashes = cols.index_key_hashes(np.flatnonzero(goes_to_index(cols.sys_flag)))
        counts = np.bincount(rec, minlength=n)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
    topics = pa.array(cols.topics, pa.string())
    types = [pa.int64(), pa.int32(), pa.string(), pa.int32(), pa.int64(), pa.int64(), pa.int32(), pa.bool_(), pa.int64(), pa.list_(pa.int64()), pa.string(), pa.int64(), pa.int64()]
    return pa.RecordBatch.from_arrays(
        [
            pa.array(cols.commitlog_offset, pa.int64()),
            pa.array(cols.msg_size.astype(np.int32)),
            topics.take(pa.array(cols.topic_code)),
            pa.array(cols.queue_id.astype(np.int32)),
            pa.array(cols.consume_queue_offset, pa.int64()),
            pa.array(cols.tags_code, pa.int64()),
            pa.array(cols.sys_flag.astype(np.int32)),
            pa.array(np.asarray(goes_to_consume_queue(cols.sys_flag), bool)),
            pa.array(cols.store_timestamp, pa.int64()),
            pa.ListArray.from_arrays(pa.array(offsets), pa.array(hashes, pa.int64())),
            pa.array([split.file] * n, pa.string()),
            pa.array(cols.commitlog_offset - split.file_base, pa.int64()),
            pa.array(cols.consume_queue_offset + cols.batch_sizes() - 1, pa.int64()),
        ],
        schema=pa.schema([(f.name, t) for f, t in zip(DISPATCH_SCHEMA.fields, types)]),
    )



# -- the job --------------------------------------------------------------------------------------
def verify(spark, path, *, config=None, **options):
    """The findings of ``rmqlab verify --json PATH`` as a DataFrame (columns ``kind``,
    ``severity``, ``file``, ``offset``, ``message``), computed by Spark::

        import rmqlab.spark
        findings = rmqlab.spark.verify(spark, "/mnt/captures/broker-a/store")
        findings.where("severity = 'error'").show(truncate=False)
        findings.write.parquet("/mnt/reports/broker-a-verify")

    ``path``: a store root every worker can read (local, or a shared mount: the per-file
    checks memory-map files, so not ``s3://``).  ``config``: a
    :class:`~rmqlab.config.MessageStoreConfig` when the broker's settings differ from
    what the files say (as ``rmqlab verify --config``).  Options: ``splitSize`` (bytes
    of log per task for the record joins, default 128MiB).  Nothing is modified.

    The findings are those of :func:`rmqlab.forensics.verify.verify_store`, completed
    as the ``verify`` command completes them (:mod:`rmqlab.recovery.consequences`); the
    result is materialised (a local checkpoint) before it is returned, so using it
    twice does not walk the store twice.
    """
    from ..forensics.verify import _Verifier
    from .consumequeue_source import ConsumeQueueDataSource
    from .index_source import IndexDataSource

    path = str(path)
    if "://" in path and not path.startswith("file://"):
        raise _paths.OptionError(f"spark.verify: {path}: the per-file checks memory-map the store's files; give a path every worker can read "
                                 "(a local disk or a shared mount), not a URI")
    root = os.path.abspath(path[len("file://") :] if path.startswith("file://") else path)
    for source in (ChecksDataSource, DispatchDataSource, ConsumeQueueDataSource, IndexDataSource):
        spark.dataSource.register(source)
    options = {"path": root, "storeConfig": config_option(config), **{k: str(v) for k, v in options.items()}}
    drv = _Verifier(root, config).unit()
    try:
        if drv.store.layout.rocksdb_consume_queue:
            raise _paths.OptionError(f"spark.verify: {root}: the consume queues are (also) in RocksDB (storeType=defaultRocksDB or rocksdbCQDoubleWriteEnable); "
                                     "the distributed checks read consume-queue files only: run rmqlab verify (one process), which reads RocksDB")
        return _Job(spark, drv, options, config).run()
    finally:
        drv.store.close()


class _Job:
    """One distributed verify: the driver's :class:`_Verifier` (``drv``, in unit mode:
    its findings are collected whole in ``drv.raw``) holds what is store-wide."""

    def __init__(self, spark, drv, options: dict, config):
        from pyspark.sql import functions as F

        self.spark, self.drv, self.options, self.config = spark, drv, options, config
        self.F = F
        self.root = options["path"]
        self.cached = []

    def load(self, fmt: str, **extra):
        return self.spark.read.format(fmt).options(**{**self.options, **{k: str(v) for k, v in extra.items()}}).load()

    def persist(self, df):
        from pyspark import StorageLevel

        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        self.cached.append(df)
        return df

    def run(self):
        try:
            return self._run()
        finally:
            for df in self.cached:
                df.unpersist()

    def _run(self):
        F, drv = self.F, self.drv
        if not drv.check_recognised():
            return self.finish(None)
        drv.check_layout()
        drv.index_problems()
        checks = self.persist(self.load("rocketmq.checks"))
        summaries = [(r.part, r.file, json.loads(r.info)) for r in checks.where("part IN ('log', 'index', 'queue')").select("part", "file", "info").collect()]
        logs = sorted((i for p, _, i in summaries if p == "log"), key=lambda i: i["index"])
        self.indexes = sorted(((f, i) for p, f, i in summaries if p == "index"), key=lambda x: x[1]["index"])
        self.queues = [(f, i) for p, f, i in summaries if p == "queue"]
        late = self.end_of_log(logs)
        found = checks.where("part = 'finding'").select(*FINDINGS_SCHEMA.fieldNames(), "phy")
        if late:  # walked after the log ended: RocketMQ's walk is over, no torn last record there
            found = found.where(~((F.col("kind") == "TORN_RECORD") & F.col("file").isin(late)))
        records = self.persist(self.load("rocketmq.dispatch"))
        drv.max_store_ts = records.agg(F.max("store_timestamp")).first()[0] or 0
        parts = [found, self.queue_entries(records), self.queue_offsets(records)]
        if self.indexes or drv.cfg.message_index_enable:
            parts.append(self.index_entries(records, checks))
        self.queue_ends(records)
        drv.check_state()
        drv.check_batch_queues()  # batch queue units against their records: reads by position, on the driver
        drv.check_lmq_queues()  # LMQ entries against their parent records: random reads, on the driver
        from ..store.dledger import DLedgerCommitLog

        if isinstance(drv.store.commitlog, DLedgerCommitLog):
            # DLedger's index and checkpoint against the entries up to the end of the log:
            # entry headers only, read here (cheap next to the records)
            for f, w in drv.store.commitlog.entry_walks():
                drv.check_dledger_file(f.file_from_offset, w)
            drv.check_dledger()
        self.delay_offsets()
        drv.check_timers()
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        return self.finish(out)

    # -- where the log ends ---------------------------------------------------------------------
    def end_of_log(self, logs: list[dict]) -> list[str]:
        """Where RocketMQ's walk stops, from each file's summary in offset order (the
        first file whose walk stopped, else the end of the last record); the files
        after it (pre-allocated ones noted as the walk notes them)."""
        drv = self.drv
        files = drv.store.commitlog.queue.files
        late = []
        for s in logs:
            if drv.stopped:
                late.append(str(files[s["index"]].path))
                if s["all_zero"]:
                    drv.preallocated(files[s["index"]])
                continue
            if s["end"] is not None:
                drv.log_end = s["end"]
            if s["stopped"]:
                drv._stop(s["stop_at"], by_damage=s["by_damage"])
        drv._stop(drv.log_end)
        return late

    # -- consume queues against the log -------------------------------------------------------------
    def queue_table(self):
        rows = [(i["topic"], i["queue_id"], i["lo"], i["hi"]) for _, i in self.queues]
        return self.spark.createDataFrame(rows, "q_topic string, q_queue_id int, lo long, hi long")

    def cq_files(self):
        rows = [(i["topic"], i["queue_id"], start, size, path) for _, i in self.queues for start, size, path in i["files"]]
        return self.spark.createDataFrame(rows, "f_topic string, f_queue_id int, f_start long, f_size long, f_path string")

    def queue_entries(self, records):
        """Each entry of each queue's valid range against the record it points at."""
        from ..format.consumequeue import CQ_STORE_UNIT_SIZE, EXT_MAX_ADDR, PRE_BLANK_SIZE

        F, end = self.F, self.drv.log_end
        q = self.queue_table()
        cq = self.load("rocketmq.consumequeue")
        cq = cq.withColumn("tags_code", F.coalesce("ext_tags_code", "tags_code"))  # an ext address: the tagsCode its unit holds
        e = (cq.join(F.broadcast(q), (cq.topic == q.q_topic) & (cq.queue_id == q.q_queue_id))
             .where((F.col("queue_offset") >= F.col("lo")) & (F.col("queue_offset") < F.col("hi")) & (F.col("size") != PRE_BLANK_SIZE)))
        r = records.select(*(F.col(c).alias("r_" + c) for c in ("physical_offset", "topic", "queue_id", "queue_offset", "total_size", "tags_code", "in_cq")))
        j = e.join(r, e.commitlog_offset == r.r_physical_offset, "left")
        name = F.concat_ws("/", "topic", F.col("queue_id").cast("string"))
        point = F.format_string("%s entry %d points at %d", name, F.col("queue_offset"), F.col("commitlog_offset"))
        why = F.concat_ws("; ",
            F.when((F.col("r_topic") != F.col("topic")) | (F.col("r_queue_id") != F.col("queue_id")),
                   F.format_string("record is %s/%d", F.col("r_topic"), F.col("r_queue_id"))),
            F.when(F.col("r_queue_offset") != F.col("queue_offset"), F.format_string("record's queue offset is %d", F.col("r_queue_offset"))),
            F.when(F.col("r_total_size") != F.col("size"), F.format_string("size %d != record's %d", F.col("size"), F.col("r_total_size"))),
            F.when((F.col("r_tags_code") != F.col("tags_code")) & (F.col("tags_code") > F.lit(EXT_MAX_ADDR)), F.format_string("tagsCode %d != expected %d", F.col("tags_code"), F.col("r_tags_code"))),
            F.when(~F.col("r_in_cq"), F.lit("record is a prepared/rolled-back transaction, which never has an entry")))
        missing = F.col("r_physical_offset").isNull()
        beyond = F.col("commitlog_offset") >= F.lit(end)
        found = j.select(
            F.when(missing & beyond, "CQ_BEYOND_END").when(missing, "CQ_DANGLING").when(why != "", "CQ_MISMATCH").alias("kind"),
            F.lit("error").alias("severity"),
            "topic", "queue_id", "queue_offset",
            F.when(missing & beyond, F.concat(point, F.lit(f", at or past the end of the log ({end}); recovery cuts it")))
             .when(missing, F.concat(point, F.lit(", where no record starts")))
             .otherwise(F.format_string("%s entry %d → %d: %s", name, F.col("queue_offset"), F.col("commitlog_offset"), why)).alias("message"),
        ).where(F.col("kind").isNotNull())
        # where the entry is: the queue's file holding byte queue_offset * 20
        fs = self.cq_files()
        byte = F.col("queue_offset") * CQ_STORE_UNIT_SIZE
        placed = found.join(F.broadcast(fs), (found.topic == fs.f_topic) & (found.queue_id == fs.f_queue_id)
                            & (byte >= fs.f_start) & (byte < fs.f_start + fs.f_size), "left")
        return placed.select("kind", "severity", F.col("f_path").alias("file"), (byte - F.col("f_start")).alias("offset"), "message",
                             F.lit(None).cast("long").alias("phy"))

    def queue_offsets(self, records):
        """QUEUE_OFFSET_GAP: queue offsets consecutive per queue, in log order (an inner
        batch takes INNER_NUM of them: DispatchColumns.batch_sizes)."""
        from pyspark.sql import Window

        F = self.F
        w = Window.partitionBy("topic", "queue_id").orderBy("physical_offset")
        r = (records.where("in_cq").select("topic", "queue_id", "queue_offset", "last_queue_offset", "physical_offset", "file", "file_offset")
             .withColumn("prev_q", F.lag("last_queue_offset").over(w)).withColumn("prev_p", F.lag("physical_offset").over(w))
             .where(F.col("prev_q").isNotNull() & (F.col("queue_offset") != F.col("prev_q") + 1)))
        return r.select(F.lit("QUEUE_OFFSET_GAP").alias("kind"), F.lit("error").alias("severity"), "file", F.col("file_offset").alias("offset"),
                        F.format_string("%s/%d queue offset %d follows %d (record at %d)", "topic", "queue_id", "queue_offset", "prev_q", "prev_p").alias("message"),
                        F.col("physical_offset").alias("phy"))

    def queue_ends(self, records) -> None:
        """CQ_BEHIND and CQ_MISSING_QUEUE from each queue's last record before the end
        of the log (one row per queue reaches the driver)."""
        import numpy as np

        from ..store.reader import QueueId
        from ..rules import CONSUMEQUEUE_DIR
        from ..forensics.verify import ERROR, WARNING, cq_behind_message

        F, drv, end = self.F, self.drv, self.drv.log_end
        q = self.queue_table()
        r = records.where("in_cq").join(F.broadcast(q), (F.col("topic") == q.q_topic) & (F.col("queue_id") == q.q_queue_id), "left")
        ends = {(t, i): (last, first) for t, i, last, first in r.groupBy("topic", "queue_id").agg(
            F.max(F.when(F.col("physical_offset") < end, F.col("last_queue_offset"))),
            F.min(F.when((F.col("queue_offset") <= F.col("hi")) & (F.col("last_queue_offset") >= F.col("hi")), F.col("physical_offset")))).collect()}
        lay = drv.store.layout
        for (topic, qid), (last, first) in ends.items():  # batch queues: checked unit by unit on the driver (check_batch_queues)
            if topic in lay.batch_topics and last is not None:
                key = int(drv._queue_key(np.zeros(1, np.int64), [topic], np.array([qid], np.int64))[0])
                drv.queue_last[key] = (int(last), None)
                if first is not None:
                    drv.first_missing[key] = int(first)
        for directory, i in self.queues:
            last, first = ends.get((i["topic"], i["queue_id"]), (None, None))
            if last is not None and last >= i["hi"]:
                file, fpos = _cq_position(directory, i["files"], i["hi"]) if i["files"] else (directory, None)
                drv.add("CQ_BEHIND", WARNING, file, fpos, cq_behind_message(QueueId(i["topic"], i["queue_id"]), i["hi"], last, first))
        seen = {(i["topic"], i["queue_id"]) for _, i in self.queues}
        for (topic, qid), (last, _) in sorted(ends.items()):
            if last is None or (topic, qid) in seen or lay.rocksdb_consume_queue or lay.apart_from_join(topic):
                continue
            drv.add("CQ_MISSING_QUEUE", ERROR, str(drv.root / CONSUMEQUEUE_DIR / topic / str(qid)), None,
                    f"the log holds records of {topic}/{qid} (up to queue offset {last}) but there is no consume queue; abnormal recovery rebuilds it")

    def delay_offsets(self) -> None:
        from types import SimpleNamespace

        from ..rules import SCHEDULE_TOPIC
        from ..store.reader import QueueId

        self.drv.queues = [SimpleNamespace(qid=QueueId(i["topic"], i["queue_id"]), lo=i["lo"], hi=i["hi"]) for _, i in self.queues if i["topic"] == SCHEDULE_TOPIC]
        self.drv.check_delay_offsets()

    # -- index files against the log ------------------------------------------------------------------
    def index_entries(self, records, checks):
        """Each index entry against the record it points at and that record's key
        hashes; INDEX_MISSING from the keys no reached entry holds."""
        from ..format.indexfile import HASH_SLOT_SIZE, INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE
        from ..forensics.verify import WARNING, index_missing_message

        F, drv, cfg, end = self.F, self.drv, self.drv.cfg, self.drv.log_end
        slots = cfg.max_hash_slot_num
        pairs = records.select(F.col("physical_offset").alias("k_phy"), F.explode("key_hashes").alias("k_hash")).distinct()
        empty = self.spark.createDataFrame([], "kind string, severity string, file string, offset long, message string, phy long")
        found = empty
        reached = None
        if self.indexes:
            names = ",".join(os.path.basename(f) for f, _ in self.indexes)
            ix = self.load("rocketmq.index", maxHashSlotNum=slots, maxIndexNum=cfg.max_index_num, files=names).select("file", "entry", "key_hash", "phy_offset")
            unreached = checks.where("part = 'unreached'").select(F.col("file").alias("u_file"), F.col("offset").cast("int").alias("u_entry"))
            ix = (ix.join(unreached, (ix.file == unreached.u_file) & (ix.entry == unreached.u_entry), "left")
                  .withColumn("reached", F.col("u_file").isNull()).withColumn("key_hash", F.col("key_hash").cast("long")))
            rec = records.select(F.col("physical_offset").alias("r_phy"))
            j = (ix.join(rec, ix.phy_offset == rec.r_phy, "left")
                 .join(pairs, (F.col("phy_offset") == F.col("k_phy")) & (F.col("key_hash") == F.col("k_hash")), "left"))
            missing, beyond = F.col("r_phy").isNull(), F.col("phy_offset") >= F.lit(end)
            point = F.format_string("entry %d points at %d", F.col("entry"), F.col("phy_offset"))
            found = j.select(
                F.when(missing & beyond, "INDEX_BEYOND_END").when(missing, "INDEX_DANGLING").when(F.col("k_phy").isNull(), "INDEX_HASH").alias("kind"),
                F.when(missing & beyond, "warning").otherwise("error").alias("severity"),
                "file",
                (F.lit(INDEX_HEADER_SIZE + slots * HASH_SLOT_SIZE) + F.col("entry").cast("long") * INDEX_ENTRY_SIZE).alias("offset"),
                F.when(missing & beyond, F.concat(point, F.lit(f", at or past the end of the log ({end}); lookups skip it")))
                 .when(missing, F.concat(point, F.lit(", where no record starts")))
                 .otherwise(F.format_string("entry %d hash %d matches no key of the record at %d", F.col("entry"), F.col("key_hash"), F.col("phy_offset"))).alias("message"),
                F.lit(None).cast("long").alias("phy"),
            ).where(F.col("kind").isNotNull())
            reached = ix.where("reached").select(F.col("phy_offset").alias("k_phy"), F.col("key_hash").alias("k_hash"))
        if cfg.message_index_enable:
            lost = pairs if reached is None else pairs.join(reached, ["k_phy", "k_hash"], "left_anti")
            rows = lost.select("k_phy").distinct().where(F.col("k_phy") < end)
            index_end = self.indexes[-1][1]["end_phy"] if self.indexes else 0
            for name, cond in (("lost", F.col("k_phy") < index_end), ("pending", F.col("k_phy") >= index_end)):
                part = rows.where(cond)
                first = [r.k_phy for r in part.orderBy("k_phy").limit(5).collect()]
                if first:
                    file, fpos = drv._where(first[0])
                    drv.add("INDEX_MISSING", WARNING, file, fpos, index_missing_message(name, part.count(), first, index_end))
        return found

    # -- the findings --------------------------------------------------------------------------------
    def finish(self, found):
        """Everything found, as ``rmqlab verify --json`` lists it: dead bytes, the cap
        per kind and file, what recovery makes of CQ_BEHIND and INDEX_MISSING."""
        from pyspark.sql import Window

        from ..forensics.verify import LISTED_PER_FILE, Finding
        from ..recovery.consequences import complete_findings

        F, drv = self.F, self.drv
        later, now = [], []
        for f, phy in drv.raw:  # what recovery completes is finished here, on the driver
            (later if f.kind in ("CQ_BEHIND", "INDEX_MISSING") else now).append((f.kind, f.severity, f.file, f.offset, f.message, phy))
        local = self.spark.createDataFrame(now, "kind string, severity string, file string, offset long, message string, phy long")
        found = local if found is None else found.unionByName(local)
        if drv.stopped_by_damage and found.where(F.col("phy") >= drv.log_end).limit(1).count() and drv.store.dead_past(drv.log_end):
            dead = drv.dead_bytes_finding()
            found = found.where(F.col("phy").isNull() | (F.col("phy") < drv.log_end)).unionByName(
                self.spark.createDataFrame([(dead.kind, dead.severity, dead.file, dead.offset, dead.message, None)], found.schema))
        w = Window.partitionBy("kind", "file").orderBy(F.col("offset").asc_nulls_first(), F.col("phy").asc_nulls_first())
        ranked = found.withColumn("n", F.row_number().over(w))
        listed = ranked.where(F.col("n") <= LISTED_PER_FILE).select(*FINDINGS_SCHEMA.fieldNames())
        more = (ranked.where(F.col("n") > LISTED_PER_FILE).groupBy("kind", "file").agg(F.first("severity").alias("severity"), F.count(F.lit(1)).alias("n"))
                .select("kind", "severity", "file", F.lit(None).cast("long").alias("offset"),
                        F.format_string(f"and %d more %s finding(s) in this file (the first {LISTED_PER_FILE} are listed)", "n", "kind").alias("message")))
        completed = [Finding(*row[:5]) for row in later]
        complete_findings(completed, self.root, self.config)
        extra = self.spark.createDataFrame([(f.kind, f.severity, f.file, f.offset, f.message) for f in completed], FINDINGS_SCHEMA)
        result = listed.unionByName(more).unionByName(extra).orderBy("file", F.col("offset").asc_nulls_first(), "kind").localCheckpoint(eager=True)
        return result


def _cq_position(directory: str, files: list, q: int) -> tuple[str, int]:
    """File and byte of queue offset ``q`` (verify's ``_cq_pos``)."""
    from ..format.consumequeue import CQ_STORE_UNIT_SIZE

    byte = q * CQ_STORE_UNIT_SIZE
    for start, size, path in files:
        if start <= byte < start + size:
            return path, byte - start
    return directory, byte
