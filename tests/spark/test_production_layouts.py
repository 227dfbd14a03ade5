"""The Spark sources on production layouts: a log spread over several directories
(``storePathCommitLog``) and a DLedger log give the rows the single-process reader
gives, at several split sizes, and ``rmqlab.spark.verify`` the findings of
``rmqlab verify``."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from tests.layouts import multi_path
from tests.spark.expected import assert_commitlog_rows

pytestmark = pytest.mark.spark


def _cli_findings(capsys, *argv) -> Counter:
    main(["verify", "--json", *map(str, argv)])
    return Counter((f["kind"], f["severity"], f["file"], f["offset"]) for f in json.loads(capsys.readouterr().out)["findings"])


@pytest.mark.parametrize("case", ["clean", "crash-torn"])
def test_a_log_over_two_directories_reads_as_one(spark, tmp_path, capsys, case):
    import rmqlab.spark

    store, conf = multi_path(tmp_path, case)
    cfg = MessageStoreConfig.from_properties(conf)
    other = str(tmp_path / "disk2" / "commitlog")
    for split in ("7000", "64KiB"):
        df = (spark.read.format("rocketmq").option("mode", "lenient").option("splitSize", split)
              .option("commitlogDirs", other).load(str(store)))
        assert_commitlog_rows([r.asDict() for r in df.collect()], store, where=f"{case} split {split}", config=cfg)
    want = _cli_findings(capsys, store, "--config", conf)
    if case == "crash-torn":
        assert want  # the torn record, the abort file, ...
    for split in ("64KiB", "7KiB"):
        got = Counter((r.kind, r.severity, r.file, r.offset) for r in rmqlab.spark.verify(spark, store, config=cfg, splitSize=split).collect())
        assert got == want, split


def test_a_directory_of_the_log_named_twice_is_refused(spark, tmp_path):
    from rmqlab.errors import StoreLayoutError
    from rmqlab.spark.commitlog_source import plan_splits

    store, _ = multi_path(tmp_path)
    with pytest.raises(StoreLayoutError, match="same name"):
        plan_splits(str(store), 1 << 20, (), [str(store / "commitlog")])
    with pytest.raises(StoreLayoutError, match="no such file"):
        plan_splits(str(store), 1 << 20, (), [str(tmp_path / "nowhere")])
