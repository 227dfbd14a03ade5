"""The Spark sources on production layouts: a log spread over several directories
(``storePathCommitLog``) and a DLedger log give the rows the single-process reader
gives, at several split sizes, and ``rmqlab.spark.verify`` the findings of
``rmqlab verify``."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from tests.layouts import multi_path
from tests.spark.expected import assert_commitlog_rows, commitlog_rows

pytestmark = pytest.mark.spark


def _cli_findings(capsys, *argv) -> Counter:
    main(["verify", "--json", *map(str, argv)])
    return Counter((f["kind"], f["severity"], f["file"], f["offset"]) for f in json.loads(capsys.readouterr().out)["findings"])


def test_a_log_over_two_directories_reads_as_one(spark, tmp_path, capsys):
    case = "crash-torn"  # a torn record at the end: the lenient rows and the findings include damage
    import rmqlab.spark

    store, conf = multi_path(tmp_path, case)
    cfg = MessageStoreConfig.from_properties(conf)
    other = str(tmp_path / "disk2" / "commitlog")
    for split in ("7000", "64KiB"):
        df = (spark.read.format("rocketmq").option("mode", "lenient").option("splitSize", split)
              .option("commitlogDirs", other).load(str(store)))
        assert_commitlog_rows([r.asDict() for r in df.collect()], store, where=f"{case} split {split}", config=cfg)
    want = _cli_findings(capsys, store, "--config", conf)
    assert want  # the torn record, the abort file, ...
    got = Counter((r.kind, r.severity, r.file, r.offset) for r in rmqlab.spark.verify(spark, store, config=cfg).collect())
    assert got == want


def test_a_directory_of_the_log_named_twice_is_refused(spark, tmp_path):
    from rmqlab.errors import StoreLayoutError
    from rmqlab.spark.commitlog_source import plan_splits

    store, _ = multi_path(tmp_path)
    with pytest.raises(StoreLayoutError, match="same name"):
        plan_splits(str(store), 1 << 20, (), [str(store / "commitlog")])
    with pytest.raises(StoreLayoutError, match="no such file"):
        plan_splits(str(store), 1 << 20, (), [str(tmp_path / "nowhere")])


@pytest.fixture(scope="module")
def rocketmq():
    """The RocketMQ oracle (tests/oracle/harness.py), to write stores of these layouts."""
    from tests.oracle.harness import Oracle, build_or_skip

    with Oracle(build_or_skip(), threads=2) as rmq:
        yield rmq


@pytest.fixture(scope="module")
def dledger(rocketmq, tmp_path_factory):
    """A DLedger store RocketMQ wrote, and a copy with an entry's header damaged in the
    middle of the log (the log ends there; the files after it are walked on)."""
    import struct

    from tests.oracle.production import write_dledger_store

    tmp = tmp_path_factory.mktemp("dledger")
    root, config, _ = write_dledger_store(rocketmq, tmp, seed=401, n=300)
    damaged = tmp / "damaged"
    shutil.copytree(root, damaged)
    f = sorted((damaged / "dledger-n0" / "data").iterdir())[4]
    buf = f.read_bytes()
    p = struct.unpack_from(">i", buf, 4)[0]  # the second entry of the file
    with open(f, "r+b") as fh:
        fh.seek(p + 24)
        fh.write(struct.pack(">q", 7))  # its pos field
    return root, damaged, MessageStoreConfig.from_properties(tmp / "broker.conf"), tmp / "broker.conf"


def test_a_dledger_log_reads_as_the_reader_reads_it(spark, dledger, capsys):
    import rmqlab.spark

    root, damaged, cfg, conf = dledger
    for split in ("3000", "16KiB"):
        df = spark.read.format("rocketmq").option("splitSize", split).load(str(root))
        assert_commitlog_rows([r.asDict() for r in df.collect()], root, where=f"dledger split {split}", config=cfg)
    # the data directory itself, and a narrow read
    rows = spark.read.format("rocketmq").option("columns", "physical_offset,topic").load(str(root / "dledger-n0" / "data")).collect()
    assert sorted(r.physical_offset for r in rows) == [r["physical_offset"] for r in commitlog_rows(root, cfg)]
    # damage: FAILFAST names the entry; the default (PERMISSIVE) gives the rows around it and the damage as a row
    with pytest.raises(Exception, match="DLEDGER_ENTRY"):
        spark.read.format("rocketmq").option("mode", "FAILFAST").option("splitSize", "3000").load(str(damaged)).collect()
    lenient = spark.read.format("rocketmq").option("splitSize", "3000").load(str(damaged)).collect()
    bad = [r for r in lenient if r.kind == "DLEDGER_ENTRY"]
    assert len(bad) == 1 and "says pos 7" in bad[0].error
    want = _cli_findings(capsys, damaged, "--config", conf)
    got = Counter((r.kind, r.severity, r.file, r.offset) for r in rmqlab.spark.verify(spark, damaged, config=cfg).collect())
    assert got == want and any(k[0] == "DLEDGER_ENTRY" for k in want) and any(k[0] == "RESYNC" for k in want)


def test_lmq_queues_are_checked_by_spark_verify_as_by_verify(spark, rocketmq, tmp_path, capsys):
    import struct

    import rmqlab.spark
    from tests.oracle.production import write_lmq_store

    root, _, _ = write_lmq_store(rocketmq, tmp_path, seed=503)
    f = sorted((root / "consumequeue" / "%LMQ%room0" / "0").iterdir())[0]
    with open(f, "r+b") as fh:
        fh.seek(20 * 3 + 8)
        fh.write(struct.pack(">i", 5))  # unit 3's size
    cfg = MessageStoreConfig.from_properties(tmp_path / "broker.conf")
    want = _cli_findings(capsys, root, "--config", tmp_path / "broker.conf")
    assert [k[0] for k in want if k[1] == "error"] == ["LMQ_MISMATCH"]
    # a rolled-back transaction named LMQs: it took their offsets and got no unit, and
    # RocketMQ appended the next units where the queues ended (a note, not damage)
    assert {k[0] for k in want if k[1] != "error"} == {"LMQ_OFFSET_SHIFT"}
    got = Counter((r.kind, r.severity, r.file, r.offset) for r in rmqlab.spark.verify(spark, root, config=cfg).collect())
    assert got == want


def test_ext_addresses_are_read_by_the_consumequeue_source_and_spark_verify(spark, rocketmq, tmp_path, capsys):
    import struct

    import rmqlab.spark
    from tests.oracle.production import write_ext_store
    from tests.spark.expected import as_queue_rows, queue_rows

    root, _, _ = write_ext_store(rocketmq, tmp_path, seed=603)
    cfg = MessageStoreConfig.from_properties(tmp_path / "broker.conf")
    rows = as_queue_rows([r.asDict() for r in spark.read.format("rocketmq.consumequeue").load(str(root)).collect()])
    assert rows == queue_rows(root, cfg) and sum(r[6] is not None for r in rows) > 100
    f = sorted((root / "consumequeue_ext" / "TopicA" / "2").iterdir())[0]
    with open(f, "r+b") as fh:
        fh.seek(2)
        fh.write(struct.pack(">q", 4242))  # the first unit's tagsCode
    want = _cli_findings(capsys, root, "--config", tmp_path / "broker.conf")
    assert [k[0] for k in want] == ["CQ_MISMATCH"]
    got = Counter((r.kind, r.severity, r.file, r.offset) for r in rmqlab.spark.verify(spark, root, config=cfg).collect())
    assert got == want


def test_rocksdb_queues_are_refused_by_the_spark_jobs_not_read_as_none(spark, tmp_path):
    """storeType=defaultRocksDB: the consume-queue source and spark.verify read queue
    files; on a store whose queues are RocksDB's they say so instead of answering with
    no rows (rmqlab verify, one process, reads RocksDB: tests/store/test_layouts.py)."""
    pytest.importorskip("rocksdict")
    import rmqlab.spark
    from tests.layouts import rocksdb_consume_queue

    store = rocksdb_consume_queue(tmp_path)
    with pytest.raises(Exception, match="consume queues are in RocksDB"):
        spark.read.format("rocketmq.consumequeue").load(str(store)).collect()
    with pytest.raises(Exception, match=r"RocksDB .*run rmqlab verify"):
        rmqlab.spark.verify(spark, store)
