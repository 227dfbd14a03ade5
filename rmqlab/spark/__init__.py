"""Spark data sources for RocketMQ stores (PySpark Python Data Source API, Spark 4).

Nothing is registered at import time; call :func:`register` once per session::

    from pyspark.sql import SparkSession, functions as F
    import rmqlab.spark

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    rmqlab.spark.register(spark)

    log = spark.read.format("rocketmq").load("/data/broker-a/store")
    (log.where("kind = 'MESSAGE'")
        .groupBy("topic")
        .agg(F.count("*"), F.sum("total_size"), F.sum(F.length("body")))
        .show())

    cq  = spark.read.format("rocketmq.consumequeue").load("/data/broker-a/store")
    idx = spark.read.format("rocketmq.index").load("/data/broker-a/store")

The sources (each class docstring is its manual):

* ``rocketmq`` — :class:`~rmqlab.spark.commitlog_source.CommitLogDataSource`: one row
  per CommitLog record; (file, byte range) partitions that resynchronise at their
  start; Arrow batches decoded in bulk by :mod:`rmqlab.scan.decode`.
* ``rocketmq.consumequeue`` — :class:`~rmqlab.spark.consumequeue_source.ConsumeQueueDataSource`.
* ``rocketmq.index`` — :class:`~rmqlab.spark.index_source.IndexDataSource`.
* ``rocketmq.offsets`` — :class:`~rmqlab.spark.offsets_source.OffsetsDataSource`: consumer
  groups' committed offsets and lag per queue.

Paths go through ``pyarrow.fs``: local paths are memory-mapped, ``hdfs://`` and
``s3://`` (and ``file://``) URIs are read by range, so the same code reads a capture
on a laptop and on the shared storage of a cluster.

Performance
-----------
Decoding is vectorised (:mod:`rmqlab.scan.decode`); what costs in Spark is
moving wide rows (``properties`` maps, strings, bodies) from the Python workers into
the JVM.  The Python Data Source API has no column pruning, so say which columns a
scan needs: ``.option("columns", "topic,total_size,body")`` gives a DataFrame of those
columns only and skips building the others — several times faster.  CRCs use
ISA-L (``isal``, a dependency) — ``verifyCrc=false`` skips them.

Running on a cluster
--------------------
The Python workers import rmqlab, so either install the package on every worker (the
same version as on the driver) and point ``spark.pyspark.python`` at it, or ship it
with the job as a packed environment (as rmqlab's own cluster test does)::

    python -m venv --copies rmqlab-env && rmqlab-env/bin/pip install rmqlab 'pandas>=2,<3'
    venv-pack -p rmqlab-env -o rmqlab-env.tar.gz    # gzip: Spark unpacks a plain .tar without file modes
    ln -s "$PWD/rmqlab-env" env                     # the driver plans Python data sources with ./env too
    PYSPARK_PYTHON=./env/bin/python spark-submit --master spark://host:7077 \
        --archives rmqlab-env.tar.gz#env --conf spark.pyspark.python=./env/bin/python \
        --conf spark.pyspark.driver.python=$(which python) my_scan.py /shared/store

where ``my_scan.py`` calls ``rmqlab.spark.register(spark)`` and reads with
``spark.read.format("rocketmq")``.  Give the job the worker settings of
:data:`rmqlab.spark.session.WORKER_SETTINGS` as ``--conf`` too: without them each
Python task costs Spark several times more (how much: the Spark explanation page, *Scaling*).  The store must be on storage every worker can
read: the same mount everywhere, HDFS (pyarrow needs ``libhdfs``/``HADOOP_HOME``), or
S3.  ``splitSize`` (default 256MiB) sets the partitions: a 1 GiB commitlog file
makes 4 tasks.  A log spread over several directories (``storePathCommitLog``) is
read with ``.option("commitlogDirs", "/d2/commitlog,/d3/commitlog")``; a DLedger
store's data files are split like commitlog files (each split owns the entries that
start in it).

Spark Connect works the same (``SparkSession.builder.remote("sc://host:15002")``,
``pip install 'rmqlab[connect]'`` on the client); the server's ``PYSPARK_PYTHON`` must
import rmqlab, since it plans the reads.

S3: the options ``fs.s3.endpoint`` (``host:port``), ``fs.s3.region``, ``fs.s3.scheme``,
``fs.s3.accessKey``, ``fs.s3.secretKey``, ``fs.s3.sessionToken`` — each not given is
taken from the driver's ``AWS_*`` variables — are resolved on the driver and carried
by every split to the executors (see :mod:`rmqlab.spark._paths`), so executors need
no credentials of their own; without any setting, pyarrow reads each executor's own
environment (``spark.executorEnv.AWS_ACCESS_KEY_ID`` and so on, or an instance role).

:func:`verify` runs ``rmqlab verify``'s checks as a Spark job (a DataFrame of findings);
:func:`export` writes the records as a Parquet dataset from the workers (``rmqlab export``).

Java 17
-------
PySpark 4 starts a JVM and needs Java 17 (or 21).  Check with ``java -version``;
``JAVA_HOME`` must point at it when several are installed.  When it is missing:

* Debian/Ubuntu: ``sudo apt-get install -y openjdk-17-jre-headless``, then
  ``export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64`` (``-arm64`` on ARM);
* macOS: ``brew install openjdk@17`` and follow brew's ``JAVA_HOME`` hint;
* no root: unpack a Temurin 17 JRE anywhere and set ``JAVA_HOME`` and ``PATH``;
* conda: ``conda install -c conda-forge openjdk=17``.

Without Java, everything except Spark still works: the single-process decoder
(:func:`rmqlab.scan.decode.decode_file`) gives the same rows as Arrow tables,
and ``rmqlab dump --json`` gives them as JSON.  The Spark tests skip without Java,
except in CI (``CI`` or ``RMQLAB_REQUIRE_SPARK`` set), where they fail instead.
"""

