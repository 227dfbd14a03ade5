"""``spark.readStream.format("rocketmq")`` on a log being written by rmqlab's engine:
micro-batches within maxRecordsPerTrigger, every record exactly once across a restart
from the checkpoint and while a writer appends across file rolls; data lost to clean-up
or to a restart's recovery fails the query (failOnDataLoss) or is gone past with a
warning; object storage refused with the reason."""

from __future__ import annotations

import threading

import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.engine import Message, MessageStore

pytestmark = pytest.mark.spark

CFG = MessageStoreConfig.from_mapping({"mappedFileSizeCommitLog": str(64 << 10)})
COLUMNS = "physical_offset,topic,properties,crc_ok"


def _put(root, lo, hi):
    with MessageStore.open(root, CFG) as st:
        for i in range(lo, hi):
            st.put(Message("T%d" % (i % 2), b"m%d-" % i + b"q" * (i % 300), {"seq": str(i)}, queue_id=i % 3))


def _query(spark, root, out, **options):
    import rmqlab.spark

    rmqlab.spark.register(spark)
    r = spark.readStream.format("rocketmq").option("columns", COLUMNS)
    for k, v in options.items():
        r = r.option(k, str(v))
    df = r.load(str(root))
    return (df.writeStream.format("parquet").option("path", str(out / "data")).option("checkpointLocation", str(out / "checkpoint"))
            .trigger(processingTime="100 milliseconds").start())


def _seqs(spark, out) -> list[int]:
    rows = spark.read.parquet(str(out / "data")).collect()
    return sorted(int(r.properties["seq"]) for r in rows)


def _run_all(q):
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    return q


def test_every_record_once_across_a_restart_and_a_live_writer(spark, tmp_path):
    root, out = tmp_path / "s", tmp_path / "out"
    _put(root, 0, 200)
    q = _run_all(_query(spark, root, out, startingOffsets="earliest", maxRecordsPerTrigger=70))
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 200 and max(sizes) <= 70 and len(sizes) >= 3
    assert _seqs(spark, out) == list(range(200))
    # the query restarted from its checkpoint while a writer appends (file rolls included)
    writer = threading.Thread(target=_put, args=(root, 200, 1200))
    q = _query(spark, root, out, startingOffsets="earliest")
    writer.start()
    writer.join()
    _run_all(q)
    assert _seqs(spark, out) == list(range(1200))  # each once
    assert len(list((root / "commitlog").iterdir())) >= 4  # files rolled while it read


def test_records_deleted_before_they_were_read(spark, tmp_path):
    root = tmp_path / "s"
    _put(root, 0, 600)
    files = sorted((root / "commitlog").iterdir())
    files[0].unlink()
    q = _query(spark, root, tmp_path / "fail", startingOffsets="0")
    with pytest.raises(Exception, match="deleted before they were read"):
        _run_all(q)
    _run_all(_query(spark, root, tmp_path / "on", startingOffsets="0", failOnDataLoss="false"))
    seqs = _seqs(spark, tmp_path / "on")
    assert seqs and seqs == list(range(seqs[0], 600)) and seqs[0] > 0


def test_records_read_then_cut_by_a_restart(spark, tmp_path):
    """Read, then the broker killed with its last records lost and restarted (its
    recovery ends the log before them; new puts write over them): the restarted query
    fails saying so; with failOnDataLoss=false it reads the new records from the cut."""
    root, out = tmp_path / "s", tmp_path / "out"
    st = MessageStore.open(root, CFG)
    for i in range(100):
        st.put(Message("T", b"old", {"seq": str(i)}))
    _run_all(_query(spark, root, out, startingOffsets="earliest"))
    st.crash()
    from rmqlab.store import open_store

    with open_store(root, strict=False) as s:
        recs = list(s.commitlog.iter_records())
    cut = recs[95].physical_offset
    with open(root / "commitlog" / f"{0:020d}", "r+b") as fh:
        fh.seek(cut)
        fh.write(bytes(recs[-1].physical_offset + recs[-1].total_size - cut))
    with MessageStore.open(root, CFG) as st2:
        for i in range(100, 110):
            st2.put(Message("T", b"new", {"seq": str(i)}))
    with pytest.raises(Exception, match="no longer in the log"):
        _run_all(_query(spark, root, out))
    _run_all(_query(spark, root, out, failOnDataLoss="false"))
    seqs = _seqs(spark, out)
    assert seqs == list(range(100)) + list(range(100, 110))  # 95..99 read before the cut, then the new ones


def test_object_storage_is_refused_with_the_reason(spark):
    import rmqlab.spark

    rmqlab.spark.register(spark)
    with pytest.raises(Exception, match="object storage holds no file being written"):
        _run_all(spark.readStream.format("rocketmq").load("s3://bucket/store").writeStream.format("console").start())
