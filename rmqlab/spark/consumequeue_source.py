"""``spark.read.format("rocketmq.consumequeue")`` — one row per consume-queue entry.

Java counterpart: ``ConsumeQueue`` (20-byte ``CqUnit``s), read with the numpy dtype
derived from :data:`rmqlab.format.consumequeue.ConsumeQueueEntry` and the validity
rules of :class:`rmqlab.store.consume_queue.ConsumeQueue` (Java ``ConsumeQueue.recover``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from ..files.rocksdb import is_rocksdb_names
from ..rules import CONSUMEQUEUE_DIR, CONSUMEQUEUE_EXT_DIR
from . import _paths
from ._source import PushFilters, StoreDataSource, StoreSourceReader, filter_batch

SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("queue_id", IntegerType()),
        StructField("queue_offset", LongType()),
        StructField("commitlog_offset", LongType()),
        StructField("size", IntegerType()),
        StructField("tags_code", LongType()),
        StructField("ext_tags_code", LongType()),
    ]
)


@dataclass(frozen=True)
class QueueSplit(InputPartition):
    """One logical queue ``topic/queueId``: its files as ``(uri, start offset, size)``."""

    topic: str
    queue_id: int
    files: tuple
    fs: tuple = field(default=(), repr=False)  # filesystem settings resolved where the read was planned (_paths.fs_settings): may hold credentials
    #: the queue's ext files (``consumequeue_ext/<topic>/<queueId>/``) as ``(uri, start, size)``
    ext: tuple = ()


#: the ``rocketmq.consumequeue`` source's options
TOPICS = _paths.Option("topics", "list", None, "comma-separated topic names: only their queues are read.")
OPTIONS = (TOPICS, _paths.PUSHDOWN, *_paths.FS_OPTIONS)


class ConsumeQueueDataSource(StoreDataSource):
    """Read RocketMQ consume queues: one row per valid entry, queue by queue.

    ::

        import rmqlab.spark
        rmqlab.spark.register(spark)

        cq = spark.read.format("rocketmq.consumequeue").load("/data/broker-a/store")
        cq.groupBy("topic", "queue_id").agg(F.min("queue_offset"), F.max("queue_offset")).show()

        # which consume-queue entries point at records that are not there?
        log = spark.read.format("rocketmq").option("includeBody", "false").load(path)
        cq.join(log, cq.commitlog_offset == log.physical_offset, "left_anti").show()

    Columns: ``topic``, ``queue_id`` (from the directory names), ``queue_offset``
    (the entry's number in the queue), ``commitlog_offset``, ``size`` (the record's
    totalSize), ``tags_code`` (Java ``String.hashCode`` of TAGS, or the delivery
    time for ``SCHEDULE_TOPIC_XXXX``; with ``enableConsumeQueueExt`` an ext address)
    and ``ext_tags_code`` (the tagsCode the ext unit at that address holds, read from
    ``consumequeue_ext/``, Java ``ConsumeQueueExt.get``; null for a plain tagsCode or
    an address no unit answers).

    The entries are those RocketMQ serves (``rmqlab queue``): pre-blank filler
    ``(0, 0x7FFFFFFF, 0)`` before the first real entry is skipped, and a queue ends at
    its first invalid entry (``offset < 0`` or ``size <= 0``).  One partition per
    queue.  Path: a store root or its ``consumequeue/`` directory; local or any
    ``pyarrow.fs`` URI.  With ``pushdown``, a query's ``topic`` / ``queue_id`` filters
    leave the other queues unread.

    **Options** (strings; declared once, in ``OPTIONS``):
    """

    SCHEMA = SCHEMA
    OPTIONS = OPTIONS



class ConsumeQueueReader(StoreSourceReader):
    FORMAT, LOADS = "rocketmq.consumequeue", "STORE_OR_CONSUMEQUEUE_DIR"
    # pushdown: a queue no topic / queue_id filter names is not read (its directory is
    # not even listed); the other filters cut each queue's batch.  Never a queue's
    # entries by offset: where a queue ends (its first invalid unit) is only known by
    # reading it from its first file
    PUSH_EQUAL, PUSH_RANGE = ("topic", "queue_id"), ("queue_id", "queue_offset", "commitlog_offset", "size", "tags_code")

    def __init__(self, options: dict, columns: list[str] | None = None):
        super().__init__(options, columns)
        self.topics = TOPICS.read(options)

    def partitions(self):
        topics = self.topics
        wanted = self.pushed.value_set("topic")
        if wanted is not None:
            topics = sorted(t for t in wanted if isinstance(t, str) and (topics is None or t in topics))
        lo, hi = self.pushed.bounds("queue_id")
        ids = self.pushed.value_set("queue_id")
        return [s for s in plan_queues(self.path, topics, self.fs)
                if (lo is None or s.queue_id >= lo) and (hi is None or s.queue_id <= hi) and (ids is None or s.queue_id in ids)]

    def read(self, partition: QueueSplit):
        batch = filter_batch(read_queue(partition), self.pushed)
        if batch.num_rows:
            yield self.project(batch)


class PushdownConsumeQueueReader(PushFilters, ConsumeQueueReader):
    """The reader with ``pushFilters`` (option ``pushdown=true``)."""


ConsumeQueueDataSource.READER, ConsumeQueueDataSource.PUSHDOWN_READER = ConsumeQueueReader, PushdownConsumeQueueReader


def plan_queues(path: str, topics: list[str] | None = None, fs_settings: tuple = ()) -> list[QueueSplit]:
    fs, inner = _paths.filesystem(path, fs_settings)
    out = []
    with _paths.storage(path):
        base = _paths.store_subdir(fs, inner, CONSUMEQUEUE_DIR, path)
        topics_here = _paths.list_dirs(fs, base)
        if not topics_here and is_rocksdb_names(f.base_name for f in _paths.list_files(fs, base)):
            # storeType=defaultRocksDB: no file queue to read, and no rows is not the answer
            raise _paths.OptionError(f"{path}: the consume queues are in RocksDB (storeType=defaultRocksDB); this source reads consume-queue files: "
                                     "read them with rmqlab queue / rmqlab verify, or rmqlab.store.open_store(...).consume_queue(...)")
        for t in topics_here:
            if topics is not None and t.base_name not in topics:
                continue
            for q in _paths.list_dirs(fs, t.path):
                if not q.base_name.isdigit():
                    continue
                files = tuple((_paths.child_uri(path, p), start, size) for start, p, size in _paths.offset_named_files(fs, q.path))
                ext_dir = base.rstrip("/").rsplit("/", 1)[0] + f"/{CONSUMEQUEUE_EXT_DIR}/{t.base_name}/{q.base_name}"
                ext = tuple((_paths.child_uri(path, p), start, size) for start, p, size in _paths.offset_named_files(fs, ext_dir)) if _paths.is_dir(fs, ext_dir) else ()
                if files:
                    out.append(QueueSplit(t.base_name, int(q.base_name), files, fs_settings, ext))
    out.sort(key=lambda s: (s.topic, s.queue_id))
    return out


def read_queue(split: QueueSplit):
    """The queue's valid entries as one Arrow batch (numpy over all its files)."""
    import numpy as np
    import pyarrow as pa

    from ..format.consumequeue import CQ_STORE_UNIT_SIZE, PRE_BLANK_SIZE
    from ..store.consume_queue import CQ_DTYPE

    parts = []
    for uri, _start, size in split.files:
        fs, inner = _paths.filesystem(uri, split.fs)
        with _paths.storage(uri), fs.open_input_file(inner) as fh:
            data = fh.read_at(size - size % CQ_STORE_UNIT_SIZE, 0)
        parts.append(np.frombuffer(data, CQ_DTYPE))
    e = np.concatenate(parts) if parts else np.zeros(0, CQ_DTYPE)
    first_slot = split.files[0][1] // CQ_STORE_UNIT_SIZE if split.files else 0
    off = e["commitlog_offset"]
    size = e["size"]
    # Java ConsumeQueue: valid while offset >= 0 and size > 0; the pre-blank filler
    # before the first real entry is "valid" by that rule but is no message
    valid = (off >= 0) & (size > 0)
    real = valid & (size != PRE_BLANK_SIZE)
    lo = int(np.argmax(real)) if real.any() else len(e)
    invalid_after = np.flatnonzero(~valid[lo:])
    hi = lo + int(invalid_after[0]) if len(invalid_after) else len(e)
    sel = e[lo:hi]
    n = len(sel)
    tags = sel["tags_code"].astype(np.int64)
    ext = _ext_tags_codes(split, tags)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([split.topic] * n, pa.string()),
            pa.array(np.full(n, split.queue_id, np.int32)),
            pa.array(np.arange(first_slot + lo, first_slot + hi, dtype=np.int64)),
            pa.array(sel["commitlog_offset"].astype(np.int64)),
            pa.array(sel["size"].astype(np.int32)),
            pa.array(tags),
            ext,
        ],
        names=SCHEMA.fieldNames(),
    )


