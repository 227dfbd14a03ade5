"""``rmqlab.spark.report(spark, path, out)`` — ``rmqlab report`` for captures too large
for one machine: the parts that read the whole store run as Spark jobs, the rest on the
driver, and the same HTML (or JSON) is written.

- *Findings*: :func:`rmqlab.spark.verify` (one task per commitlog file, index file and
  group of queues).
- *Timeline*: the ``rocketmq`` source's ``topic`` and ``store_timestamp`` of every message
  record (lenient, as the local pass reads), counted per topic and bucket by Spark; the
  bucket is the one a local :class:`~rmqlab.forensics.timeline.Timeline` widens to
  (:func:`rmqlab.forensics.timeline.width_for`: the capture's span, the cells).
- *Evidence*: each file's SHA-256 computed by a task on the workers.
- On the driver: the store's summary, recovery's dry run (it reads from its start file
  on), the consumers; the map when the log is at most
  :data:`rmqlab.render.storemap.INLINE_MAP_BYTES` (past that the part says so:
  ``rmqlab map`` draws it in one more pass).

``path`` must be a directory every worker can read (local disk on ``local[N]``, a shared
mount on a cluster), as for :func:`rmqlab.spark.verify`.  Read-only.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..forensics.timeline import TOPICS_TRACKED, WIDTHS, Timeline, width_for
from ..forensics.verify import Finding, VerifyReport
from ..report import StoreReport, build_report
from ..report.parts import store_files

#: files hashed per task
FILES_PER_TASK = 16


def _digests(rows):
    """mapInPandas: each ``path`` (absolute) with its SHA-256."""
    from ..report.parts import digest

    for frame in rows:
        frame["sha256"] = [digest(Path(p)) for p in frame["path"]]
        yield frame[["rel", "sha256"]]


def _timeline(spark, root: str, flushed_ms: int | None) -> Timeline:
    from pyspark.sql import functions as F

    from .commitlog_source import CommitLogDataSource

    spark.dataSource.register(CommitLogDataSource)
    # the whole capture, the cut too, as the local report's timeline reads it
    records = (spark.read.format("rocketmq").option("mode", "lenient").option("verifyCrc", "false").option("includeBody", "false").option("pastEnd", "true")
               .option("columns", "topic,store_timestamp,kind").load(root).where(F.col("kind") == "MESSAGE").select("topic", "store_timestamp"))
    # one pass for each topic's count, first and last store time and records after the
    # flush, a second for the buckets (their width follows from the span the first found)
    after = F.col("store_timestamp") > F.lit(flushed_ms) if flushed_ms else F.lit(False)
    topics = records.groupBy("topic").agg(F.count("*").alias("n"), F.min("store_timestamp").alias("lo"), F.max("store_timestamp").alias("hi"),
                                          F.sum(after.cast("long")).alias("late")).collect()
    per_topic = {r["topic"]: r["n"] for r in topics}
    if not topics:
        return Timeline.from_counts(WIDTHS[0], {}, {}, {}, first_ms=None, last_ms=None, flushed_ms=flushed_ms)
    lo, hi = min(r["lo"] for r in topics), max(r["hi"] for r in topics)
    rows = min(len(per_topic), TOPICS_TRACKED + 1)
    width = width_for(lo, hi, rows)
    bucket = F.col("store_timestamp") - F.col("store_timestamp") % F.lit(width)
    cells = {(r["topic"], r["b"]): r["count"] for r in records.groupBy("topic", bucket.alias("b")).count().collect()}
    late = {r["topic"]: r["late"] for r in topics if r["late"]}
    return Timeline.from_counts(width, cells, per_topic, late, first_ms=lo, last_ms=hi, flushed_ms=flushed_ms)


def report(spark, path, out=None, *, config=None, rocketmq_version: str | None = None, format: str | None = None) -> StoreReport:
    """The report of the store at ``path`` built with Spark, written to ``out`` when given
    (HTML, or JSON when ``format="json"`` or the name ends in ``.json``); returns the
    :class:`~rmqlab.report.StoreReport`::

        import rmqlab.spark
        rmqlab.spark.report(spark, "/mnt/captures/broker-a/store", "/mnt/reports/broker-a.html")
    """
    from ..render.storemap import INLINE_MAP_BYTES
    from ..store.layout import commitlog_bytes
    from ..store.reader import StoreReader
    from ..recovery.next_start import log_end
    from .verify_job import verify

    root = os.path.abspath(str(path).removeprefix("file://"))
    found = verify(spark, root, config=config).collect()
    verified = VerifyReport(root, [Finding(r["kind"], r["severity"], r["file"], r["offset"], r["message"]) for r in found])
    # the checkpoint's flush time, as the local build takes it from the store's summary
    try:
        with StoreReader(root, config, strict=False, log_end=lambda: log_end(root, config=config)) as store:
            cp = store.checkpoint()
            flushed = cp.physic_msg_timestamp if cp is not None else None
    except Exception:  # noqa: BLE001 - the report's own summary part says why the store cannot be read
        flushed = None
    timeline = _timeline(spark, root, flushed or None)
    verified.stats = {"records": timeline.records, "computed_by": "Spark"}
    files = [(str(p), str(p.relative_to(root))) for p in store_files(Path(root)) if not p.is_symlink()]
    digests = {}
    if files:
        frame = spark.createDataFrame(files, "path string, rel string").repartition(max(1, len(files) // FILES_PER_TASK))
        digests = {r["rel"]: r["sha256"] for r in frame.mapInPandas(_digests, "rel string, sha256 string").collect()}
    rep = build_report(root, config=config, rocketmq_version=rocketmq_version, verify_report=verified, timeline=timeline, digests=digests,
                       draw_map=commitlog_bytes(root, config) <= INLINE_MAP_BYTES, command=f"rmqlab.spark.report(spark, {str(path)!r})")
    if out is not None:
        rep.write(out, format)
    return rep
