"""Spark for the lessons: a local session whose Python workers run this kernel's
Python (so they import the same rmqlab), with rmqlab's data sources registered.

Not a widget, but notebook support: a lesson cell must not need a ``def``, and Spark
needs ``PYSPARK_PYTHON`` set before the session starts.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path


def local_spark(cores: int = 2, app: str = "rmqlab-lesson", *, shuffle_partitions: int = 4, jvm_log: str | os.PathLike | None = None):
    """``SparkSession`` on ``local[cores]`` with the ``rocketmq*`` formats registered.

    Sets ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` to this interpreter (the
    workers must import rmqlab from the same environment), turns the web UI off and
    keeps shuffles small: the lesson stores are megabytes, not terabytes.  Needs
    Java 17 or 21 (see :mod:`rmqlab.spark`).  The JVM's own output goes to
    ``jvm_log`` (default: ``spark-jvm.log`` in the lessons' scratch directory).
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # PySpark 4.0 warns on every pandas conversion that pandas 3 is not fully
    # supported; the lessons convert a few small tables, so the warning is noise
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from pyspark.sql import SparkSession

    import rmqlab.spark

    # The JVM (and the Python workers it starts) inherit this process's stdout and
    # stderr.  In a notebook those are the kernel's captured descriptors, so the JVM's
    # log lines would land in whichever cell runs when they arrive.  Start it with
    # both pointing at a log file instead; ours are restored right after.
    with _jvm_output_to(jvm_log):
        spark = (
            SparkSession.builder.master(f"local[{cores}]")
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")  # no progress bars in cell outputs
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
            .config("spark.driver.memory", "1g")
            .config("spark.python.worker.reuse", "true")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
    spark.sparkContext.setLogLevel("ERROR")
    rmqlab.spark.register(spark)
    return spark


@contextlib.contextmanager
def _jvm_output_to(path):
    """Point file descriptors 1 and 2 at ``path`` while a child process starts."""
    if path is None:
        from .base import scratch_dir

        path = scratch_dir("spark-jvm") / "spark-jvm.log"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError):
            pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield path
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (*saved, fd):
            os.close(f)
