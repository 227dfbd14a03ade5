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
CASES = ["clean", "killed", "timers", "window-clean", "window-killed"]


def _json(case: str, name: str):
    return json.loads((RUST / case / name).read_text())


@pytest.mark.parametrize("case", CASES)
def test_the_writer_is_told_from_the_bytes(case):
    reading = tell_release(RUST / case / "store")
    assert reading.candidates == ("rocketmq-rust:1.0.0",) and reading.writer == "rocketmq-rust"
    assert any("pid=" in e for e in reading.evidence)
    if case == "timers":
        assert any("v2 timer layout" in e for e in reading.evidence)
    if not case.endswith("killed"):  # a clean exit leaves byte 40 at the log's end, where no record starts
        assert any("byte 40" in e for e in reading.evidence)


@pytest.mark.parametrize("case", UNDAMAGED)
def test_java_stores_are_not_taken_for_rust(case):
    assert tell_release(REFERENCE / case / "store").writer == "apache"


@pytest.mark.parametrize("case", CASES)
def test_every_record_reads_as_put(case):
    manifest = _json(case, "manifest.json")["messages"]
    with open_store(RUST / case / "store") as store:
        got = {r.physical_offset: r for r in store.commitlog.iter_records()}
    for put in manifest:
        rec = got.pop(put["physicalOffset"])
        jp = rec.java_properties
        assert (rec.physical_offset, rec.total_size, rec.topic, rec.queue_id, rec.queue_offset, rec.store_timestamp) == (
            put["physicalOffset"], put["size"], put["topic"], put["queueId"], put["queueOffset"], put["storeTimestamp"])
        assert (jp.get("UNIQ_KEY"), jp.get("KEYS"), jp.get("TAGS"), len(rec.body)) == (put["uniqKey"], put["keys"], put["tags"], put["bodyLength"])
        assert rec.body_crc_ok
    # the rest: what the timer store put back to a fired timer message's real topic
    fired = {m["uniqKey"]: m for m in manifest if m.get("timerOutMs")}
    for rec in got.values():
        m = fired[rec.java_properties["UNIQ_KEY"]]
        assert (rec.topic, rec.queue_id) == (m["realTopic"], m["realQueueId"])
    assert bool(got) == (case == "timers")


@pytest.mark.parametrize("case", CASES)
def test_lookups_answer_as_rocketmq_rust_does(case, tmp_path):
    """Every query rocketmq-rust answered after its own start on a copy: typed U (its
    query by unique key) and untyped (topic#key, also what a Java broker looks up), KEYS
    tokens and shared keys — asked of rmqlab's recovery of the store by rocketmq-rust's
    rules.  After a crash it drops the newest index file and indexes again only while
    each record starts where the last one ended (window-killed: up to its first file
    boundary); the recovered copy must answer the same."""
    answers = _json(case, "rust-read.json")["answers"]
    uniq_type = release(tell_release(RUST / case / "store").candidates[0]).uniq_index_type
    assert uniq_type == "U#"
    rep = recover(RUST / case / "store", out=tmp_path / "recovered")
    if case == "window-killed":  # its re-indexing stops at the first commitlog file boundary it crosses
        assert rep.index_stops_at is not None and rep.index_stops_at % (16 * 1024) == 0 and rep.index_unfindable > 0
    else:
        assert rep.index_stops_at is None
    with open_store(tmp_path / "recovered") as store:
        for a in answers:
            q = a["query"]
            res = lk.query_by_key(store, q["topic"], q["key"], 64, index_type=q.get("indexType"), uniq_type=uniq_type)
            assert sorted(r.physical_offset for r in res.records) == a["physicalOffsets"], q
    typed = [a for a in answers if a["query"].get("indexType") == "U"]
    untyped_uniq = [a for a in answers if "indexType" not in a["query"] and any(t["query"]["key"] == a["query"]["key"] for t in typed)]
    assert typed and all(len(a["physicalOffsets"]) <= 1 for a in typed) and any(a["physicalOffsets"] for a in typed)
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
    with open_store(RUST / case / "store") as store:
        uniq = sum(1 for r in store.commitlog.iter_records() if "UNIQ_KEY" in r.java_properties)
    assert kinds["INDEX_UNIQ_FORM"].count == uniq >= len(_json(case, "manifest.json")["messages"])
    assert kinds["INDEX_UNIQ_FORM"].file.startswith(str(RUST / case / "store" / "index"))
    assert kinds["LOCK_CONTENT"].offset == 0
    assert ("CHECKPOINT_BYTE_40" in kinds) == (not case.endswith("killed"))
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


