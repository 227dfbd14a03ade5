"""Fixtures for the Spark data sources and the bulk decoder.

The one SparkSession for the whole run is ``tests/conftest.py``'s ``spark`` (the
oracle's tests use it too); tests that need it are marked ``@pytest.mark.spark`` and are
skipped when pyspark or Java is missing (:func:`_require_spark_and_java`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import REFERENCE

# commitlogs without damage (crash-cqdeleted lost a consume queue, not log bytes)
UNDAMAGED = ["clean", "crash", "v2ipv6", "crash-cqdeleted"]
DAMAGED = ["crash-torn"]
ALL_CASES = UNDAMAGED + DAMAGED


def store_root(case: str) -> Path:
    return REFERENCE / case / "store"


def _java_ok() -> bool:
    java = shutil.which("java") or (os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else None)
    if not java:
        return False
    try:
        return subprocess.run([java, "-version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _require_spark_and_java() -> None:
    """Skip without pyspark or Java; in CI (and with RMQLAB_REQUIRE_SPARK=1) fail
    instead: a green suite that skipped Spark would not be green."""
    required = bool(os.environ.get("CI") or os.environ.get("RMQLAB_REQUIRE_SPARK"))
    try:
        import pyspark  # noqa: F401
    except ImportError:
        if required:
            pytest.fail("pyspark is not installed (pip install -e '.[spark]')")
        pytest.skip("pyspark is not installed")
    if not _java_ok():
        message = "Spark needs Java 17: install it or set JAVA_HOME (see rmqlab.spark docs)"
        if required:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def s3():
    """A local S3-compatible server holding reference stores (see object_storage)."""
    pytest.importorskip("moto", reason="moto[server] is not installed (pip install -e '.[dev]')")
    from tests.spark.object_storage import S3Server

    server = S3Server(("clean", "crash-torn"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """A standalone master and two one-core workers on 127.0.0.1 (tests/spark/cluster.py);
    everything it started is stopped at the end of the run."""
    _require_spark_and_java()
    from tests.spark.cluster import StandaloneCluster

    c = StandaloneCluster(tmp_path_factory.mktemp("cluster"))
    yield c
    c.stop()
    assert not c.alive()
