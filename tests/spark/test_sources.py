"""The Spark data sources on the reference stores written by RocketMQ: every row and
column equals what rmqlab's own reader returns."""

from __future__ import annotations

import base64
import sys

import numpy as np
import pytest
from tests.spark.conftest import ALL_CASES, DAMAGED, store_root
from tests.spark.expected import commitlog_rows, queue_rows

from rmqlab.store import open_store

pytestmark = pytest.mark.spark


def test_arrow_schema_is_exactly_what_spark_expects():
    pytest.importorskip("pyspark")
    from pyspark.sql.pandas.types import to_arrow_schema

    import pyarrow as pa

    from rmqlab.scan.decode import ARROW_SCHEMA
    from rmqlab.spark.commitlog_source import KEY_COLUMNS, SCHEMA, read_split, plan_splits

    # Spark refuses batches whose Arrow schema differs in any way: the decoder's columns,
    # then the indexed properties as strings
    want = pa.schema(list(ARROW_SCHEMA) + [pa.field(c, pa.string()) for c in KEY_COLUMNS])
    assert to_arrow_schema(SCHEMA, timezone="UTC").equals(want)
    batches = [b for s in plan_splits(str(store_root("clean")), 1 << 20) for b in read_split(s, columns=SCHEMA.fieldNames())]
    assert batches and all(b.schema.equals(want) for b in batches)


def _expected(case):
    return commitlog_rows(store_root(case))


@pytest.mark.parametrize("case", ALL_CASES)
def test_commitlog_rows_equal_the_reader(spark, case):
    mode = "lenient" if case in DAMAGED else "strict"
    # small splits: records are found by resynchronisation in many partitions
    df = spark.read.format("rocketmq").option("mode", mode).option("splitSize", "7000").option("pastEnd", "true").load(str(store_root(case)))
    from rmqlab.spark.commitlog_source import plan_splits

    assert len(plan_splits(str(store_root(case)), 7000)) > 40
    rows = sorted((r.asDict() for r in df.collect()), key=lambda r: r["physical_offset"])
    expected = _expected(case)
    assert len(rows) == len(expected)
    for exp, row in zip(expected, rows):
        if "error" in exp:
            assert (row["kind"], row["error"]) == (exp["kind"], exp["error"])
            continue
        for key, value in exp.items():
            got = row[key]
            if key == "body":
                got = base64.b64encode(got).decode("ascii")
            assert got == value, (case, exp["physical_offset"], key)
        assert row["error"] is None


def _on_the_workers(spark, probe) -> set[str]:
    """What ``probe()`` (no arguments, a string) returns in the session's Python workers,
    from two tasks."""

    def run(batches):
        import pyarrow as pa

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"seen": [probe()]})

    return {r.seen for r in spark.range(0, 2, 1, 2).mapInArrow(run, "seen string").collect()}


def test_the_session_talks_to_its_python_workers_over_unix_sockets(spark):
    """rmqlab.spark.session.local_spark connects the JVM and its Python workers by Unix
    sockets (over loopback TCP each Python task costs Spark ~25 ms more)."""
    assert _on_the_workers(spark, lambda: __import__("os").environ.get("PYTHON_UNIX_DOMAIN_ENABLED", "").lower()) == {"true"}


def test_the_session_workers_run_rmqlabs_daemon(spark):
    """local_spark's worker daemon (rmqlab.spark.daemon): PySpark imported from the
    package, not Spark's pyspark.zip (modules imported from a zip are compiled from
    source in every process), and the daemon's collection after each task freezing
    what survives it."""
    import pyspark

    assert _on_the_workers(spark, lambda: __import__("pyspark").__file__) == {pyspark.__file__} and ".zip" not in pyspark.__file__
    from rmqlab.spark.daemon import worker_collection

    daemon_gc = _on_the_workers(spark, worker_collection)
    assert daemon_gc == {"CollectThenFreeze"}


def test_the_daemons_collection_freezes_what_survives_it():
    import gc

    from rmqlab.spark.daemon import CollectThenFreeze

    def walked(obj):
        # gc.get_objects() lists the generations a collection walks, not the frozen
        return any(o is obj for o in gc.get_objects())

    shim = CollectThenFreeze()
    try:
        gc.unfreeze()
        cycle = [None]
        cycle[0] = cycle
        del cycle
        survivor = {"kept": [1, 2, 3]}
        assert walked(survivor)
        assert shim.collect() >= 1  # the cycle was garbage: collected first
        assert gc.get_freeze_count() > 0 and gc.is_tracked(survivor) and not walked(survivor)
        # the next collection walks only what was made since, and freezes it in turn
        later = {"made": ["after"]}
        assert walked(later) and not walked(survivor)
        shim.collect()
        assert not walked(later)
        assert shim.isenabled() == gc.isenabled()  # the rest is the gc module's
    finally:
        gc.unfreeze()