WINDOW = ["window-clean", "window-killed"]


def _damaged(case: str, edits: list[dict], tmp_path: Path) -> Path:
    """A copy of ``case``'s store with ``damaged.json``'s byte edits applied."""
    from scripts.rocketmq_rust_stores import apply_edits

    copy = tmp_path / "store"
    shutil.copytree(RUST / case / "store", copy)
    apply_edits(copy, edits)
    return copy


def _ends_as(rust: dict, store_root: Path, tmp_path: Path, **kw):
    rep = recover(store_root, **kw)
    assert rep.commitlog_end == rust["maxPhyOffset"]
    copy = tmp_path / "recovered"
    recover(store_root, out=copy, **kw)
    with open_store(copy) as store:
        for q in rust["queues"]:
            cq = store.consume_queue(q["topic"], q["queueId"])
            assert cq.valid_range(store.commitlog.min_offset) == (q["minOffset"], q["maxOffset"]), q
    return rep


@pytest.mark.parametrize("case", WINDOW)
def test_a_log_longer_than_the_recovery_window_recovers_as_rocketmq_rust_does(case, tmp_path):
    files = sorted((RUST / case / "store" / "commitlog").iterdir())
    assert len(files) > 35  # the window (maxRecoveryCommitLogFiles, 30) and a damage 35 files back fit
    rep = _ends_as(_json(case, "rust-read.json"), RUST / case / "store", tmp_path)
    assert rep.release == "rocketmq-rust:1.0.0"


@pytest.mark.parametrize("case", WINDOW)
@pytest.mark.parametrize("damage", [0, 1], ids=["inside", "before"])
def test_damage_inside_and_before_the_recovery_window_ends_as_in_rocketmq_rust(case, damage, tmp_path):
    """Damage 20 files before the last (inside rocketmq-rust's 30-file window) and 35
    before it (outside), rocketmq-rust itself started on each copy the judge.  Clean: a
    record's body byte flipped — its optimized walk steps over the rest of that file and
    goes on, the log is not cut.  Killed, its abnormal start 30 files before the last: a
    consume queue zeroed from one record's unit on — refilled when the record lies inside
    the window (dispatched again), left short when before it."""
    d = _json(case, "damaged.json")[damage]
    assert d["rust"]["loaded"]
    # the fixtures' rocketmq-rust ran with check_crc_on_recover: true (scripts/rocketmq-rust-writer's
    # store_config), not its default: rmqlab is told the same
    rep = _ends_as(d["rust"], _damaged(case, d["edits"], tmp_path), tmp_path, check_crc=True)
    inside = "inside" in d["what"]
    if case == "window-clean":
        assert [k.physical_offset for k in rep.skipped] == ([d["record"]] if inside else [])
    else:
        full = {(q["topic"], q["queueId"]): q["maxOffset"] for q in _json(case, "rust-read.json")["queues"]}
        topic, qid, unit = d["queue"]
        got = {(q["topic"], q["queueId"]): q["maxOffset"] for q in d["rust"]["queues"]}[topic, qid]
        assert (got == full[topic, qid]) == inside and got >= unit


def test_rocketmq_rust_checks_no_body_crc_on_recovery_unless_told(tmp_path):
    """rocketmq-rust 1.0.0's MessageStoreConfig::default has check_crc_on_recover false
    (config/message_store_config.rs): a flipped body byte ends nothing and cuts nothing
    where the config does not say otherwise; told to check (as the fixtures' writer ran),
    its walk steps over the rest of that file."""
    from rmqlab.config import MessageStoreConfig

    d = _json("window-clean", "damaged.json")[0]
    copy = _damaged("window-clean", d["edits"], tmp_path)
    default = recover(copy)
    assert default.skipped == [] and default.records_lost == 0 and default.records_checked_crc == 0
    told = recover(copy, config=MessageStoreConfig.from_mapping({"checkCRCOnRecover": "true", "mappedFileSizeCommitLog": "16384"}))
    assert [k.physical_offset for k in told.skipped] == [d["record"]] and told.records_checked_crc > 0


