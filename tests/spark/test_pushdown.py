"""A query's WHERE clause pushed into the commitlog source (pushFilters, Spark ≥ 4.1;
option pushdown=true, the session setting turned on by rmqlab.spark.register): the same
rows with pushdown on and off, on every filter kind the source takes and on a damaged
store read leniently; splits that cannot hold a match are not read.  And why it is not
on by default yet: Spark 4.3.0 reuses one query's pushed read for another query of the
same DataFrame."""

from __future__ import annotations

import pytest

from rmqlab.spark._source import Pushed, filter_batch
from tests.spark.conftest import store_root
from tests.support import SAMPLES

pytestmark = pytest.mark.spark

COLUMNS = "physical_offset,total_size,topic,queue_id,kind,store_timestamp,born_timestamp,msg_id,keys,uniq_key"


def _read(spark, case: str, pushdown: bool, mode: str, split: str = "64KiB"):
    return (spark.read.format("rocketmq").option("columns", COLUMNS).option("splitSize", split).option("mode", mode)
            .option("pushdown", str(pushdown).lower()).load(str(store_root(case))))


def _queries(rows: list[dict]) -> list[str]:
    """A probe of every filter kind the source takes, around a message in the middle."""
    msgs = [r for r in rows if r["kind"] == "MESSAGE"]
    m = msgs[len(msgs) // 2]
    k = next(r for r in msgs[len(msgs) // 2 :] if r["keys"] and r["uniq_key"])
    topics = sorted({r["topic"] for r in msgs})[:2]
    return [
        f"topic IN ({', '.join(repr(t) for t in topics)}) AND queue_id >= 1 AND queue_id < 3 AND kind = 'MESSAGE'",
        "kind IN ('BLANK', 'BAD_SIZE', 'SIZE_MISMATCH', 'TRUNCATED', 'BAD_MAGIC')",
        f"physical_offset > {m['physical_offset']} AND physical_offset <= {m['physical_offset'] + 40000} AND queue_id = {m['queue_id']}",
        f"physical_offset IN ({m['physical_offset']}, 0, 999999999) OR msg_id = '{m['msg_id']}'",  # an OR: not pushed, the same rows
        f"store_timestamp >= {m['store_timestamp']} AND store_timestamp < {m['store_timestamp'] + 2000} AND born_timestamp <= {m['born_timestamp']}",
        f"topic = '{m['topic']}' AND msg_id = '{m['msg_id']}' AND physical_offset IN ({m['physical_offset']}, 0)",
        # through the index files (the plan's own tests: test_pushdown_plan.py)
        f"topic = '{k['topic']}' AND uniq_key = '{k['uniq_key']}'",
        f"topic IN ({', '.join(repr(t) for t in sorted({*topics, k['topic']}))}) AND keys IN ('{k['keys']}', 'no such key')",
    ]


@pytest.mark.parametrize("case,mode", [("clean", "strict"), ("crash-torn", "lenient")])
def test_every_pushed_filter_gives_the_rows_of_the_full_scan(spark, case, mode):
    """Each probe read with pushdown equals the same probe over the full scan (read once,
    without pushdown, and cached)."""
    import rmqlab.spark

    rmqlab.spark.register(spark)
    full = _read(spark, case, False, mode).cache()
    try:
        queries = _queries([r.asDict() for r in full.collect()])
        if case != "clean":
            queries = queries[:3] + queries[-2:]  # the damaged store: the filters near damage (the rest ran on the clean one)
        for q in queries:
            on = sorted(tuple(r) for r in _read(spark, case, True, mode).where(q).collect())
            off = sorted(tuple(r) for r in full.where(q).collect())
            assert on == off, q
            if "msg_id" in q or "uniq_key" in q or "keys" in q:
                assert on  # the probes do find rows
    finally:
        full.unpersist()


def test_a_topic_through_its_consume_queues_in_spark(spark):
    """pushdownQueues: a topic's rows read through its queues are the full scan's (TopicA
    holds no PREPARED/ROLLBACK record; the plan's tests cover the rest); fewer bytes."""
    import rmqlab.spark

    rmqlab.spark.register(spark)
    q = "topic = 'TopicA' AND queue_id IN (0, 2)"
    on = (spark.read.format("rocketmq").option("columns", COLUMNS).option("pushdown", "true").option("pushdownQueues", "true")
          .load(str(store_root("clean"))).where(q))
    off = _read(spark, "clean", False, "strict").where(q)
    assert sorted(map(tuple, on.collect())) == sorted(map(tuple, off.collect())) != []


def test_an_offset_range_reads_only_the_splits_that_can_hold_it(spark):
    """physical_offset bounds prune the splits: fewer partitions, the same rows."""
    import rmqlab.spark

    rmqlab.spark.register(spark)
    def base():  # a fresh DataFrame per query (see test_why_pushdown_is_not_the_default_yet)
        return _read(spark, "clean", True, "strict", "16KiB")

    offset = _read(spark, "clean", False, "strict").where("kind = 'MESSAGE'").orderBy("physical_offset").limit(40).collect()[-1].physical_offset
    assert base().where(f"physical_offset = {offset}").rdd.getNumPartitions() == 1 < base().rdd.getNumPartitions()
    assert [r.physical_offset for r in base().where(f"physical_offset = {offset}").collect()] == [offset]


def test_pushdown_off_in_the_session_is_said_and_the_default_reads_without_it(spark):
    """Spark refuses a reader with pushFilters while the session has pushdown off; the
    default reader (no pushdown) reads there."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        base = spark.read.format("rocketmq").option("columns", "physical_offset").option("pushdown", "true").load(str(store_root("clean")))
        with pytest.raises(Exception, match="filterPushdown.enabled"):
            base.count()
        assert spark.read.format("rocketmq").option("columns", "physical_offset").load(str(store_root("clean"))).count() > 0
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


def test_why_pushdown_is_not_the_default_yet(spark):
    """Spark 4.3.0 keeps a pushed read on the data source: a DataFrame counted after a
    filtered query of it reads the filtered rows.  When Spark keeps the read per scan
    (its current source does), this fails: then pushdown can be the default."""
    import rmqlab.spark

    rmqlab.spark.register(spark)
    base = _read(spark, "clean", True, "strict")
    everything = base.count()
    assert base.where("physical_offset = 0").count() == 1
    assert base.count() != everything, "Spark no longer leaks a pushed read into the next scan: make pushdown=true the default"


def test_a_batch_filter_judges_only_the_columns_it_has():
    import pyarrow as pa

    b = pa.record_batch({"topic": ["A", "B", None], "physical_offset": pa.array([1, 2, 3], pa.int64())})
    p = Pushed(values=(("topic", frozenset({"A", "B"})), ("kind", frozenset({"MESSAGE"}))), ranges=(("physical_offset", 2, None),))
    assert filter_batch(b, p).to_pydict() == {"topic": ["B"], "physical_offset": [2]}
    assert p.bounds("physical_offset") == (2, None) and Pushed(values=(("physical_offset", frozenset({5, 9})),)).bounds("physical_offset") == (5, 9)


#: per source: its format, the probes (WHERE clauses) and how many partitions the first
#: probe may read at most (of how many without it)
SOURCES = {
    "rocketmq.consumequeue": ["topic = 'TopicA' AND queue_id IN (1, 3)", "topic IN ('TopicB', 'TopicC') AND queue_offset >= 5 AND commitlog_offset < 200000",
                              "queue_id = 2 AND size > 300", "topic = 'TopicA' OR queue_id = 0"],
    "rocketmq.index": ["file LIKE '%' AND slot < 1000", "entry <= 20 AND phy_offset > 1000", "key_hash IN (0, 1, 2) OR entry = 5"],
    "rocketmq.offsets": ["group = 'groupA' AND lag > 0", "topic = 'TopicB' AND queue_id >= 1", "group IN ('groupA', 'nobody')"],
}


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_the_other_sources_give_the_same_rows_with_pushdown(spark, fmt):
    """consume queues, index files, offsets: every probe the same rows pushed and not;
    a topic/queue (a file, a group) filter reads fewer partitions."""
    import rmqlab.spark

    rmqlab.spark.register(spark)
    # the reference stores hold no consumer offsets: the sample store's groups
    root = str(store_root("clean") if fmt != "rocketmq.offsets" else SAMPLES / "damaged")

    def read(pushdown):
        return spark.read.format(fmt).option("pushdown", str(pushdown).lower()).load(root)

    probes = list(SOURCES[fmt])
    if fmt == "rocketmq.index":  # one named file: the others are not read
        name = read(False).select("file").first()["file"]
        probes.insert(0, f"file = '{name}' AND entry >= 1")
    if fmt == "rocketmq.offsets":
        group = read(False).select("group").first()["group"]
        probes = [p.replace("groupA", group) for p in probes]
    found = []
    for q in probes:
        on = sorted(map(tuple, read(True).where(q).collect()))
        assert on == sorted(map(tuple, read(False).where(q).collect())), q
        found.append(len(on))
    assert found[0] > 0 and sum(found) > found[0]  # the probes find rows
    if fmt != "rocketmq.offsets":  # (the offsets are one partition: a group filter cuts the queues read in it)
        assert read(True).where(probes[0]).rdd.getNumPartitions() < read(True).rdd.getNumPartitions()