def _zip_with(path, version: bytes):
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pyspark/version.py", version)
    return str(path)


def test_the_daemon_keeps_spark_zips_unless_the_package_is_their_release(tmp_path):
    from pathlib import Path

    import pyspark

    from rmqlab.spark.daemon import path_without_spark_zips

    installed = str(Path(pyspark.__file__).parent.parent)
    release = (Path(pyspark.__file__).parent / "version.py").read_bytes()
    py4j = next(p for p in sys.path if Path(p, "py4j").is_dir())
    same = _zip_with(tmp_path / "pyspark.zip", release)
    (tmp_path / "other").mkdir()
    other = _zip_with(tmp_path / "other" / "pyspark.zip", b"__version__: str = '0.0.1'\n")
    py4j_zip = str(tmp_path / "py4j-0.10.9.9-src.zip")
    assert path_without_spark_zips([same, py4j_zip, installed, py4j]) == [installed, py4j]
    # another release in the zip, or no package beside it: Spark's path as it set it
    assert path_without_spark_zips([other, installed, py4j]) == [other, installed, py4j]
    assert path_without_spark_zips([same, str(tmp_path)]) == [same, str(tmp_path)]
    assert path_without_spark_zips([installed, py4j]) == [installed, py4j]


@pytest.mark.parametrize("mode", ["FAILFAST", "strict"])
def test_failfast_mode_fails_naming_file_and_offset(spark, mode):
    with pytest.raises(Exception) as exc:
        spark.read.format("rocketmq").option("mode", mode).load(str(store_root("crash-torn"))).count()
    text = str(exc.value)
    assert "00000000000000327680 @ offset 38973" in text and "BODY_CRC" in text


def test_a_damaged_capture_reads_as_spark_reads_malformed_input(spark):
    """The default is PERMISSIVE, as Spark's file sources: the torn record is a row saying
    what is wrong and where; DROPMALFORMED leaves it out and keeps every other row."""
    path = str(store_root("crash-torn"))
    rows = spark.read.format("rocketmq").option("columns", "physical_offset,kind,error").load(path).collect()
    bad = [r for r in rows if r.error is not None]
    assert [(r.physical_offset, r.kind) for r in bad] == [(366653, "BODY_CRC")] and "@ offset 38973" in bad[0].error
    kept = spark.read.format("rocketmq").option("mode", "dropmalformed").option("columns", "physical_offset,kind").load(path).collect()
    assert sorted(r.physical_offset for r in kept) == sorted(r.physical_offset for r in rows if r.error is None)
    assert len(kept[0]) == 2  # the error column it drops by is not added


@pytest.mark.parametrize("root", ["damaged", "crash-torn"])
def test_the_rows_are_what_the_next_start_serves(spark, root, tmp_path):
    """A store root is read as its next start serves it: the records before the end of the
    log are exactly `rmqlab dump`'s (a record in a file that start never reads is served,
    and a row, even with a bad CRC), the damage that ends the log is the last row, saying
    what and where; pastEnd reads on into the cut, whose records are salvage's."""
    import json

    from rmqlab.recovery import recover
    from tests.support import SAMPLES, run_rmqlab

    path = str(SAMPLES / root if root == "damaged" else store_root(root))
    rep = recover(path)
    df = spark.read.format("rocketmq").option("columns", "physical_offset,kind,error").option("splitSize", "20000").load(path)
    rows = sorted(df.collect(), key=lambda r: r.physical_offset)
    dump = run_rmqlab("dump", path, "--json")
    listed = [json.loads(line)["physical_offset"] for line in dump.stdout.splitlines()]
    assert [r.physical_offset for r in rows if r.kind != "BLANK" and r.physical_offset < rep.commitlog_end] == listed
    last = rows[-1]
    # the walk's stop (the cause names what it means: a torn write is a CRC failure here)
    assert (last.physical_offset, last.kind) == (rep.commitlog_end, rep.stop.kind) and f"@ offset {rep.stop.file_offset} " in last.error
    assert all(r.error is not None for r in rows if r.kind not in ("MESSAGE", "BLANK"))  # a CRC mismatch says so too
    past = spark.read.format("rocketmq").option("columns", "physical_offset,kind").option("pastEnd", "true").load(path).collect()
    cut = {r.physical_offset for r in past if r.kind == "MESSAGE" and r.physical_offset > rep.commitlog_end}
    from rmqlab.forensics.salvage import salvage_path

    assert {s.physical_offset for s in salvage_path(path)} <= cut and len(past) >= len(rows) + len(cut)
    assert bool(cut) == (root == "damaged")  # crash-torn: the torn record is the last
    dropped = spark.read.format("rocketmq").option("mode", "DROPMALFORMED").option("columns", "physical_offset").load(path).collect()
    assert sorted(r.physical_offset for r in dropped) == [r.physical_offset for r in rows if r.error is None]