def test_the_window_decides_what_rocketmq_rust_recovers(tmp_path):
    """The same killed-store damage inside the window, under Java 5.3.3's start (the file
    the checkpoint matches: the last) is not refilled: the 30 files back are rust's rule."""
    d = _json("window-killed", "damaged.json")[0]
    assert "inside" in d["what"]
    copy = _damaged("window-killed", d["edits"], tmp_path)
    java = recover(copy, rocketmq_version="5.3.3")
    rust = recover(copy)
    assert java.start_file > rust.start_file
    name = "{}/{}".format(*d["queue"][:2])
    assert name in {q.queue for q in rust.queues if q.added_entries}
    assert name not in {q.queue for q in java.queues if q.added_entries}


def test_rust_timer_store_reads_as_rocketmq_rust_loads_it():
    """The v2 timer files decode and check clean (every CRC-32C, the policy hash each
    checkpoint copy repeats), the checkpoint is the one rocketmq-rust recovered, and each
    wheel slot rocketmq-rust answers for a timer message's time is the slot rmqlab reads
    from the pages of the generation the journal names."""
    from rmqlab.store.timer import TimerStore
    from rmqlab.store.timer_v2 import RustTimerStore

    read = _json("timers", "rust-read.json")
    timer = TimerStore.of(RUST / "timers" / "store")
    assert isinstance(timer, RustTimerStore) and timer.problems() == []
    cp, want = timer.checkpoint(), read["timerCheckpoint"]
    assert (cp["last_timer_log_flush_pos"], cp["last_timer_queue_offset"]) == (want["lastTimerLogFlushPos"], want["lastTimerQueueOffset"])
    assert cp["last_read_time_ms"] <= want["lastReadTimeMs"]  # rocketmq-rust resumes no earlier than now − the wheel's window
    slots = {int(s["time_ms"]): s for s in timer.slots()}
    answered = [q for q in read["timerSlots"] if q["slot"]]
    assert answered
    for q in answered:
        s, w = slots[q["slot"]["timeMs"]], q["slot"]
        assert (int(s["first_pos"]), int(s["last_pos"]), int(s["num"])) == (w["firstPos"], w["lastPos"], w["num"]), q
    units, end = timer.units()
    assert len(units) and not end.torn
    assert sum(q["slot"]["num"] for q in answered if q["slot"]["timeMs"] >= cp["last_read_time_ms"]) <= len(units)


def test_rust_timers_list_what_was_put():
    """Every timer message put is listed: those due two seconds after the first put
    fired before the shutdown, those hours ahead are pending in the wheel."""
    from rmqlab.store.timer import FIRED, PENDING, timer_messages

    put = {m["physicalOffset"]: m for m in _json("timers", "manifest.json")["messages"] if m.get("timerOutMs")}
    with open_store(RUST / "timers" / "store") as store:
        got = {m.physical_offset: m for m in timer_messages(store)}
    assert set(got) == set(put)
    first = min(m["storeTimestamp"] for m in put.values())
    for off, m in put.items():
        assert got[off].deliver_ms == m["timerOutMs"] and got[off].real_topic == m["realTopic"]
        assert got[off].state == (FIRED if m["timerOutMs"] < first + 60_000 else PENDING), m