from __future__ import annotations

from ..errors import require_extra

require_extra(("pyspark", "pandas"), "spark", "rmqlab.spark")

__all__ = ["register", "verify", "export", "report", "SOURCES"]

#: format name → "module:class"
SOURCES = {
    "rocketmq": "rmqlab.spark.commitlog_source:CommitLogDataSource",
    "rocketmq.consumequeue": "rmqlab.spark.consumequeue_source:ConsumeQueueDataSource",
    "rocketmq.index": "rmqlab.spark.index_source:IndexDataSource",
    "rocketmq.offsets": "rmqlab.spark.offsets_source:OffsetsDataSource",
}


def register(spark) -> list[str]:
    """Register the formats of :data:`SOURCES` with ``spark`` (a SparkSession) and turn on
    ``spark.sql.python.filterPushdown.enabled`` (a query's WHERE clause then reaches the
    sources, which read only what can match); returns their names.

    ``spark`` here and below is a SparkSession (:func:`rmqlab.spark.session.local_spark`
    starts a local one with the formats registered):

    >>> import rmqlab.spark
    >>> from rmqlab.lab.samples import shipped_dir
    >>> rmqlab.spark.register(spark)
    ['rocketmq', 'rocketmq.consumequeue', 'rocketmq.index', 'rocketmq.offsets']
    >>> log = spark.read.format("rocketmq").load(str(shipped_dir() / "clean"))
    >>> [(r.topic, r["count"]) for r in log.where("kind = 'MESSAGE'").groupBy("topic").count().orderBy("topic").collect()]
    [('Audit', 138), ('Orders', 501), ('Payments', 265)]
    """
    import importlib

    # the sources take the filters of a query that can cut their work (pushFilters,
    # Spark ≥ 4.1): off by default in Spark
    try:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    except Exception:  # Spark Connect sessions refusing a static conf, older Sparks: the sources still work
        pass
    names = []
    for name, target in SOURCES.items():
        module, cls = target.split(":")
        source = getattr(importlib.import_module(module), cls)
        spark.dataSource.register(source)
        names.append(name)
    return names


def verify(spark, path, *, config=None):
    """``rmqlab verify`` as a Spark job: a DataFrame of findings (columns ``kind``,
    ``severity``, ``file``, ``offset``, ``message``: ``rmqlab verify --json``'s).
    ``path``: a store root every worker can read (local, a shared mount, ``hdfs://``,
    ``s3://``).

    >>> import rmqlab.spark
    >>> from rmqlab.lab.samples import shipped_dir
    >>> findings = rmqlab.spark.verify(spark, str(shipped_dir() / "damaged"))
    >>> findings.where("severity = 'error'").count()
    55
    >>> first = findings.where("kind = 'BODY_CRC'").orderBy("offset").first()
    >>> first.file.rsplit("/", 1)[-1], first.offset
    ('00000000000000262144', 1506)
    """
    from .verify_job import verify as run

    return run(spark, path, config=config)


def report(spark, path, out=None, **options):
    """``rmqlab report`` with Spark's jobs for the parts that read the whole store: the
    same :class:`~rmqlab.report.StoreReport`, written to ``out`` when given (HTML, or
    JSON when ``format="json"`` or the name ends in ``.json``); ``config`` and
    ``rocketmq_version`` as for :func:`rmqlab.report.build_report`.

    >>> import tempfile
    >>> import rmqlab.spark
    >>> from rmqlab.lab.samples import shipped_dir
    >>> r = rmqlab.spark.report(spark, str(shipped_dir() / "damaged"), f"{tempfile.mkdtemp()}/report.html")
    >>> r.sections["verdict"]["records_cut"], r.sections["verdict"]["cause"]["kind"]
    (52, 'BODY_CRC')
    """
    from .report_job import report as run

    return run(spark, path, out, **options)


def export(spark, store, out, **options):
    """``rmqlab export`` as a Spark job: the store's records as a Parquet dataset in
    ``out``, written by the workers (the dataset's layout: :mod:`rmqlab.scan.export`);
    returns the run and its notes.  Options: ``mode`` (``strict``: the run fails on the
    first damage in the log, as ``rmqlab export`` does, once every split has been read;
    ``lenient``), ``include_body``, ``verify_crc``,
    ``split_size``.  The store and ``out`` must be paths every worker sees alike.

    >>> import tempfile
    >>> import rmqlab.spark
    >>> from rmqlab.lab.samples import shipped_dir
    >>> damaged = str(shipped_dir() / "damaged")
    >>> run, notes = rmqlab.spark.export(spark, damaged, f"{tempfile.mkdtemp()}/out", mode="lenient")
    >>> run.end, sum(rows for _, rows in run.files)       # up to the end of the log the next start gives
    (263650, 852)
    >>> rmqlab.spark.export(spark, damaged, f"{tempfile.mkdtemp()}/out")
    Traceback (most recent call last):
    rmqlab.errors.RmqlabError: .../00000000000000131072 @ offset 6602 (0x19ca): BODY_CRC: stored CRC does not match the recomputed one (record at physical offset 137674)
    """
    from .export_job import export as run

    return run(spark, store, out, **options)