def test_options_filter_and_the_benchmark_query(spark):
    from pyspark.sql import functions as F

    path = str(store_root("clean"))
    df = (
        spark.read.format("rocketmq")
        .option("topics", "TopicA,TopicC")
        .option("includeBody", "false")
        .option("verifyCrc", "false")
        .option("startTime", "1795303734000")
        .load(path)
    )
    got = sorted((r.topic, r.physical_offset) for r in df.select("topic", "physical_offset").collect())
    exp = sorted(
        (r.topic, r.physical_offset)
        for r in open_store(path).commitlog.iter_records()
        if r.topic in ("TopicA", "TopicC") and r.store_timestamp >= 1795303734000
    )
    assert got == exp and got
    assert df.where("body IS NOT NULL OR crc_ok IS NOT NULL").count() == 0
    agg = {
        r["topic"]: (r["n"], r["bytes"], r["body"])
        for r in spark.read.format("rocketmq").load(path).where("kind = 'MESSAGE'").groupBy("topic")
        .agg(F.count("*").alias("n"), F.sum("total_size").alias("bytes"), F.sum(F.length("body")).alias("body"))
        .collect()
    }
    want = {}
    for r in open_store(path).commitlog.iter_records():
        n, b, bl = want.get(r.topic, (0, 0, 0))
        want[r.topic] = (n + 1, b + r.total_size, bl + len(r.body))
    assert agg == want


def test_columns_option_prunes_the_schema_and_the_work(spark):
    path = str(store_root("v2ipv6"))
    df = spark.read.format("rocketmq").option("columns", "msg_id,topic,total_size").load(path)
    assert df.columns == ["msg_id", "topic", "total_size"]
    got = sorted(tuple(r) for r in df.where("topic IS NOT NULL").collect())
    exp = sorted((r.msg_id, r.topic, r.total_size) for r in open_store(path).commitlog.iter_records())
    assert got == exp
    with pytest.raises(Exception) as exc:
        spark.read.format("rocketmq").option("columns", "topic,nope").load(path).count()
    assert "nope" in str(exc.value)


def test_a_given_schema_chooses_the_columns_of_each_format(spark):
    """spark.read.schema(...) naming some columns, in another order: those columns,
    with the values of a full read (what `columns` does for the commitlog)."""
    path = str(store_root("clean"))
    cases = [
        ("rocketmq", "total_size int, msg_id string, topic string", "topic IS NOT NULL"),
        ("rocketmq.consumequeue", "tags_code long, topic string, queue_offset long", None),
        ("rocketmq.index", "phy_offset long, key_hash int, file string", None),
    ]
    for fmt, ddl, where in cases:
        full = spark.read.format(fmt).load(path)
        some = spark.read.format(fmt).schema(ddl).load(path)
        names = [c.split()[0] for c in ddl.split(", ")]
        assert some.columns == names
        if where:
            full, some = full.where(where), some.where(where)
        got = sorted(tuple(r) for r in some.collect())
        assert got and got == sorted(tuple(r) for r in full.select(*names).collect()), fmt


@pytest.mark.parametrize(
    "ddl, words",
    [
        ("topic string, nope int", ["'nope'", "physical_offset"]),  # no such column: names it and the real ones
        ("topic string, total_size bigint", ["total_size", "int", "bigint"]),  # another type
        ("topic string NOT NULL", ["topic", "NOT NULL"]),
    ],
)
def test_a_schema_the_source_cannot_give_is_refused_naming_the_column(spark, ddl, words):
    with pytest.raises(Exception) as exc:
        spark.read.format("rocketmq").schema(ddl).load(str(store_root("clean"))).count()
    assert all(w in str(exc.value) for w in words), str(exc.value)[:500]


def test_bad_option_is_a_clear_error(spark):
    with pytest.raises(Exception) as exc:
        spark.read.format("rocketmq").option("mode", "sloppy").load(str(store_root("clean"))).count()
    assert "mode" in str(exc.value) and "permissive" in str(exc.value)


@pytest.mark.parametrize("case", ["clean", "crash-cqdeleted"])
def test_consumequeue_rows_equal_the_reader(spark, case):
    root = store_root(case)
    rows = sorted(tuple(r) for r in spark.read.format("rocketmq.consumequeue").load(str(root)).collect())
    assert rows == queue_rows(root)


