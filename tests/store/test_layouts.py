"""Every file of a store root is recognised before anything is judged: on stores with
each broker feature's files (built in ``tests/layouts.py`` from RocketMQ's source
layouts), ``info`` names each part and what rmqlab does with it, ``verify`` says "not
checked" instead of reporting damage, ``recover`` refuses to apply where it does not
model RocketMQ's start-up (the dry run says why), the read commands refuse a log they
do not read, and nothing of the input changes."""

from __future__ import annotations

import json
import sys
import shutil
import struct

import pytest

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from rmqlab.forensics.verify import verify_store
from rmqlab.store.layout import DECODED, NOT_CHECKED, READ, UNKNOWN, recognise
from tests.layouts import BUILDERS, batch_consume_queue, consume_queue_ext, lmq_unnamed, multi_path, snapshot
from tests.support import ALL_CASES, REFERENCE

#: what each built store must show in `info` (a kind it recognises), and whether its
#: log is still the root's commitlog/
EXPECTED = {
    "dledger-converted": ("DLedger commitlog", False),
    "extras": ("pop consumer records in RocksDB", True),
}


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", ALL_CASES)
def test_a_store_rocketmq_wrote_is_all_recognised(case):
    lay = recognise(REFERENCE / case / "store")
    assert {p.handling for p in lay.parts} <= {DECODED, READ}, [p.line() for p in lay.parts]
    assert not lay.refusals() and not lay.log_elsewhere and not lay.unchecked_topics


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_info_verify_recover_are_honest_on_each_layout(name, tmp_path, capsys):
    store = BUILDERS[name](tmp_path)
    before = snapshot(store)
    kind, log_here = EXPECTED[name]

    code, out, _ = run(capsys, "info", store, "--json")
    parts = json.loads(out)["layout"]
    assert code == 0 and any(p["kind"].startswith(kind) and p["handling"] == NOT_CHECKED for p in parts), parts

    rep = verify_store(store)
    assert rep.ok, [str(f) for f in rep.errors]
    assert not rep.kinds() & {"CQ_MISMATCH", "CQ_MISSING_QUEUE", "CQ_BEYOND_END", "LAYOUT"}, [str(f) for f in rep.findings]
    assert rep.by_kind("NOT_CHECKED")

    code, out, _ = run(capsys, "recover", store, "--json")
    dry = json.loads(out)
    assert code == 0 and dry["not_modelled"]
    if not log_here:
        assert dry["mode"] == "not modelled" and not dry["queues"] and not dry["deleted_commitlog_files"]
    code, out, err = run(capsys, "dump", store)
    if log_here:
        assert code == 0 and out and not err
    else:
        assert code == 2 and "DLedger" in err and not out  # a log it does not read: refused, not misread
    for part in (p for p in parts if p["handling"] == NOT_CHECKED):  # each part's first file, as raw bytes or a known layout
        first = next((f for f in sorted((store / part["path"]).rglob("*")) if f.is_file() and f.stat().st_size), None) if "*" not in part["path"] else None
        if first is not None:
            code, out, err = run(capsys, "hexdump", first, "--length", "32")
            assert code == 0 and out and "Traceback" not in err, first
    if name != "extras":  # kvStore, brokerIdentity … do not stop a recovery: RocketMQ's store recovery leaves them
        code, _, err = run(capsys, "recover", store, "--out", tmp_path / "out")
        assert code == 2 and "nothing was written" in err and not (tmp_path / "out").exists()
    assert snapshot(store) == before


