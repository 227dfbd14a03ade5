"""Stores written by rocketmq-rust (crates.io rocketmq-store 1.0.0), read as it reads them.

The fixtures under tests/stores/rocketmq-rust/ come from scripts/rocketmq_rust_stores.py:
``manifest.json`` says what was put and what rocketmq-rust's put answered,
``rust-read.json`` what rocketmq-rust itself read back when started again on a copy
(its own load and recovery: the log's offsets, each queue's range, and its
``query_message`` answers to ``queries.json``).  rmqlab must agree with both.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rmqlab import lookup as lk
from rmqlab.forensics.conformance import conformance
from rmqlab.forensics.verify import verify_store
from rmqlab.recovery.recover import recover
from rmqlab.releases import release
from rmqlab.store.layout import recognise
from rmqlab.store.reader import open_store
from rmqlab.store.release import tell_release
from tests.support import REFERENCE, UNDAMAGED

RUST = Path(__file__).resolve().parents[1] / "stores" / "rocketmq-rust"
CASES = ["clean", "killed", "timers"]


def _json(case: str, name: str):
    return json.loads((RUST / case / name).read_text())


@pytest.mark.parametrize("case", CASES)
def test_the_writer_is_told_from_the_bytes(case):
    reading = tell_release(RUST / case / "store")
    assert reading.candidates == ("rocketmq-rust:1.0.0",) and reading.writer == "rocketmq-rust"
    assert any("pid=" in e for e in reading.evidence)
    if case == "timers":
        assert any("v2 timer layout" in e for e in reading.evidence)
    if case != "killed":  # a clean exit leaves byte 40 at the log's end, where no record starts
        assert any("byte 40" in e for e in reading.evidence)


@pytest.mark.parametrize("case", UNDAMAGED)
def test_java_stores_are_not_taken_for_rust(case):
    assert tell_release(REFERENCE / case / "store").writer == "apache"


@pytest.mark.parametrize("case", CASES)
def test_every_record_reads_as_put(case):
    manifest = _json(case, "manifest.json")["messages"]
    with open_store(RUST / case / "store") as store:
        got = list(store.commitlog.iter_records())
    assert len(got) == len(manifest)
    for rec, put in zip(got, manifest):
        jp = rec.java_properties
        assert (rec.physical_offset, rec.total_size, rec.topic, rec.queue_id, rec.queue_offset, rec.store_timestamp) == (
            put["physicalOffset"], put["size"], put["topic"], put["queueId"], put["queueOffset"], put["storeTimestamp"])
        assert (jp.get("UNIQ_KEY"), jp.get("KEYS"), jp.get("TAGS"), len(rec.body)) == (put["uniqKey"], put["keys"], put["tags"], put["bodyLength"])
        assert rec.body_crc_ok


@pytest.mark.parametrize("case", CASES)
def test_lookups_answer_as_rocketmq_rust_does(case):
    """Every query rocketmq-rust answered: typed U (its query by unique key) and untyped
    (topic#key, also what a Java broker looks up), KEYS tokens and shared keys."""
    answers = _json(case, "rust-read.json")["answers"]
    uniq_type = release(tell_release(RUST / case / "store").candidates[0]).uniq_index_type
    assert uniq_type == "U#"
    with open_store(RUST / case / "store") as store:
        for a in answers:
            q = a["query"]
            res = lk.query_by_key(store, q["topic"], q["key"], 64, index_type=q.get("indexType"), uniq_type=uniq_type)
            assert sorted(r.physical_offset for r in res.records) == a["physicalOffsets"], q
    typed = [a for a in answers if a["query"].get("indexType") == "U"]
    untyped_uniq = [a for a in answers if "indexType" not in a["query"] and any(t["query"]["key"] == a["query"]["key"] for t in typed)]
    assert typed and all(len(a["physicalOffsets"]) == 1 for a in typed)
    assert untyped_uniq and all(a["physicalOffsets"] == [] for a in untyped_uniq)  # Java's form finds nothing


@pytest.mark.parametrize("case", ["clean", "timers"])
def test_verify_by_rocketmq_rust_rules_finds_nothing(case):
    rep = verify_store(RUST / case / "store")
    assert not rep.errors and not [f for f in rep.findings if f.severity == "warning"], rep.to_text()


def test_verify_by_java_rules_names_the_uniq_key_form_not_damage():
    manifest = _json("clean", "manifest.json")["messages"]
    rep = verify_store(RUST / "clean" / "store", rocketmq_version="5.5.1")
    assert not rep.errors, rep.to_text()
    assert rep.stats["index_uniq_form"] == sum(1 for m in manifest if m["uniqKey"])
    assert [f.kind for f in rep.findings].count("INDEX_UNIQ_FORM") == 1


@pytest.mark.parametrize("case", CASES)
def test_conformance_against_java_lists_the_departures(case):
    conf = conformance(RUST / case / "store", "5.5.1")
    kinds = {d.kind: d for d in conf.departures}
    assert kinds["INDEX_UNIQ_FORM"].count == len(_json(case, "manifest.json")["messages"])
    assert kinds["INDEX_UNIQ_FORM"].file.startswith(str(RUST / case / "store" / "index"))
    assert kinds["LOCK_CONTENT"].offset == 0
    assert ("CHECKPOINT_BYTE_40" in kinds) == (case != "killed")
    assert ("TIMER_LAYOUT" in kinds) == (case == "timers")
    assert not conf.conforms


@pytest.mark.parametrize("case", UNDAMAGED)
def test_java_stores_conform_with_the_release_that_wrote_them(case):
    conf = conformance(REFERENCE / case / "store", "5.3.3")
    assert conf.conforms, conf.to_text()


def test_a_sixth_checkpoint_long_departs_from_5_3():
    conf = conformance(RUST / "clean" / "store", "5.3.3")
    d = {x.kind: x for x in conf.departures}["CHECKPOINT_BYTE_40"]
    assert d.offset == 40 and "ignores byte 40" in d.broker


@pytest.mark.parametrize("case", ["clean", "killed"])
def test_recovery_ends_where_rocketmq_rust_does(case, tmp_path):
    """rocketmq-rust started again on a copy: its log end and every queue's range are
    what rmqlab's recovery by rust's rules leaves."""
    read = _json(case, "rust-read.json")
    rep = recover(RUST / case / "store")
    assert rep.release == "rocketmq-rust:1.0.0"
    assert rep.commitlog_end == read["maxPhyOffset"]
    assert rep.mode == ("abnormal" if case == "killed" else "normal")
    copy = tmp_path / "recovered"
    recover(RUST / case / "store", out=copy)
    with open_store(copy) as store:
        for q in read["queues"]:
            cq = store.consume_queue(q["topic"], q["queueId"])
            assert cq.valid_range(store.commitlog.min_offset) == (q["minOffset"], q["maxOffset"]), q


def test_rust_abnormal_start_goes_files_back_from_the_checkpoint(tmp_path):
    """rocketmq-rust's abnormal start (plan_abnormal_recovery_window_from_ranges): the
    newest file whose first record was stored by minTimestamp, then 30 files further
    back — here the first file; Java 5.3.3 starts at the matched file itself."""
    import struct

    copy = tmp_path / "store"
    shutil.copytree(RUST / "killed" / "store", copy)
    manifest = _json("killed", "manifest.json")["messages"]
    late = manifest[-1]["storeTimestamp"] + 10_000  # minTimestamp past every record
    cp = bytearray((copy / "checkpoint").read_bytes())
    cp[0:16] = struct.pack(">qq", late, late)
    (copy / "checkpoint").write_bytes(bytes(cp))
    rust = recover(copy)
    java = recover(copy, rocketmq_version="5.3.3")
    files = sorted(p.name for p in (copy / "commitlog").iterdir())
    assert rust.start_file == files[0] and "30 files before it" in rust.start_reason
    assert java.start_file == files[-1]


def test_rust_timer_files_are_not_called_decoded():
    parts = {p.path: p for p in recognise(RUST / "timers" / "store").parts}
    for name in ("timerlog/", "timer-v2/", "timerwheel.v2/", "config/timercheck", "config/timer-role.meta"):
        assert parts[name].handling == "not checked" and "rocketmq-rust" in parts[name].kind, name
