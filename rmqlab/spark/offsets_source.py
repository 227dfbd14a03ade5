"""``spark.read.format("rocketmq.offsets")`` — one row per consumer group, topic and queue:
committed offset, the queue's range and the lag (an offline ``mqadmin consumerProgress``).

Java counterpart: ``ConsumerOffsetManager`` (``config/consumerOffset.json``, with
``lmqConsumerOffset.json``) beside each ``ConsumeQueue``'s min and max offset; the same
rows as ``rmqlab offsets --json`` (:func:`rmqlab.lookup.consumer_progress`).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from . import _paths
from ._source import PushFilters, StoreDataSource, StoreSourceReader, filter_batch

SCHEMA = StructType(
    [
        StructField("group", StringType()),
        StructField("topic", StringType()),
        StructField("queue_id", IntegerType()),
        StructField("committed_offset", LongType()),
        StructField("min_offset", LongType()),
        StructField("max_offset", LongType()),
        StructField("lag", LongType()),
        StructField("next_store_timestamp", LongType()),
        StructField("note", StringType()),
        StructField("units_cut", LongType()),
        StructField("unconsumed_cut", LongType()),
    ]
)


@dataclass(frozen=True)
class OffsetsSplit(InputPartition):
    """The whole store: the offsets files are small, and every queue's range is read
    from its first and last files only."""

    path: str
    group: str | None


#: the ``rocketmq.offsets`` source's options
GROUP = _paths.Option("group", "text", None, "only this consumer group.")
OPTIONS = (GROUP, _paths.PUSHDOWN)


class OffsetsDataSource(StoreDataSource):
    """Read the committed offsets of a store's consumer groups, with the lag per queue.

    ::

        import rmqlab.spark
        rmqlab.spark.register(spark)

        lag = spark.read.format("rocketmq.offsets").load("/data/broker-a/store")
        lag.groupBy("group").sum("lag").show()             # what each group has not consumed
        lag.where("lag < 0").show()                         # committed past a queue's end (a crash rolled it back)

    Columns: ``group``, ``topic``, ``queue_id``, ``committed_offset`` (null: the group
    committed nothing for this queue), ``min_offset``, ``max_offset`` (the queue's end
    once the store's next start cuts its units past the end of the log), ``lag``,
    ``next_store_timestamp`` (store time of the next message to consume), ``note``,
    ``units_cut`` (the queue offsets that start cuts) and ``unconsumed_cut`` (of those,
    the ones the group had not consumed: lost to it, and not in ``lag``).

    Path: a store root on a local (or NFS) path: the offsets live in ``config/``, beside
    the consume queues.  With ``pushdown``, a query's ``group`` filter leaves the other
    groups unread.

    **Options** (strings; declared once, in ``OPTIONS``):
    """

    SCHEMA = SCHEMA
    OPTIONS = OPTIONS



class OffsetsReader(StoreSourceReader):
    FORMAT = "rocketmq.offsets"
    # pushdown: only the consumer groups a ``group`` filter names are read
    PUSH_EQUAL, PUSH_RANGE = ("group", "topic", "queue_id"), ("queue_id", "lag", "committed_offset")

    def __init__(self, options: dict, columns: list[str] | None = None):
        super().__init__(options, columns)
        path = self.path
        if "://" in path and not path.startswith("file://"):
            raise _paths.OptionError(f"{path}: the offsets source reads a store on a local or mounted path (config/ and the consume queues are read as files)")
        self.path = path[len("file://") :] if path.startswith("file://") else path
        self.group = GROUP.read(options)

    def partitions(self):
        groups = self.pushed.value_set("group")
        if groups is None:
            return [OffsetsSplit(self.path, self.group)]
        # one split per group a filter names (and the option allows): other groups' queues are not read
        return [OffsetsSplit(self.path, g) for g in sorted(g for g in groups if isinstance(g, str) and self.group in (None, g))]

    def read(self, partition: OffsetsSplit):
        batch = filter_batch(read_offsets(partition), self.pushed)
        if batch.num_rows:
            yield self.project(batch)


class PushdownOffsetsReader(PushFilters, OffsetsReader):
    """The reader with ``pushFilters`` (option ``pushdown=true``)."""


OffsetsDataSource.READER, OffsetsDataSource.PUSHDOWN_READER = OffsetsReader, PushdownOffsetsReader


def read_offsets(split: OffsetsSplit):
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from ..lookup import consumer_progress
    from ..store.metadata import read_consumer_offsets
    from ..store.reader import StoreReader
    from ..recovery.next_start import Asked

    offsets = read_consumer_offsets(split.path)
    asked = Asked(split.path)  # the queues as the next start leaves them, planned when first asked
    with StoreReader(split.path, strict=False, log_end=asked.log_end, queues_truncated=asked.queues_truncated) as store:
        rows = [r.to_dict() for r in consumer_progress(store, offsets, split.group)]
    return pa.RecordBatch.from_pylist(rows, schema=to_arrow_schema(SCHEMA))