def test_extras_name_each_part(tmp_path, capsys):
    store = BUILDERS["extras"](tmp_path)
    code, out, _ = run(capsys, "info", store, "--no-scan")
    for path, handling in [("compaction/", DECODED), ("kvStore/", NOT_CHECKED), ("epochFileCheckpoint", NOT_CHECKED), ("brokerIdentity", NOT_CHECKED),
                           ("tiered_index_file/", NOT_CHECKED), ("config/consumerOffsets/", NOT_CHECKED), ("config/subscriptionGroup.json", READ),
                           ("notes.txt", UNKNOWN)]:
        line = next(line for line in out.splitlines() if line.strip().startswith(path))
        assert f": {handling}" in line, line
    refused = {p.path for p in recognise(store).refusals()}
    assert refused == {"epochFileCheckpoint"}  # the compaction store's load is modelled
    from rmqlab.recovery import recover

    rep = recover(store)  # a 1 KiB log file is not compactionMappedFileSize: RocketMQ's load of the queue fails, and changes nothing
    assert rep.load_ok and any("compaction queue TopicA/0: 00000000000000000000 (1024 bytes" in n for n in rep.notes)
    from rmqlab.store.compaction import CompactionStore

    assert CompactionStore(store).positions() == {("TopicA", 0): 10}
    assert not verify_store(store).by_kind("COMPACTION_CQ_MISSING")  # the log is zeros: no unit, nothing to judge


def test_a_single_commitlog_path_in_a_copied_captures_config_is_the_stores_own(tmp_path):
    """A capture copied with its broker.conf names the commitlog where it was: one
    storePathCommitLog is the store's commitlog/ (only several make a spread log)."""
    store = batch_consume_queue(tmp_path)
    conf = tmp_path / "broker.conf"
    conf.write_text("storePathCommitLog=/data/broker-a/store/commitlog\n")
    assert recognise(store, MessageStoreConfig.from_properties(conf)).log_elsewhere is None


def test_ext_addresses_are_read_as_the_tags_codes_they_hold(tmp_path, capsys):
    store = consume_queue_ext(tmp_path)
    rep = verify_store(store)
    assert rep.findings == [] and rep.stats["cq_entries"] == 628 - 2  # (the PREPARED and ROLLBACK records have no unit)
    code, out, _ = run(capsys, "queue", store, "--topic", "TopicA", "--queue-id", "0", "--json")
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and all(r["tags_code"] < -(1 << 62) and "ext_tags_code" in r for r in rows)
    unit = next(f for f in (store / "consumequeue_ext" / "TopicA" / "0").iterdir())
    with open(unit, "r+b") as fh:  # unit 1's tagsCode
        fh.seek(20 + 2)
        fh.write(struct.pack(">q", 7))
    assert [f.kind for f in verify_store(store).findings] == ["CQ_MISMATCH"]
    shutil.rmtree(store / "consumequeue_ext")  # without the ext files the addresses are unreadable
    assert [f.kind for f in verify_store(store).findings] == ["CQ_EXT_MISSING"] * len(list((store / "consumequeue" / "TopicA" / "0").iterdir()))


def test_lmq_units_whose_records_do_not_name_the_queue_are_mismatches(tmp_path):
    store = lmq_unnamed(tmp_path)
    lay = recognise(store)
    assert lay.lmq_topics == ["%LMQ%orders"] and not lay.unchecked_topics
    rep = verify_store(store)
    assert [f.kind for f in rep.findings] == ["LMQ_MISMATCH"] * 10 and rep.stats["lmq_entries"] == 10
    assert all("does not name %LMQ%orders" in f.message for f in rep.findings)