@pytest.mark.parametrize("where,what", [
    ("timer-v2/FORMAT", "TIMER_STORE"),
    ("config/timercheck.a", "TIMER_CHECK"),
    ("timerwheel.v2/pages", "TIMER_WHEEL"),
    ("timerlog/v2/log", "TIMER_LOG_TORN"),
])
def test_damage_to_the_rust_timer_files_is_found_where_it_is(where, what, tmp_path):
    """One byte flipped in each v2 file: verify names the file and the offset, as
    rocketmq-rust's load refuses (FORMAT, both checkpoint copies), rebuilds (a wheel page)
    or cuts (the active timer-log segment) it."""
    from rmqlab.store.timer_v2 import RustTimerStore

    copy = tmp_path / "store"
    shutil.copytree(RUST / "timers" / "store", copy)
    timer = RustTimerStore(copy)
    if where == "timerwheel.v2/pages":
        s = timer.slots()[0]
        path, at = timer.slot_location(int(s["index"]))
        at -= at % int(timer.fingerprint["page_size"])  # the page's header
        at += 20
    elif where == "timerlog/v2/log":
        units, _ = timer.units()
        path, at = timer.locate(int(units["position"][len(units) // 2]))
        at += 40
    elif where == "config/timercheck.a":
        path, at = str(copy / "config" / "timercheck.a"), 30
        for other in ("timercheck.b",):
            p = copy / "config" / other
            b = bytearray(p.read_bytes())
            b[30] ^= 0xFF
            p.write_bytes(bytes(b))
    else:
        path, at = str(copy / where), 12
    b = bytearray(Path(path).read_bytes())
    b[at] ^= 0xFF
    Path(path).write_bytes(bytes(b))
    rep = verify_store(copy)
    found = [f for f in rep.findings if f.kind == what]
    assert found, [f.kind for f in rep.findings]
    assert Path(found[0].file).name in (Path(path).name, "config")


def test_rust_timer_files_are_listed_as_decoded():
    parts = {p.path: p for p in recognise(RUST / "timers" / "store").parts}
    for name in ("timerlog/", "timer-v2/", "timerwheel.v2/", "config/timercheck", "config/timercheck.a", "config/timer-role.meta"):
        assert parts[name].handling == "decoded" and "rocketmq-rust" in parts[name].kind, name


def _damage_cases():
    for case in ("clean", "killed"):
        for i, d in enumerate(_json(case, "damaged.json")):
            yield pytest.param(case, i, id=f"{case}-{d['name']}")


@pytest.mark.parametrize("case, damage", list(_damage_cases()))
def test_damaged_copies_recover_as_rocketmq_rust_recovers_them(case, damage, tmp_path):
    """The clean and killed stores damaged (scripts/rocketmq_rust_stores.py DAMAGES: a body
    byte flipped in the newest and in the oldest file, a zeroed page, the abort file
    deleted, and with it the unit of the log's last record zeroed), rocketmq-rust itself
    started on each copy under its default settings the judge: rmqlab's recovery, as
    rocketmq-rust's (no body CRC check unless configured; the record at exactly the
    queues' max physical offset dispatched again), ends the log and every queue where it
    does, and the commands serve what it leaves."""
    d = _json(case, "damaged.json")[damage]
    assert d["rust"]["loaded"]
    root = _damaged(case, d["edits"], tmp_path)
    rep = _ends_as(d["rust"], root, tmp_path)
    assert rep.release == "rocketmq-rust:1.0.0"
    if d["name"] == "boundary":
        # the record at the queues' max physical offset: rocketmq-rust's reput takes it, Java's would not
        full = {(q["topic"], q["queueId"]): q["maxOffset"] for q in _json(case, "rust-read.json")["queues"]}
        assert {(q["topic"], q["queueId"]): q["maxOffset"] for q in d["rust"]["queues"]} == full
        java = recover(root, rocketmq_version="5.3.3")
        assert sum(q.added_entries for q in rep.queues) == 1 and sum(q.added_entries for q in java.queues) == 0
    # before any recovery, the damaged store is read as that start leaves it (rmqlab.open_store):
    # each queue's range is rocketmq-rust's, its units past the end kept where it keeps them,
    # but for those the start dispatches again
    import rmqlab

    added = {q.queue: q.added_entries for q in rep.queues}
    with rmqlab.open_store(root) as store:
        for q in d["rust"]["queues"]:
            lo, hi, _ = lk.served_range(store, q["topic"], q["queueId"])
            assert (lo, hi + added.get(f"{q['topic']}/{q['queueId']}", 0)) == (q["minOffset"], q["maxOffset"]), q
    from tests.forensics.test_one_story import agree

    agree(root)