def test_index_rows_equal_the_index_files(spark):
    root = store_root("clean")
    df = spark.read.format("rocketmq.index").option("splitEntries", "100").load(str(root))
    rows = {(r.file, r.entry): r for r in df.collect()}
    store = open_store(root)
    n = 0
    for f in store.index.files:
        e = f.entries()
        for number in range(1, f.index_count):
            r = rows[(str(f.path), number)]
            assert (r.key_hash, r.phy_offset, r.time_diff, r.prev_index) == tuple(int(e[number][k]) for k in ("key_hash", "phy_offset", "time_diff", "prev_index"))
            assert r.slot == int(e[number]["key_hash"]) % f.max_hash_slot_num
            assert (r.begin_timestamp, r.end_timestamp, r.index_count) == (f.begin_timestamp, f.end_timestamp, f.index_count)
            assert r.timestamp == f.begin_timestamp + r.time_diff * 1000
            n += 1
    assert n == len(rows)
    # every slot head is an entry of that slot
    for f in store.index.files:
        slots = f.slots()
        for s in np.flatnonzero(slots > 0)[:20]:
            assert rows[(str(f.path), int(slots[s]))].slot == s


@pytest.mark.parametrize("case", ["clean", "crash-torn"])
def test_range_reads_as_on_hdfs_or_s3_give_the_same_rows(monkeypatch, case):
    """Non-local filesystems are read by range (split + overhang, more on
    NeedMoreBytes); force that path on local files with a tiny overhang."""
    from rmqlab.spark import _paths, commitlog_source as cs

    mode = "lenient" if case in DAMAGED else "strict"
    uri = "file://" + str(store_root(case))
    splits = cs.plan_splits(uri, 3000)
    assert splits[0].file.startswith("/") and splits[0].uri.startswith("file://")
    local = [r for sp in splits for b in cs.read_split(sp, mode=mode) for r in b.to_pylist()]
    monkeypatch.setattr(_paths, "is_local", lambda fs: False)
    monkeypatch.setattr(cs, "OVERHANG", 200)
    ranged = [r for sp in splits for b in cs.read_split(sp, mode=mode) for r in b.to_pylist()]
    assert ranged == local
    whole = [r for sp in cs.plan_splits(str(store_root(case)), 1 << 30) for b in cs.read_split(sp, mode=mode) for r in b.to_pylist()]
    assert [(r["physical_offset"], r["kind"]) for r in ranged] == [(r["physical_offset"], r["kind"]) for r in whole]


def test_an_index_file_of_unworkable_size_is_named_with_the_options_to_set(tmp_path):
    """An index file cut short (its sizes cannot be inferred): the error names the
    file and the Spark options that give the sizes, not the CLI's flags."""
    import shutil

    from rmqlab.errors import StoreLayoutError
    from rmqlab.spark.index_source import plan_index

    root = tmp_path / "store"
    shutil.copytree(store_root("clean"), root)
    victim = sorted((root / "index").iterdir())[0]
    victim.write_bytes(victim.read_bytes()[:1000])
    with pytest.raises(StoreLayoutError) as exc:
        plan_index(str(root), None, None)
    assert str(victim) in str(exc.value) and "maxHashSlotNum and maxIndexNum" in str(exc.value) and "--max" not in str(exc.value)
    with pytest.raises(StoreLayoutError, match=r"index file is 1000 bytes; maxHashSlotNum=64"):
        plan_index(str(root), 64, 256)


def test_offsets_source_gives_the_rows_of_rmqlab_offsets(spark, tmp_path):
    """The rows ``rmqlab offsets --json`` prints (lookup.consumer_progress), on a copy of a
    store RocketMQ wrote with a consumerOffset.json in fastjson's form."""
    from tests.support import copy_store
    from rmqlab.lookup import consumer_progress
    from rmqlab.store.metadata import read_consumer_offsets

    root = copy_store("clean", tmp_path)
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable":{"TopicA@billing":{0:40,1:53,2:0},"TopicB@audit":{1:60}}}')
    with open_store(root) as st:
        want = [r.to_dict() for r in consumer_progress(st, read_consumer_offsets(root))]
    got = [r.asDict() for r in spark.read.format("rocketmq.offsets").load(str(root)).collect()]
    assert got == want and any(r["lag"] < 0 for r in got)  # TopicB/1 holds 52: committed past its end
    billing = spark.read.format("rocketmq.offsets").option("group", "billing").load(str(root)).collect()
    assert {r["group"] for r in billing} == {"billing"}


def test_the_api_examples_run(spark):
    """The Spark functions' examples (doctest) on the shipped stores, in the session this
    worker already runs."""
    import doctest

    import rmqlab.spark
    import rmqlab.spark.session

    for module in (rmqlab.spark, rmqlab.spark.session):
        result = doctest.testmod(module, extraglobs={"spark": spark}, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=False)
        assert result.attempted and result.failed == 0, f"{result.failed} of {result.attempted} example(s) of {module.__name__} failed"
