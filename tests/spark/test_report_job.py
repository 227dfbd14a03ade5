"""``rmqlab.spark.report`` states what ``rmqlab report`` states of the same store: the
verdict, the findings by kind, the timeline per topic and minute, every file's digest."""

from __future__ import annotations

import json

import pytest

from rmqlab.report import SECTIONS, build_report
from tests.spark.conftest import store_root
from tests.support import SAMPLES

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("which", ["crash-torn", "damaged"])
def test_spark_report_states_what_the_local_report_states(spark, tmp_path, which):
    import rmqlab.spark

    root = (store_root(which) if which != "damaged" else SAMPLES / which).resolve()
    out = tmp_path / "report.html"
    got = rmqlab.spark.report(spark, str(root), out)
    want = build_report(root)
    g, w = got.to_dict(), want.to_dict()
    for key in ("clean", "clean_exit", "errors", "warnings", "records_cut", "cut_per_topic", "writer", "unconsumed_lost", "text"):
        assert g["verdict"][key] == w["verdict"][key], key
    assert [(x["kind"], x["severity"], x["count"]) for x in g["findings"]["groups"]] == [(x["kind"], x["severity"], x["count"]) for x in w["findings"]["groups"]]
    for key in ("bucket_ms", "records", "series", "per_topic", "first_store_timestamp", "last_store_timestamp", "crash_window"):
        assert g["timeline"][key] == w["timeline"][key], key
    assert g["evidence"] == w["evidence"]
    assert g["recovery"]["commitlog_end"] == w["recovery"]["commitlog_end"] and g["consumers"] == w["consumers"]
    page = out.read_text()
    assert all(f"<section id='{k}'><h2>{h}</h2>" in page for k, h in SECTIONS) and "could not be read because" not in page
    rmqlab.spark.report(spark, str(root), tmp_path / "report.json")
    assert json.loads((tmp_path / "report.json").read_text())["verdict"] == g["verdict"]