def test_a_batch_queue_built_from_the_layout_is_read_and_checked(tmp_path, capsys):
    """TopicC's queues as batch queues of one-message units (tests/layouts.batch_consume_queue):
    verify finds nothing the file queues did not, the queue and lookup commands read the
    units, nothing is written; recovery gives the batch queues the units the recovered
    file queues of the same store hold (BatchConsumeQueue.recover, truncation, rebuild)."""
    store = batch_consume_queue(tmp_path)
    before = snapshot(store)
    lay = recognise(store)
    assert lay.batch_topics == ["TopicC"] and not lay.unchecked_topics
    rep = verify_store(store)
    mine = {(f.kind, f.severity) for f in rep.findings}
    assert mine <= {(f.kind, f.severity) for f in verify_store(REFERENCE / "crash" / "store").findings} and rep.stats["batch_units"] > 0
    code, out, _ = run(capsys, "queue", store, "--topic", "TopicC", "--queue-id", "0", "--json")
    units = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and units and all(u["batch_size"] == 1 and u["compacted_offset"] == -1 for u in units)
    assert [u["msg_base_offset"] for u in units] == list(range(units[0]["msg_base_offset"], units[0]["msg_base_offset"] + len(units)))
    code, out, err = run(capsys, "lookup", store, "--queue", f"TopicC:0:{units[1]['msg_base_offset']}")
    assert code == 0 and str(units[1]["commitlog_offset"]) in out and "warning" not in err
    from rmqlab.recovery import recover
    from rmqlab.store import open_store

    code, out, err = run(capsys, "recover", store, "--out", tmp_path / "out")
    assert code == 0, err
    assert recover(REFERENCE / "crash" / "store", out=tmp_path / "ref").commitlog_end == recover(tmp_path / "out").commitlog_end
    with open_store(tmp_path / "out") as mine, open_store(tmp_path / "ref") as ref:
        for qid in (1, 0):
            got = [(u.msg_base_offset, u.commitlog_offset, u.size, u.tags_code) for u in mine.consume_queue("TopicC", qid).iter_units()]
            assert got == [(e.queue_offset, e.commitlog_offset, e.size, e.tags_code) for e in ref.consume_queue("TopicC", qid).entries()] and got
    code, out, _ = run(capsys, "hexdump", store / "batchconsumequeue" / "TopicC" / "0" / "00000000000000000000", "--length", 92)
    assert code == 0 and out.count("msgBaseOffset=") == 2 and f"offset={units[1]['commitlog_offset']}" in out
    shutil.rmtree(store / "batchconsumequeue" / "TopicC" / "0")  # a deleted batch queue is named, not misread as a plain one
    assert any(f.kind == "CQ_MISSING_QUEUE" and "batchconsumequeue/TopicC/0" in f.file for f in verify_store(store).findings)
    assert {k: v for k, v in snapshot(store).items() if "TopicC/0" not in k} == {k: v for k, v in before.items() if "TopicC/0" not in k}


