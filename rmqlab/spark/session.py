"""A local SparkSession whose Python workers run this interpreter (so they import the
same rmqlab), with rmqlab's data sources registered: what the lessons, the tests and
the scan benchmark start Spark with.  ``PYSPARK_PYTHON`` must be set before the
session starts, which is why this is a function and not a line in each caller.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path


#: how a session's executors run their Python workers: static settings (given when the
#: session starts, so here and not in rmqlab.spark.register), which local_spark gives and
#: the documentation tells other sessions to give (``--conf``; docs/howto/spark.md).  Each Python task costs Spark
#: 12-28 ms with them on this machine whatever it reads, 70-110 ms without
#: (bench/bench_spark_scaling.py; docs/explanation/spark.md, *Scaling*).
WORKER_SETTINGS = {
    "spark.python.worker.reuse": "true",
    # the JVM and its workers over Unix sockets, not loopback TCP: ~25 ms less a task
    # (20 empty tasks of a Python data source: 1.62 -> 1.11 s on local[1])
    "spark.python.unix.domain.socket.enabled": "true",
    # the workers' daemon imports PySpark from the package, not from pyspark.zip
    # (compiled from source in every process), and freezes what survives its collection
    # after each task (~40 ms a task otherwise): rmqlab.spark.daemon
    "spark.python.daemon.module": "rmqlab.spark.daemon",
}


def require_java() -> None:
    """Refuse, in one line, to start Spark where no Java is to be found (``JAVA_HOME``,
    else ``java`` on ``PATH``): PySpark's gateway would otherwise wait for a JVM that
    never comes and fail after its timeout with a Java-less stack trace.

    >>> require_java()        # nothing where Java is found; else an RmqlabError saying what is missing
    """
    import shutil

    from ..errors import RmqlabError
    from ..version import docs_url

    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return
    if not home and shutil.which("java"):
        return
    where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH and no JAVA_HOME"
    raise RmqlabError(f"Spark needs Java 17 or 21: {where}; install a JDK (apt-get install openjdk-17-jre-headless) or set JAVA_HOME "
                      f"(see {docs_url('troubleshooting.html')})")


def local_spark(
    cores: int = 2,
    app: str = "rmqlab",
    *,
    shuffle_partitions: int = 4,
    driver_memory: str = "1g",
    jvm_log: str | os.PathLike | None = None,
):
    """``SparkSession`` on ``local[cores]`` with the ``rocketmq*`` formats registered.

    Sets ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` to this interpreter (the
    workers must import rmqlab from the same environment), runs the workers as
    :data:`WORKER_SETTINGS` says, turns the web UI off and keeps shuffles small.  Needs
    Java 17 or 21 (see :mod:`rmqlab.spark`).  With ``jvm_log`` the JVM's own output goes
    to that file instead of this process's stdout/stderr (in a notebook those are the
    kernel's, and the JVM's lines would land in whichever cell runs when they arrive).

    >>> from rmqlab.lab.samples import shipped_dir
    >>> from rmqlab.spark.session import local_spark
    >>> spark = local_spark(2)          # the running session, when there is one
    >>> spark.conf.get("spark.sql.session.timeZone")
    'UTC'
    >>> spark.read.format("rocketmq.offsets").load(str(shipped_dir() / "damaged")).where("`group` = 'analytics'").count() > 0
    True
    """
    require_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # PySpark 4.0 warns on every pandas conversion that pandas 3 is not fully
    # supported; the lessons convert a few small tables, so the warning is noise
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from pyspark.sql import SparkSession

    import rmqlab.spark

    # The JVM (and the Python workers it starts) inherit this process's stdout and
    # stderr: start it with both pointing at jvm_log; ours are restored right after.
    with _jvm_output_to(jvm_log) if jvm_log is not None else contextlib.nullcontext():
        spark = (
            SparkSession.builder.master(f"local[{cores}]")
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")  # no progress bars in cell outputs
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
            .config("spark.driver.memory", driver_memory)
            .config("spark.sql.session.timeZone", "UTC")
            .config(map=WORKER_SETTINGS)
            .getOrCreate()
        )
    spark.sparkContext.setLogLevel("ERROR")
    rmqlab.spark.register(spark)
    return spark


@contextlib.contextmanager
def _jvm_output_to(path):
    """Point file descriptors 1 and 2 at ``path`` while a child process starts."""
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
