"""The sources where captures really live: a standalone cluster (two one-core workers),
a job submitted with ``spark-submit`` shipping rmqlab as a packed environment, Spark
Connect, and S3 read by executors that have no AWS variables of their own.

Each job is a separate driver program (``jobs/read_sources.py``, one SparkContext per
process); it writes every DataFrame as Parquet and the test compares the rows with
what the single-process reader returns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.spark.conftest import store_root
from tests.spark.expected import as_index_rows, as_queue_rows, assert_commitlog_rows, index_rows, queue_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = Path(__file__).with_name("jobs") / "read_sources.py"
SPLITS = ("16KiB", "64KiB")  # records straddle 16 KiB splits too; the small splits run locally (test_sources)


def _run(argv: list[str], out: Path, env: dict | None = None, timeout: int = 300, cwd: Path | None = None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)
    if done.returncode:
        # the cause, not the JVM's stack: Python's traceback and the lines naming errors
        lines = [ln for ln in (done.stdout + done.stderr).splitlines() if not ln.lstrip().startswith(("at ", "... ")) and " INFO " not in ln]
        pytest.fail(f"job failed ({done.returncode}):\n" + "\n".join(lines)[-8000:])
    return json.loads((out / "job.json").read_text())


def _rows(path: Path) -> list[dict]:
    rows = pq.read_table(path).to_pylist()
    for r in rows:
        if isinstance(r.get("properties"), list):
            r["properties"] = dict(r["properties"])
    return rows


def _check(out: Path, case: str, splits=SPLITS, name: str | None = None) -> None:
    """The job's rows of the store it read as ``name`` (default ``case``) are the
    single-process reader's of reference store ``case``."""
    root, name = store_root(case), name or case
    for split in splits:
        assert_commitlog_rows(_rows(out / name / f"rocketmq-{split}"), root, where=f"{name} {split}")
    assert as_queue_rows(_rows(out / name / "rocketmq.consumequeue")) == queue_rows(root)
    assert as_index_rows(_rows(out / name / "rocketmq.index")) == index_rows(root)


def _splits(splits=SPLITS) -> list[str]:
    return [a for s in splits for a in ("--split", s)]


def test_a_packed_environment_job_reads_files_and_s3_and_verifies_on_a_standalone_cluster(cluster, s3, tmp_path):
    """As the documentation (docs/howto/spark.md) tells cluster users: pack a venv, ship
    it with --archives, point the workers' Python at it, and submit from a directory
    where ``env`` is that environment too (Python data sources plan the read in a Python
    worker on the driver, with the same ``./env/bin/python``).  The executors import
    rmqlab from the archive and run their workers with the settings local_spark gives.

    One job (a driver and its executors cost more than the reads): the damaged store at
    both splits from local files and from S3, and rmqlab.spark.verify of it (the clean
    store's reads are test_sources', in one process: nothing of them is the cluster's).  The executors have no AWS variables (the cluster was
    started without them); the driver's reach them inside the splits.  (Settings given
    as options are resolved on the driver into the same split field:
    tests/spark/test_object_storage.py reads with them.)"""
    from tests.spark.cluster import packed_environment, spark_home, unpacked

    from rmqlab.spark.session import WORKER_SETTINGS

    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rmqlab-tests"
    env_tar = packed_environment(cache)
    (tmp_path / "env").symlink_to(unpacked(env_tar))
    # the worker settings too, as the documentation's recipe gives them: the executors' daemon is
    # then rmqlab.spark.daemon, imported from the archive
    settings = [arg for key, value in WORKER_SETTINGS.items() for arg in ("--conf", f"{key}={value}")]
    torn = store_root("crash-torn").resolve()
    argv = [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.url, "--archives", f"{env_tar}#env",
            "--conf", "spark.pyspark.python=./env/bin/python", "--conf", f"spark.pyspark.driver.python={sys.executable}",
            "--conf", "spark.executor.cores=1", "--conf", "spark.ui.enabled=false", *settings,
            str(JOB), "--out", str(tmp_path), "--store", f"crash-torn={torn}",
            "--store", f"s3={s3.uri('crash-torn')}", *_splits(), "--verify", f"crash-torn={torn}"]
    job = _run(argv, tmp_path, env={"PYSPARK_PYTHON": "./env/bin/python", "PYSPARK_DRIVER_PYTHON": sys.executable, **s3.env()}, cwd=tmp_path)
    _check(tmp_path, "crash-torn")
    _check(tmp_path, "crash-torn", name="s3")
    assert job["counts"]["s3/rocketmq-64KiB"] == len(pq.read_table(tmp_path / "s3" / "rocketmq-64KiB")) > 0
    # rmqlab.spark.verify on the cluster: the findings of rmqlab verify --json
    cli = subprocess.run([sys.executable, "-m", "rmqlab", "verify", "--json", str(torn)], capture_output=True, text=True)
    want = Counter((f["kind"], f["severity"], f["file"], f["offset"]) for f in json.loads(cli.stdout)["findings"])
    got = Counter((r["kind"], r["severity"], r["file"], r["offset"]) for r in _rows(tmp_path / "crash-torn" / "verify"))
    assert got == want
    # the work ran on the workers (executors log under their work dirs), with rmqlab from the archive
    assert all(any((cluster.workdir / f"worker-{i}").rglob("stderr")) for i in range(cluster.workers))
    assert job["rmqlab_on_executors"] and all("/env/lib/" in p and str(Path.cwd()) not in p for p in job["rmqlab_on_executors"]), job
    assert all(Path(p).parts[-5:-3] != ("main", "rmqlab") for p in job["rmqlab_on_executors"])
    assert job["daemon_gc"] == ["CollectThenFreeze"], job


def test_spark_connect_on_the_cluster(cluster, tmp_path):
    """The damaged store at the small split (the sources' rows at both splits on both
    stores: the packed-environment job) through a Connect server."""
    url = cluster.connect_server()
    try:
        _run([sys.executable, str(JOB), "--remote", url, "--out", str(tmp_path), "--store", f"crash-torn={store_root('crash-torn').resolve()}",
              *_splits(SPLITS[:1])], tmp_path)
    finally:
        cluster.stop_one("connect")  # its application holds the workers' cores
    _check(tmp_path, "crash-torn", SPLITS[:1])