def test_rocksdb_queues_read_as_the_file_queues_they_were_built_from(tmp_path, capsys):
    """A RocksDB consume queue built from the crash reference store's file queues (see
    tests/layouts.rocksdb_consume_queue): every queue answers as the file queue did,
    verify finds nothing the file queues did not, nothing is written, recovery plans
    (a dry run reading RocksDB's progress), and a recovered copy serves what the file
    queues' recovered copy serves."""
    pytest.importorskip("rocksdict")
    from rmqlab import lookup
    from rmqlab.store import open_store
    from tests.layouts import rocksdb_consume_queue

    store = rocksdb_consume_queue(tmp_path)
    before = snapshot(store)
    files = REFERENCE / "crash" / "store"
    with open_store(store) as rdb, open_store(files) as ref:
        assert rdb.layout.rocksdb_queues and [str(q) for q in rdb.queue_ids()] == [str(q) for q in ref.queue_ids()]
        for qid in ref.queue_ids():
            a, b = rdb.consume_queue(qid.topic, qid.queue_id), ref.consume_queue(qid.topic, qid.queue_id)
            assert a.valid_range() == b.valid_range() and a.entries() == b.entries(), qid
            times = [ref.commitlog.read(e.commitlog_offset).store_timestamp for e in b.entries()]
            for t in {0, min(times) - 1, min(times), times[len(times) // 2], max(times), max(times) + 1}:
                for boundary in ("LOWER", "UPPER"):
                    assert lookup.offset_by_time(rdb, qid.topic, qid.queue_id, t, boundary) == lookup.offset_by_time(ref, qid.topic, qid.queue_id, t, boundary), (qid, t, boundary)
    mine = {(f.kind, f.severity) for f in verify_store(store).findings}
    theirs = {(f.kind, f.severity) for f in verify_store(files).findings}
    assert mine <= theirs, mine - theirs
    code, out, _ = run(capsys, "queue", store, "--topic", "TopicA", "--queue-id", "0")
    assert code == 0 and "RocksDB in" in out
    code, out, _ = run(capsys, "recover", store)
    assert code == 0 and "no plan" not in out and "NOT APPLICABLE" not in out and "RocksDB's max physical offset" in out
    from rmqlab.recovery import recover

    assert recover(store).commitlog_end == recover(files).commitlog_end  # the same log, the same end
    code, _, _ = run(capsys, "recover", store, "--out", tmp_path / "out")
    assert code == 0 and not (tmp_path / "out" / "consumequeue" / "rocksdict-config.json").exists()
    recover(files, out=tmp_path / "out-files")
    with open_store(tmp_path / "out") as rdb, open_store(tmp_path / "out-files") as ref:  # recovered alike
        assert [str(q) for q in rdb.queue_ids()] == [str(q) for q in ref.queue_ids()]
        for qid in ref.queue_ids():
            a, b = rdb.consume_queue(qid.topic, qid.queue_id), ref.consume_queue(qid.topic, qid.queue_id)
            assert a.valid_range() == b.valid_range() and a.entries() == b.entries(), qid
    assert snapshot(store) == before


def test_a_rocksdb_directory_rocksdb_cannot_open_is_one_error(tmp_path, capsys):
    """RocksDB's files named but not RocksDB's bytes: one line naming the directory."""
    pytest.importorskip("rocksdict")
    from tests.layouts import rocksdb_consume_queue

    store = rocksdb_consume_queue(tmp_path)
    for p in (store / "consumequeue").iterdir():
        if p.name.startswith("MANIFEST-"):
            p.write_bytes(b"\x00" * 64)
    before = snapshot(store)
    why = f"{store / 'consumequeue'}: RocksDB cannot open this consume queue read-only"
    code, out, err = run(capsys, "queue", store, "--topic", "TopicA", "--queue-id", "0")
    assert code == 2 and why in err and not out
    code, out, _ = run(capsys, "verify", store)  # the log and index are still checked
    assert code == 1 and f"LAYOUT                 {why}" in out and "records=640" in out
    code, out, _ = run(capsys, "info", store)
    assert code == 0 and f"problem: {why}" in out
    assert snapshot(store) == before


def test_a_store_converted_to_dledger_is_refused_by_read_commands(tmp_path, capsys):
    store = BUILDERS["dledger-converted"](tmp_path)
    code, out, _ = run(capsys, "recover", store)
    assert code == 0 and "deletes" not in out and "DLedger" in out
    for argv in (["dump", store], ["queue", store, "--topic", "TopicA", "--queue-id", "0"], ["lookup", store, "--topic", "TopicA", "--key", "shared"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and "DLedger" in err and out == "", argv


def test_several_commitlog_directories_from_config_are_one_log(tmp_path, capsys):
    """Read, verified and recovered as the one log MultiPathMappedFileQueue.load makes of
    them: the same answers as the reference store's single directory."""
    store, conf = multi_path(tmp_path)
    lay = recognise(store, MessageStoreConfig.from_properties(conf))
    assert lay.log_elsewhere is None and len(lay.commitlog_dirs) == 2
    assert any(p.kind.startswith("commitlog directory") and p.handling == "decoded" for p in lay.parts)
    code, out, _ = run(capsys, "verify", store, "--config", conf, "--json")
    assert code == 0 and json.loads(out)["findings"] == [] and json.loads(out)["stats"]["records"] == 628
    code, spread, _ = run(capsys, "dump", store, "--config", conf, "--json")
    code2, one, _ = run(capsys, "dump", (REFERENCE / "clean" / "store"), "--json")
    assert code == code2 == 0 and spread.count("\n") == 628 and spread.replace(str(store), "") == one.replace(str((REFERENCE / "clean" / "store")), "")
    code, out, _ = run(capsys, "recover", store, "--config", conf, "--out", tmp_path / "out")
    assert code == 0 and sorted(p.name for p in (tmp_path / "out" / "commitlog").iterdir()) == sorted(p.name for p in ((REFERENCE / "clean" / "store") / "commitlog").iterdir())
    assert "gathered" in out
    code, spread, _ = run(capsys, "salvage", store, "--commitlog-dir", tmp_path / "disk2" / "commitlog", "--all")
    code2, one, _ = run(capsys, "salvage", REFERENCE / "clean" / "store", "--all")
    assert code == code2 == 0 and spread.count("\n") == 628
    assert [json.loads(x)["physical_offset"] for x in spread.splitlines()] == [json.loads(x)["physical_offset"] for x in one.splitlines()]


@pytest.fixture
def delayed(tmp_path):
    """The crash store holds one delayed record, in SCHEDULE_TOPIC_XXXX queue 2 (delay
    level 3: ScheduleMessageService.delayLevel2QueueId)."""
    from tests.support import copy_store

    store = copy_store("crash", tmp_path)
    (store / "config").mkdir()
    return store


def _delay_file(store, table: str) -> None:
    # ScheduleMessageService.encode through fastjson: Integer keys unquoted
    (store / "config" / "delayOffset.json").write_text('{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":0},"offsetTable":{%s}}' % table)


@pytest.mark.parametrize("table, kind, pending", [
    ("3:0", None, 1),            # nothing delivered yet: the one delayed message is pending
    ("3:1", None, 0),            # delivered
    ("3:5", "DELAY_OFFSET_BEYOND", 0),  # delivered past the queue's end: the queue lost what was delivered
    ("3:1,40:2", "DELAY_LEVEL_UNKNOWN", 0),  # messageDelayLevel has 18 levels
])
def test_delay_offsets_against_the_schedule_queues(delayed, table, kind, pending):
    _delay_file(delayed, table)
    rep = verify_store(delayed)
    found = {f.kind for f in rep.findings if f.kind.startswith("DELAY")}
    assert found == ({kind} if kind else set())
    assert rep.stats["delayed_pending"] == pending


def test_a_torn_delay_offset_file_falls_back_to_bak_or_stops_the_broker(delayed):
    _delay_file(delayed, "3:0")
    path = delayed / "config" / "delayOffset.json"
    path.write_text(path.read_text()[:40])
    rep = verify_store(delayed)
    assert [f.severity for f in rep.by_kind("DELAY_OFFSET_FILE")] == ["error"]
    (delayed / "config" / "delayOffset.json.bak").write_text('{"offsetTable":{3:1}}')
    rep = verify_store(delayed)
    assert rep.ok and rep.stats["delayed_pending"] == 0
    assert any("RocketMQ loads delayOffset.json.bak" in f.message for f in rep.by_kind("DELAY_OFFSET_FILE"))


def test_without_the_rocksdb_binding_rocksdb_queues_are_not_checked_not_damaged(tmp_path, capsys, monkeypatch):
    """rmqlab[rocksdb] not installed: the queues are a note saying how to install it,
    the log and index are still checked, a command that needs a queue says so."""
    pytest.importorskip("rocksdict")
    from tests.layouts import rocksdb_consume_queue

    store = rocksdb_consume_queue(tmp_path)
    monkeypatch.setitem(sys.modules, "rocksdict", None)  # import rocksdict now raises ImportError
    rep = verify_store(store)
    notes = [f for f in rep.findings if f.kind == "NOT_CHECKED" and "rmqlab[rocksdb]" in f.message]
    assert rep.ok and len(notes) == 1 and rep.stats["records"] == 640
    code, _, err = run(capsys, "queue", store, "--topic", "TopicA", "--queue-id", "0")
    assert code == 2 and "pip install 'rmqlab[rocksdb]'" in err