def _ext_tags_codes(split: QueueSplit, tags):
    """The tagsCode of the ext unit each ext address names (Java ``ConsumeQueueExt.get``:
    ``unDecorate`` the address, then the unit's size and tagsCode), null elsewhere."""
    import numpy as np
    import pyarrow as pa

    from ..format.consumequeue import EXT_MAX_ADDR, EXT_UNIT_MIN_SIZE, ext_offsets, ext_tags_at

    addr = np.flatnonzero(tags <= EXT_MAX_ADDR)
    out = np.zeros(len(tags), np.int64)
    ok = np.zeros(len(tags), bool)
    if len(addr) and split.ext:
        offsets = ext_offsets(tags[addr])  # ConsumeQueueExt.unDecorate
        for uri, start, size in split.ext:
            fs, inner = _paths.filesystem(uri, split.fs)
            inside = np.flatnonzero((offsets >= start) & (offsets + EXT_UNIT_MIN_SIZE <= start + size))
            if not len(inside):
                continue
            with _paths.storage(uri), fs.open_input_file(inner) as fh:
                data = np.frombuffer(fh.read_at(size, 0), np.uint8)
            pos = offsets[inside] - start
            code, good = ext_tags_at(data, pos)
            out[addr[inside[good]]] = code[good]
            ok[addr[inside[good]]] = True
    return pa.array(out, pa.int64(), mask=~ok)
