"""Shared fixtures: the reference stores written by Apache RocketMQ, and copies of them.
Plain helpers and constants live in :mod:`tests.support`."""

from __future__ import annotations

import pytest

from tests.support import ALL_CASES, copy_store, load_json

#: test files that take minutes (a Spark cluster, every lesson in a browser, the wheel
#: installed in a new environment, Spark jobs, brokers of newer releases, the fault
#: campaign), longest first: run first, so that with `make test`'s workers (pytest-xdist,
#: a file per worker; `--no-loadscope-reorder`, or xdist would order the files by their
#: number of tests and start these last) they overlap the rest of the suite instead of
#: ending it alone
_LONG_FIRST = ("tests/spark/test_cluster.py", "tests/notebooks/test_browser.py", "tests/packaging/test_install.py", "tests/spark/test_verify_job.py",
               "tests/oracle/test_release_5_5.py", "tests/oracle/test_release_5_4.py", "tests/oracle/test_live_broker.py", "tests/oracle/test_rocksdb_message_store.py", "tests/oracle/test_rocksdb_queue.py",
               "tests/oracle/test_release_5_5_1.py", "tests/oracle/test_broker_capture.py", "tests/faults/test_campaign.py", "tests/spark/test_production_layouts.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        return _LONG_FIRST.index(path) if path in _LONG_FIRST else len(_LONG_FIRST)

    items.sort(key=rank)  # stable: the order within a file, and of the other files, stays


@pytest.fixture(scope="session")
def dumps() -> dict[str, dict]:
    """``dump.json`` of every case: what RocketMQ itself read back."""
    return {c: load_json(c, "dump.json") for c in ALL_CASES}


@pytest.fixture(scope="session")
def manifests() -> dict[str, dict]:
    """``manifest.json`` of every case: what was put and what the store answered."""
    return {c: load_json(c, "manifest.json") for c in ALL_CASES}


@pytest.fixture
def store_copy(tmp_path):
    """``store_copy("crash")`` → path of a fresh writable copy of that case's store."""
    return lambda case: copy_store(case, tmp_path)


@pytest.fixture(scope="session")
def ref_records():
    """The records each reference store's put sequence holds (cached per case)."""
    from tests.engine.engine_support import reference_records

    cache: dict[str, list] = {}

    def get(case: str):
        if case not in cache:
            cache[case] = reference_records(case)
        return cache[case]

    return get


@pytest.fixture(params=["bulk", "record by record"])
def decoder_path(request, monkeypatch):
    """The decoder reads a small range record by record and a large one in bulk: a test
    that asks for this fixture runs both ways on the same inputs."""
    from rmqlab.scan import decode

    monkeypatch.setattr(decode, "SMALL_RANGE", -1 if request.param == "bulk" else 1 << 40)
    return request.param


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the whole run (``local[2]``, no UI, few shuffle partitions),
    for tests/spark and the oracle's Spark checks; skipped (or, in CI, failed) without
    pyspark or Java."""
    from tests.spark.conftest import _require_spark_and_java

    _require_spark_and_java()
    from rmqlab.spark.session import local_spark

    session = local_spark(2, "rmqlab-tests", shuffle_partitions=2)
    yield session
    session.stop()
