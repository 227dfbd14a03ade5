"""The sources on object storage: reference stores uploaded to a local S3-compatible
server (:mod:`tests.spark.object_storage`) read as from local files, by ranged reads,
with one clear error naming the object when it cannot be read."""

from __future__ import annotations

import time

import pytest

from tests.spark.conftest import store_root
from tests.spark.expected import as_index_rows, as_queue_rows, assert_commitlog_rows, index_rows, queue_rows
from tests.spark.object_storage import DENIED_BUCKET, free_port

pytestmark = pytest.mark.spark


def _read(spark, fmt, uri, **options):
    return [r.asDict() for r in spark.read.format(fmt).options(**options).load(uri).collect()]


@pytest.mark.parametrize("case", ["clean", "crash-torn"])
def test_every_source_reads_s3_as_local_files(spark, s3, case):
    opts = s3.options()
    uri = s3.uri(case)
    for split in ("16KiB", "1MiB"):
        rows = _read(spark, "rocketmq", uri, mode="lenient", splitSize=split, **opts)
        assert_commitlog_rows(rows, store_root(case), where=f"{case} {split}")
        assert all(r["file"].startswith(f"s3://captures/{case}/store/commitlog/") for r in rows)
    assert as_queue_rows(_read(spark, "rocketmq.consumequeue", uri, **opts)) == queue_rows(store_root(case))
    assert as_index_rows(_read(spark, "rocketmq.index", uri, splitEntries="100", **opts)) == index_rows(store_root(case))


def test_reads_are_ranged_each_byte_once(spark, s3):
    """With a split per file, each commitlog byte is served once, by range requests;
    smaller splits read only a little past their end (not each a whole file)."""
    opts, uri, size = s3.options(), s3.uri("clean"), s3.store_bytes["clean"]
    s3.served.reset()
    spark.read.format("rocketmq").options(columns="topic,total_size", **opts).load(uri).count()
    assert s3.served.gets > 0 and s3.served.ranged == s3.served.gets
    assert s3.served.bytes == size["commitlog"]
    s3.served.reset()
    n_files = spark.read.format("rocketmq").options(columns="file", splitSize="16KiB", **opts).load(uri).select("file").distinct().count()
    whole_file_per_split = 4 * size["commitlog"]  # 4 splits of each 64 KiB file
    assert size["commitlog"] < s3.served.bytes < whole_file_per_split and n_files == 6
    print(f"\nS3 bytes served for the clean store's commitlog: 1 split per file {size['commitlog']} B (1.00x), "
          f"16 KiB splits {s3.served.bytes} B ({s3.served.bytes / size['commitlog']:.2f}x; a whole file per split would be 4.00x)")
    s3.served.reset()
    spark.read.format("rocketmq.consumequeue").options(**opts).load(uri).count()
    assert s3.served.bytes == size["consumequeue"]


def _error(spark, fmt, uri, **options) -> str:
    t = time.monotonic()
    with pytest.raises(Exception) as exc:
        spark.read.format(fmt).options(**options).load(uri).count()
    assert time.monotonic() - t < 120  # bounded: a wrong endpoint gives up, it does not hang
    return str(exc.value)


@pytest.mark.parametrize("fmt", ["rocketmq", "rocketmq.consumequeue", "rocketmq.index"])
def test_a_missing_object_a_denied_bucket_and_a_wrong_endpoint_are_named(spark, s3, fmt):
    text = _error(spark, fmt, "s3://captures/nope/store", **s3.options())
    assert "s3://captures/nope/store" in text and "no such file or directory" in text
    text = _error(spark, fmt, s3.uri("clean", DENIED_BUCKET), **s3.options())
    assert f"s3://{DENIED_BUCKET}/clean/store" in text and "ACCESS_DENIED" in text
    text = _error(spark, fmt, s3.uri("clean"), **s3.options(**{"fs.s3.endpoint": f"127.0.0.1:{free_port()}"}))
    assert "s3://captures/clean/store" in text and "cannot read it" in text


def test_credentials_that_do_not_go_together_are_refused(spark, s3):
    text = _error(spark, "rocketmq", s3.uri("clean"), **s3.options(**{"fs.s3.secretKey": None}))
    assert "fs.s3.accessKey and fs.s3.secretKey go together" in text
