"""``spark.read.format("rocketmq.index")`` — one row per IndexFile entry.

Java counterpart: ``IndexFile`` / ``IndexHeader``; entries read with the numpy dtype
derived from :data:`rmqlab.format.indexfile.IndexEntry`, the header with the
construct schema :data:`~rmqlab.format.indexfile.IndexHeader`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from ..rules import INDEX_DIR
from . import _paths
from ._source import PushFilters, StoreDataSource, StoreSourceReader, filter_batch

SCHEMA = StructType(
    [
        StructField("file", StringType()),
        StructField("entry", IntegerType()),
        StructField("slot", IntegerType()),
        StructField("key_hash", IntegerType()),
        StructField("phy_offset", LongType()),
        StructField("time_diff", IntegerType()),
        StructField("prev_index", IntegerType()),
        StructField("timestamp", LongType()),
        StructField("begin_timestamp", LongType()),
        StructField("end_timestamp", LongType()),
        StructField("begin_phy_offset", LongType()),
        StructField("end_phy_offset", LongType()),
        StructField("hash_slot_count", IntegerType()),
        StructField("index_count", IntegerType()),
    ]
)

DEFAULT_SPLIT_ENTRIES = 2_000_000


@dataclass(frozen=True)
class IndexSplit(InputPartition):
    """Entries ``[first, last)`` of one index file."""

    uri: str
    file: str
    max_hash_slot_num: int
    max_index_num: int
    first: int
    last: int
    fs: tuple = field(default=(), repr=False)  # filesystem settings resolved where the read was planned (_paths.fs_settings): may hold credentials


#: the ``rocketmq.index`` source's options
MAX_HASH_SLOT_NUM = _paths.Option("maxHashSlotNum", "int", None, (
    "the index files' slot count (Java ``maxHashSlotNum``); else inferred from the file length with Java's 4 "
    "entries per slot, as ``rmqlab info`` does."))
MAX_INDEX_NUM = _paths.Option("maxIndexNum", "int", None, "the index files' entry count (Java ``maxIndexNum``); else inferred as above.")
SPLIT_ENTRIES = _paths.Option("splitEntries", "int", DEFAULT_SPLIT_ENTRIES, "entries per partition.")
FILES = _paths.Option("files", "list", None, (
    "comma-separated index file names: only these are read (e.g. to leave out one of the wrong size, which "
    "otherwise fails the read naming it)."))
OPTIONS = (MAX_HASH_SLOT_NUM, MAX_INDEX_NUM, SPLIT_ENTRIES, FILES, _paths.PUSHDOWN, *_paths.FS_OPTIONS)


class IndexDataSource(StoreDataSource):
    """Read RocketMQ index files: one row per used entry (entry 0 is never used).

    ::

        import rmqlab.spark
        rmqlab.spark.register(spark)

        idx = spark.read.format("rocketmq.index").load("/data/broker-a/store")
        # how long are the hash chains? (collisions share a slot)
        idx.groupBy("file", "slot").count().describe("count").show()

    Columns: ``file``, ``entry`` (its number, 1..indexCount-1), ``slot``
    (``key_hash % maxHashSlotNum``: the chain it belongs to), ``key_hash``,
    ``phy_offset``, ``time_diff`` (seconds after beginTimestamp), ``prev_index``
    (previous entry of the chain, 0 ends it), ``timestamp``
    (``begin_timestamp + time_diff*1000``), and the file header's
    ``begin_timestamp``, ``end_timestamp``, ``begin_phy_offset``, ``end_phy_offset``,
    ``hash_slot_count``, ``index_count``.

    Path: a store root or its ``index/`` directory; local or any ``pyarrow.fs`` URI.
    With ``pushdown``, a query's ``file`` and ``entry`` filters leave the other files
    and entries unread.

    **Options** (strings; declared once, in ``OPTIONS``):
    """

    SCHEMA = SCHEMA
    OPTIONS = OPTIONS



class IndexReader(StoreSourceReader):
    FORMAT, LOADS = "rocketmq.index", "STORE_OR_INDEX_DIR"
    # pushdown: index files no ``file`` filter names and entry ranges no ``entry`` bound
    # reaches are not read; the rest cut each split's batch.  Never by the header's
    # offsets or times: a file whose entries stray outside them would lose rows
    PUSH_EQUAL, PUSH_RANGE = ("file", "entry", "slot", "key_hash", "phy_offset"), ("entry", "slot", "phy_offset", "timestamp", "time_diff", "prev_index")

    def __init__(self, options: dict, columns: list[str] | None = None):
        super().__init__(options, columns)
        self.slots = MAX_HASH_SLOT_NUM.read(options)
        self.entries = MAX_INDEX_NUM.read(options)
        self.split_entries = SPLIT_ENTRIES.read(options)
        self.files = FILES.read(options)

    def partitions(self):
        files = self.files
        wanted = self.pushed.value_set("file")
        if wanted is not None:  # the column shows the path as loaded: the file's name is its last part
            names = sorted({str(f).replace("\\", "/").rsplit("/", 1)[-1] for f in wanted})
            files = [n for n in names if files is None or n in files]
        lo, hi = self.pushed.bounds("entry")
        return [s for s in plan_index(self.path, self.slots, self.entries, self.split_entries, files, self.fs)
                if (wanted is None or s.file in wanted) and (lo is None or s.last > lo) and (hi is None or s.first <= hi)]

    def read(self, partition: IndexSplit):
        batch = filter_batch(read_index_split(partition), self.pushed)
        if batch.num_rows:
            yield self.project(batch)


class PushdownIndexReader(PushFilters, IndexReader):
    """The reader with ``pushFilters`` (option ``pushdown=true``)."""


IndexDataSource.READER, IndexDataSource.PUSHDOWN_READER = IndexReader, PushdownIndexReader


def plan_index(path: str, slots: int | None, entries: int | None, split_entries: int = DEFAULT_SPLIT_ENTRIES, names: list[str] | None = None,
               fs_settings: tuple = ()) -> list[IndexSplit]:
    from ..errors import StoreLayoutError
    from ..format.indexfile import index_file_size
    from ..store.reader import infer_index_sizes

    fs, inner = _paths.filesystem(path, fs_settings)
    out = []
    with _paths.storage(path):
        d = _paths.store_subdir(fs, inner, INDEX_DIR, path)
        listed = _paths.list_files(fs, d)
    for fi in listed:
        if not fi.base_name.isdigit() or (names is not None and fi.base_name not in names):
            continue
        shown = _paths.display_path(path, fi.path)
        s, n = (slots, entries) if slots and entries else infer_index_sizes(fi.size, shown, hint="set the options maxHashSlotNum and maxIndexNum")
        if fi.size != index_file_size(s, n):
            raise StoreLayoutError(shown, None, f"index file is {fi.size} bytes; maxHashSlotNum={s} and maxIndexNum={n} make {index_file_size(s, n)}")
        for first in range(1, n, split_entries):
            out.append(IndexSplit(_paths.child_uri(path, fi.path), shown, s, n, first, min(n, first + split_entries), fs_settings))
    return out


def read_index_split(split: IndexSplit):
    import numpy as np
    import pyarrow as pa

    from ..format.indexfile import INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, IndexHeader, entry_position
    from ..format.parse import parse_at
    from ..store.index_file import ENTRY_DTYPE

    fs, inner = _paths.filesystem(split.uri, split.fs)
    with _paths.storage(split.file), fs.open_input_file(inner) as fh:
        head_bytes = bytes(fh.read_at(INDEX_HEADER_SIZE, 0))
        h = parse_at(IndexHeader, head_bytes, 0, file=split.file, what="index header")
        # entries past indexCount were never written
        last = min(split.last, max(h.index_count, 1))
        n = max(0, last - split.first)
        data = fh.read_at(n * INDEX_ENTRY_SIZE, entry_position(split.max_hash_slot_num, split.first)) if n else b""
    e = np.frombuffer(data, ENTRY_DTYPE, count=n)
    key_hash = e["key_hash"].astype(np.int32)
    time_diff = e["time_diff"].astype(np.int32)

    def const(v, t):
        return pa.array(np.full(n, v, t))

    return pa.RecordBatch.from_arrays(
        [
            pa.array([split.file] * n, pa.string()),
            pa.array(np.arange(split.first, split.first + n, dtype=np.int32)),
            pa.array((np.abs(key_hash.astype(np.int64)) % split.max_hash_slot_num).astype(np.int32)),
            pa.array(key_hash),
            pa.array(e["phy_offset"].astype(np.int64)),
            pa.array(time_diff),
            pa.array(e["prev_index"].astype(np.int32)),
            pa.array(h.begin_timestamp + time_diff.astype(np.int64) * 1000),
            const(h.begin_timestamp, np.int64),
            const(h.end_timestamp, np.int64),
            const(h.begin_phy_offset, np.int64),
            const(h.end_phy_offset, np.int64),
            const(h.hash_slot_count, np.int32),
            const(h.index_count, np.int32),
        ],
        names=SCHEMA.fieldNames(),
    )
