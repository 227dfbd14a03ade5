"""The engine's store: layout and state files as RocketMQ's loader expects them,
clean and unclean exits, reopening, lookups, validation, delay, transactions, cleanup."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from rmqlab.config import MessageStoreConfig

from rmqlab.engine import ManualClock, Message, MessageStore, PutMessageStatus
from rmqlab.rules import SCHEDULE_TOPIC
from rmqlab.format.fastjson import parse_fastjson as load_rocketmq_json
from rmqlab.errors import StoreLockedError
from rmqlab.format import commitlog as cl
from rmqlab.format.hashing import java_string_hash
from rmqlab.recovery import recover
from rmqlab.store.reader import open_store

from tests.engine.engine_support import sample_messages, small_config

T0 = 1_795_000_000_000


def _open(root, **kw):
    kw.setdefault("clock", ManualClock(T0, tick_ms=1))
    kw.setdefault("services", False)
    return MessageStore.open(root, kw.pop("config", small_config()), **kw)


def _check_loader_rules(root, cfg):
    """Every rule of the spec a RocketMQ loader checks that can be checked on files."""
    names = sorted(p.name for p in (root / "commitlog").iterdir())
    assert all(len(n) == 20 and n.isdigit() for n in names)
    starts = [int(n) for n in names]
    assert starts == [starts[0] + i * cfg.mapped_file_size_commit_log for i in range(len(starts))]
    assert all((root / "commitlog" / n).stat().st_size == cfg.mapped_file_size_commit_log for n in names)
    for qdir in (root / "consumequeue").glob("*/*"):
        for p in qdir.iterdir():
            assert len(p.name) == 20 and int(p.name) % cfg.mapped_file_size_consume_queue == 0
            assert p.stat().st_size == cfg.mapped_file_size_consume_queue
    for p in (root / "index").iterdir():
        assert len(p.name) == 17 and p.name.isdigit()
        assert p.stat().st_size == 40 + 4 * cfg.max_hash_slot_num + 20 * cfg.max_index_num
    assert (root / "checkpoint").stat().st_size == 4096
    assert (root / "lock").read_bytes() == b"lock"


def test_open_takes_lock_and_writes_abort_with_pid(tmp_path):
    root = tmp_path / "s"
    store = _open(root)
    try:
        assert (root / "abort").read_text() == str(os.getpid())
        assert (root / "abort.bak").read_bytes() == b""  # Java string2File: previous content
        assert (root / "lock").read_bytes() == b"lock"
        # the first commitlog file and the pre-allocated next one exist at full size
        assert sorted(p.name for p in (root / "commitlog").iterdir()) == ["00000000000000000000", "00000000000000065536"]
        with pytest.raises(StoreLockedError):
            MessageStore.open(root, small_config())
        with store.reader() as st:  # closing the reader's descriptor must not drop the lock
            assert st.lock_state() == "held"
        # another process (a broker, another rmqlab) sees byte 0 locked and is refused
        code = textwrap.dedent(f"""
            from rmqlab.engine import MessageStore
            from rmqlab.errors import StoreLockedError
            from rmqlab.store.reader import open_store
            print(open_store({str(root)!r}, strict=False).lock_state())
            try:
                MessageStore.open({str(root)!r})
            except StoreLockedError as e:
                print("refused")
        """)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert out.stdout.split() == ["held", "refused"], out.stderr
    finally:
        store.shutdown()
    assert not (root / "abort").exists()
    assert sorted(p.name for p in (root / "commitlog").iterdir()) == ["00000000000000000000"]  # pre-allocated file gone
    with open_store(root, small_config()) as st:
        assert st.lock_state() == "free"


def test_clean_shutdown_store_reads_back_and_follows_the_rules(tmp_path):
    root = tmp_path / "s"
    cfg = small_config()
    msgs = sample_messages(700)
    with _open(root, config=cfg) as store:
        results = [store.put(m) for m in msgs]
    assert all(r.ok for r in results)
    _check_loader_rules(root, cfg)
    with open_store(root, cfg) as st:
        recs = list(st.commitlog.iter_records())
        assert [r.physical_offset for r in recs] == [r.wrote_offset for r in results]
        assert [r.body for r in recs] == [m.body for m in msgs]
        assert all(r.crc_ok for r in recs)
        assert len(st.commitlog.queue.files) > 2  # rolled: BLANK records closed the files
        blanks = [r for r in st.commitlog.iter_records(include_blank=True) if r.is_blank]
        assert blanks and all(b.physical_offset + b.total_size == (b.physical_offset // cfg.mapped_file_size_commit_log + 1) * cfg.mapped_file_size_commit_log for b in blanks)
        for q in range(4):
            entries = st.consume_queue("TopicA", q).entries()
            mine = [(m, r) for m, r in zip(msgs, results) if m.queue_id == q]
            assert [e.queue_offset for e in entries] == [r.queue_offset for _, r in mine] == list(range(len(mine)))
            assert [e.commitlog_offset for e in entries] == [r.wrote_offset for _, r in mine]
            assert [e.tags_code for e in entries] == [java_string_hash(m.properties["TAGS"]) for m, _ in mine]
        cp = st.checkpoint()
        assert cp.physic_msg_timestamp == results[-1].store_timestamp
        assert cp.logics_msg_timestamp == results[-1].store_timestamp
        assert 0 < cp.index_msg_timestamp <= results[-1].store_timestamp  # a full index file was flushed
        assert not st.abort_exists
    rep = recover(root, config=cfg)  # what RocketMQ would do on start-up: nothing to change
    assert rep.mode == "normal" and rep.commitlog_end == results[-1].wrote_offset + results[-1].wrote_bytes
    assert rep.cut_bytes == 0 and not rep.changed_queues


def test_crash_leaves_abort_and_a_readable_store_then_reopen_continues(tmp_path):
    root = tmp_path / "s"
    cfg = small_config()
    store = _open(root, config=cfg)
    first = [store.put(m) for m in sample_messages(300)]
    store.reput(200)  # 100 records appended but never dispatched: the kill comes first
    store.crash()
    assert (root / "abort").read_text() == str(os.getpid())
    end = first[-1].wrote_offset + first[-1].wrote_bytes
    with open_store(root, cfg, strict=False) as st:
        assert [r.physical_offset for r in st.commitlog.iter_records()] == [r.wrote_offset for r in first]
    rep = recover(root, config=cfg)
    assert rep.mode == "abnormal" and rep.commitlog_end == end and rep.cut_bytes == 0
    # reopening recovers (consume queues rebuilt for the undispatched tail) and appends after
    store = _open(root, config=cfg)
    try:
        assert store.last_exit_ok is False
        assert store.max_phy_offset == end
        more = store.put(Message("TopicA", b"after", {"KEYS": "after-crash"}, queue_id=0))
        assert more.wrote_offset == end and more.queue_offset == 75
        rec = store.get_message("TopicA", 0, 74)
        assert rec.physical_offset == first[296].wrote_offset
        assert [r.physical_offset for r in store.query_message("TopicA", "after-crash").records] == [end]
    finally:
        store.shutdown()


def test_lookups(tmp_path):
    with _open(tmp_path / "s") as store:
        rs = [store.put(m) for m in sample_messages(40)]
        assert store.get_message("TopicA", 1, 2).physical_offset == rs[9].wrote_offset
        found = store.query_message("TopicA", "shared")
        assert sorted(r.physical_offset for r in found.records) == [r.wrote_offset for r in rs]
        assert store.view_message_by_id(rs[5].msg_id).physical_offset == rs[5].wrote_offset
        assert store.get_offset_in_queue_by_time("TopicA", 0, rs[8].store_timestamp) == 2
        assert store.max_offset_in_queue("TopicA", 3) == 10


def test_validation_answers(tmp_path):
    cfg = small_config(max_message_size=1024, auto_message_version_on_topic_len=False)
    with _open(tmp_path / "s", config=cfg) as store:
        assert store.put(Message("bad topic", b"x")).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put(Message("", b"x")).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put(Message("T" * 128, b"x")).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put(Message("T", b"x" * 1025)).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put(Message("T", b"x", {"big": "v" * 40000})).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
        assert store.put(Message("T", b"x" * 1024)).ok
        assert store.max_phy_offset > 0
    assert store.put(Message("T", b"x")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_long_topic_is_v2_and_ipv6_hosts(tmp_path):
    topic = "L" * 150
    with _open(tmp_path / "s", store_host="[::1]:10911") as store:
        r = store.put(Message(topic, b"x", {"TAGS": "a"}, born_host=(bytes(15) + b"\x01", 5000)))
        assert r.ok and len(r.msg_id) == 56
        rec = store.look_message_by_offset(r.wrote_offset)
    assert rec.is_v2 and rec.topic == topic
    assert rec.sys_flag & (cl.FLAG_BORNHOST_V6 | cl.FLAG_STOREHOST_V6) == 0x30


def test_a_topic_longer_than_a_file_name_is_refused_and_a_log_holding_one_fails_to_open_with_its_directory(tmp_path):
    """A topic of more bytes than the filesystem's file names (its queue's directory could
    not be made) is refused before anything is written, alone or as a batch's; one that
    is in the log already (written without the check) fails its dispatch with the
    directory named, not a traceback: the shutdown keeps abort, verify and the next start's
    plan say no queue can be made for it and that RocketMQ's dispatch stops there for every
    queue (a record after it reaches none), and recover and the next open (whose recovery
    would dispatch it again) refuse the store, naming the record's file and offset."""
    from rmqlab.engine import MessageBatch
    from rmqlab.errors import StoreFormatError, StoreLayoutError
    from rmqlab.files.mapped_file_queue import name_max
    from rmqlab.forensics.verify import verify_store
    from rmqlab.recovery import recover
    from rmqlab.report import build_report

    root = tmp_path / "s"
    longest = "T" * name_max(str(tmp_path))
    with _open(root) as store:
        refused = store.put(Message(longest + "T", b"x"))
        assert refused.status is PutMessageStatus.MESSAGE_ILLEGAL and store.max_phy_offset == 0
        assert store.put_batch(MessageBatch.from_messages([Message(longest + "T", b"x")])).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put(Message(longest, b"x")).ok
        store.validator.max_topic_dir = 1 << 20  # as a store written without the check
        store.validator._topics.clear()  # (its verdicts are cached per topic)
        stop = store.put(Message(longest + "T", b"x"))
        assert stop.ok and store.put(Message("B", b"y")).ok
        with pytest.raises(StoreFormatError, match=f"consumequeue/{longest}T/0: cannot"):
            store.shutdown()  # its dispatch
    assert (root / "abort").exists()  # as Java's shutdown of a store that may be wrong: the next start recovers it
    checks = verify_store(root)
    missing = {f.file.rsplit("/", 2)[-2]: f.message for f in checks.findings if f.kind == "CQ_MISSING_QUEUE"}
    assert "none can be made" in missing[longest + "T"] and "recovery rebuilds it" not in missing[longest + "T"]
    assert f"rebuilds it only from its records before {stop.wrote_offset}, where dispatch stops" in missing["B"]
    first = checks.findings[0]  # what stops it, first
    assert first.kind == "CQ_MISSING_QUEUE" and first.file.endswith(f"{longest}T/0") and "dispatch stops for good" in first.message
    dry = recover(root)  # the next start's plan says the same: no directory, no unit, and no unit of B after it
    (queue,) = [q for q in dry.queues if q.queue == f"{longest}T/0"]
    assert queue.unmakeable and queue.added_entries == 0 and "cannot be rebuilt" in dry.to_text()
    assert dry.queue("B/0") is None and (dry.dispatch_stop.physical_offset, dry.dispatch_stop.records) == (stop.wrote_offset, 2)
    assert dry.consequence == checks.outcome == "dispatch stops" and checks.recovery.outcome() == dry.outcome()
    assert any(line.endswith(f"consumequeue/{longest}T/0 mkdir Failed") for line in dry.log_lines)
    verdict = build_report(root, verify_report=checks, draw_map=False).sections["verdict"]
    assert verdict["level"] == "bad" and verdict["text"].startswith(f"Dispatch stops: the broker's next start ends the log at {dry.commitlog_end}")
    with pytest.raises(StoreLayoutError, match="dispatch stops for good at this record"):
        recover(root, out=tmp_path / "copy", config=small_config())
    assert not (tmp_path / "copy").exists()
    with pytest.raises(StoreFormatError, match="commitlog/00000000000000000000 @ offset .*: the next start's dispatch stops for good at this record"):
        _open(root)  # its recovery would dispatch it again


def test_delay_rewrite_and_transactions(tmp_path):
    with _open(tmp_path / "s") as store:
        r = store.put(Message("TopicA", b"later", {"DELAY": "3", "TAGS": "t"}, queue_id=1))
        rec = store.look_message_by_offset(r.wrote_offset)
        assert rec.topic == SCHEDULE_TOPIC and rec.queue_id == 2
        assert rec.java_properties["REAL_TOPIC"] == "TopicA" and rec.java_properties["REAL_QID"] == "1"
        with store.reader() as st:
            (entry,) = st.consume_queue(SCHEDULE_TOPIC, 2).entries()
        assert entry.tags_code == r.store_timestamp + 10_000  # level 3 = 10 s
        prepared = store.put(Message("TopicB", b"p", {"KEYS": "tx"}, sys_flag=cl.TRANSACTION_PREPARED_TYPE))
        rollback = store.put(Message("TopicB", b"r", {"KEYS": "tx"}, sys_flag=cl.TRANSACTION_ROLLBACK_TYPE, prepared_transaction_offset=prepared.wrote_offset))
        commit = store.put(Message("TopicB", b"c", {"KEYS": "tx"}, sys_flag=cl.TRANSACTION_COMMIT_TYPE, prepared_transaction_offset=prepared.wrote_offset))
        assert prepared.queue_offset == 0 and rollback.queue_offset == 0 and commit.queue_offset == 0
        with store.reader() as st:
            assert [e.commitlog_offset for e in st.consume_queue("TopicB", 0).entries()] == [commit.wrote_offset]
        # the rollback is not indexed; prepared and commit are
        assert sorted(x.physical_offset for x in store.query_message("TopicB", "tx").records) == [prepared.wrote_offset, commit.wrote_offset]
    delay = load_rocketmq_json((tmp_path / "s" / "config" / "delayOffset.json").read_text())
    assert delay["offsetTable"] == {"3": 0}


def test_metadata_written_safely(tmp_path):
    root = tmp_path / "s"
    with _open(root) as store:
        store.put(Message("TopicA", b"x", queue_id=3))
        store.metadata.consumer_offsets["TopicA@group"] = {0: 5, 3: 1}
        store.flush()
    text = (root / "config" / "consumerOffset.json").read_text()
    assert '{0:5,3:1}' in text  # fastjson's unquoted Integer keys
    topics = load_rocketmq_json((root / "config" / "topics.json").read_text())["topicConfigTable"]
    assert topics["TopicA"]["writeQueueNums"] == 4 and topics["TopicA"]["perm"] == 6
    assert (root / "config" / "topics.json.bak").exists()  # second persist kept the first
    assert not list((root / "config").glob("*.tmp"))


def test_clean_expired_files(tmp_path):
    root = tmp_path / "s"
    cfg = small_config(file_reserved_time=1)
    clock = ManualClock(T0, tick_ms=1)
    with _open(root, config=cfg, clock=clock) as store:
        rs = [store.put(m) for m in sample_messages(900)]
        files = sorted((root / "commitlog").iterdir())
        old = (T0 - 2 * 3_600_000) / 1000
        for p in files[:2]:
            os.utime(p, (old, old))
        rep = store.clean_expired_files(now_ms=T0)
        assert rep.commitlog_files == [files[0].name, files[1].name]
        assert rep.min_offset == int(files[2].name)
        assert rep.consume_queue_files  # queue files pointing below the new minimum went too
        forced = store.clean_expired_files(now_ms=T0, force=True)
        assert len(store.commitlog.files) == 1  # never the active file
        assert forced.commitlog_files
        # what is left still reads: the queues start at the new minimum
        with store.reader() as st:
            lo, hi = st.consume_queue("TopicA", 0).valid_range(st.commitlog.min_offset)
            assert hi == 225 and lo > 0
            assert st.commitlog.read(rs[-1].wrote_offset).body == sample_messages(900)[-1].body


def test_clean_keeps_files_with_records_not_dispatched_yet(tmp_path):
    """Records appended after clean-up's own reput (another producer, or manual
    dispatch) are read back from the log by the next reput: their files stay, even
    when every file but the active one is to go."""
    root = tmp_path / "s"
    with _open(root, dispatch="manual") as store:
        msgs = sample_messages(900)
        rs = [store.put(m) for m in msgs[:600]]
        store.reput()
        later = [store.put(m) for m in msgs[600:]]
        assert len(store.commitlog.files) >= 3
        holding = {f.file_from_offset for f in store.commitlog.files if f.file_from_offset <= later[0].wrote_offset < f.file_from_offset + f.file_size}
        store.reput = lambda *a, **k: 0  # as if the records came in after clean-up's reput
        rep = store.clean_expired_files(now_ms=T0, force=True)
        del store.reput
        left = {f.file_from_offset for f in store.commitlog.files}
        assert rep.commitlog_files and holding <= left and rep.min_offset <= later[0].wrote_offset
        assert store.reput() == 300  # read back from the files that stayed
        got = store.get_messages("TopicA", 0, later[0].queue_offset, 1)
        assert got[0].body == msgs[600].body
        assert rs[0].wrote_offset < rep.min_offset  # the dispatched older ones did go


def test_manual_dispatch_steps(tmp_path):
    """A notebook can show a record that is in the commitlog but not yet in any queue."""
    with _open(tmp_path / "s", dispatch="manual") as store:
        rs = [store.put(m) for m in sample_messages(3, queues=1)]
        assert store.dispatch_behind == 3
        with StoreReaderOf(store) as st:
            assert st.commitlog.read(rs[2].wrote_offset).queue_offset == 2
            assert not (st.root / "consumequeue").exists()
        assert store.reput(1) == 1 and store.reput_from_offset == rs[1].wrote_offset
        with StoreReaderOf(store) as st:
            assert [e.commitlog_offset for e in st.consume_queue("TopicA", 0).entries()] == [rs[0].wrote_offset]
        assert store.reput() == 2 and store.dispatch_behind == 0


def StoreReaderOf(store):
    """A reader that does not dispatch first (``store.reader()`` would)."""
    return open_store(store.root, store.config)


def test_clean_service_runs_at_delete_when(tmp_path):
    import time as _t

    clock = ManualClock(T0, tick_ms=1)
    hour = _t.localtime(T0 / 1000).tm_hour
    cfg = small_config(file_reserved_time=0, delete_when=f"{(hour + 1) % 24:02d};{hour:02d}")
    with _open(tmp_path / "s", config=cfg, clock=clock) as store:
        for m in sample_messages(700):
            store.put(m)
        n_files = len(store.commitlog.files)
        clock.advance(3_600_000 * 24)  # same hour, a day later: files are older than 0 h
        for p in (tmp_path / "s" / "commitlog").iterdir():
            os.utime(p, (T0 / 1000 - 10, T0 / 1000 - 10))
        store._clean_if_due()
        assert store.last_clean_report.commitlog_files
        assert len(store.commitlog.files) == 1 < n_files


def test_open_rocketmqs_crashed_store_and_continue(store_copy, dumps):
    """A store RocketMQ left after a crash: opening it recovers it as RocketMQ does
    (same end of log), then puts continue its queues."""
    from tests.engine.engine_support import reference_config

    root = store_copy("crash")
    expected_end = dumps["crash"]["recovery"]["commitLogMaxOffsetAfterRecovery"]
    store = MessageStore.open(root, reference_config("crash"), services=False)
    try:
        assert store.last_exit_ok is False
        assert store.recovery_report.mode == "abnormal"
        assert store.max_phy_offset == expected_end
        q = dumps["crash"]["consumeQueues"]["TopicB/1"]
        r = store.put(Message("TopicB", b"after RocketMQ", {"KEYS": "rmqlab-was-here"}, queue_id=1))
        assert r.ok and r.wrote_offset >= expected_end and r.queue_offset == q["maxOffset"]
        assert store.get_message("TopicB", 1, q["maxOffset"]).body == b"after RocketMQ"
        assert store.get_message("TopicB", 1, 0).physical_offset == q["cqUnits"][0]["physicalOffset"]
    finally:
        store.shutdown()


def test_opening_a_crashed_store_scans_its_log_once(store_copy, dumps, monkeypatch):
    """The engine plans recovery once and applies that plan: every commitlog file is
    checked once, not once for a dry run and again for the in-place run."""
    import importlib

    from tests.engine.engine_support import reference_config

    rec = importlib.import_module("rmqlab.recovery.recover")  # the module (the package's name for it is the function)
    scanned: list[int] = []
    real_scan = rec.scan_file

    def counting_scan(buf, **kw):
        scanned.append(len(buf))
        return real_scan(buf, **kw)

    monkeypatch.setattr(rec, "scan_file", counting_scan)
    root = store_copy("crash")
    store = MessageStore.open(root, reference_config("crash"), services=False)
    try:
        assert store.recovery_report.applied == "in-place"
        assert store.max_phy_offset == dumps["crash"]["recovery"]["commitLogMaxOffsetAfterRecovery"]
        assert len(scanned) == len(store.recovery_report.files_scanned) >= 1
    finally:
        store.shutdown()


def test_out_of_range_fields_are_refused_without_a_trace(tmp_path):
    with _open(tmp_path / "s") as store:
        assert store.put(Message("TopicA", b"a", queue_id=0)).ok
        assert store.put(Message("TopicA", b"b", queue_id=0, flag=2**40)).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put(Message("TopicA", b"c", queue_id=-1)).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put(Message("TopicA", b"d", {"x": "y"}, queue_id=0, reconsume_times=2**33, born_host=(b"\x7f\0\0\1", 1))).status is PutMessageStatus.MESSAGE_ILLEGAL
        bad = store.put_batch([Message("TopicA", b"e", queue_id=0), Message("TopicA", b"f", queue_id=0, flag=-(2**40))])
        assert bad.status is PutMessageStatus.MESSAGE_ILLEGAL and "1 messages before it were stored" in bad.reason
        r = store.put(Message("TopicA", b"g", queue_id=0))
        assert r.queue_offset == 2  # no queue offset was lost to the refused puts
        assert [rec.body for rec in store.get_messages("TopicA", 0, 0, 10)] == [b"a", b"e", b"g"]
    with open_store(tmp_path / "s", small_config()) as st:
        recs = list(st.commitlog.iter_records())
        assert [rec.body for rec in recs] == [b"a", b"e", b"g"]
        assert not any(st.commitlog.read_bytes(recs[-1].end_offset, 4096))  # the tail stays zero


@pytest.mark.parametrize("native_put", [False, True])
def test_a_failed_write_names_file_and_offset_and_counts_nothing(tmp_path, native_put):
    """Big bodies go in with pwritev; when the disk refuses (here: a descriptor that is
    not open, EBADF), put and a list batch raise an OSError naming the commitlog file
    and offset, give the queue offset back, and the store carries on."""
    big = b"x" * 5000
    with _open(tmp_path / "s", native_put=native_put) as store:
        assert store.put(Message("TopicA", b"seed", queue_id=0)).ok
        f = store.commitlog.files[-1]
        fd = f.fd
        for attempt in ("put", "batch"):
            pos = f.wrote_position
            f.fd = 10_000
            try:
                with pytest.raises(OSError) as err:
                    if attempt == "put":
                        store.put(Message("TopicA", big, queue_id=0))
                    else:
                        store.put_batch([Message("TopicA", b"small", queue_id=0), Message("TopicA", big, queue_id=0)])
            finally:
                f.fd = fd
            if attempt == "put":
                assert f"{f.path} @ offset {pos}" in str(err.value)
                assert f.wrote_position == pos
            else:  # the small record before it was written (mapping), the big one not
                assert "message 1" in str(err.value) and "the 1 messages before it were stored" in str(err.value)
                assert f"{f.path} @ offset " in str(err.value.__cause__)
        r = store.put(Message("TopicA", b"after", queue_id=0))
        assert r.ok and r.queue_offset == 2  # seed, small: no offset lost to the failures
        assert [m.body for m in store.get_messages("TopicA", 0, 0, 10)] == [b"seed", b"small", b"after"]
    with open_store(tmp_path / "s", small_config()) as st:
        assert [rec.body for rec in st.commitlog.iter_records()] == [b"seed", b"small", b"after"]


class _OrderedLock:
    """A lock that records, at each acquisition, which other tracked locks its thread
    already holds (to check the store's lock order without racing threads)."""

    def __init__(self, name, held, seen):
        import threading

        self.name, self.held, self.seen, self._l = name, held, seen, threading.Lock()

    def acquire(self, *a, **kw):
        self.seen.add((tuple(sorted(self.held)), self.name))
        ok = self._l.acquire(*a, **kw)
        if ok:
            self.held.add(self.name)
        return ok

    def release(self):
        self.held.discard(self.name)
        self._l.release()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()


def test_the_put_lock_is_never_held_when_the_reput_lock_is_taken(tmp_path):
    """Reput takes the put lock inside the reput lock; taking them the other way round
    anywhere (clean-up did, at the deleteWhen hour) deadlocks against it."""
    store = _open(tmp_path / "s")
    held, seen = set(), set()
    store._lock = _OrderedLock("put", held, seen)
    store._reput_lock = _OrderedLock("reput", held, seen)
    try:
        for m in sample_messages(40):
            store.put(m)
        store.put_batch(sample_messages(10))
        store.reput()
        store.flush()
        store.clean_expired_files(force=True)
        store.get_message("TopicA", 0, 0)
    finally:
        store.shutdown()
    assert (("put",), "reput") not in seen
    assert (("reput",), "put") in seen  # reput's own order was exercised


def test_the_first_reput_loads_nothing_the_open_did_not(tmp_path):
    """Opening a store loads the bulk reader (pyarrow, numba, the compiled loops), so
    the put that reaches the first reput does not stall for it (~1 s). In a fresh
    process: nothing else in this test suite has loaded them yet."""
    code = textwrap.dedent(
        f"""
        import sys
        from rmqlab.engine import Message, MessageStore
        store = MessageStore.open({str(tmp_path / "s")!r}, dispatch="manual")
        for i in range(50):
            store.put(Message("TopicA", b"x" * 100, {{"TAGS": "t", "KEYS": f"k{{i}}"}}, queue_id=i % 2))
        before = set(sys.modules)
        assert store.reput() == 50
        print(sorted(set(sys.modules) - before))
        store.shutdown()
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_a_store_without_config_keeps_none(store_copy):
    """config/*.json is the broker's, not DefaultMessageStore's: a store RocketMQ's
    store wrote (none there) is appended to and shut down without one appearing; a
    store rmqlab starts keeps its own, a crash before the first persist included."""
    from tests.engine.engine_support import reference_config

    root = store_copy("clean")
    assert not (root / "config").exists()
    store = MessageStore.open(root, reference_config("clean"), services=False)
    assert store.put(Message("TopicA", b"appended", queue_id=0)).ok
    store.shutdown()
    assert not (root / "config").exists()


def test_a_store_rmqlab_starts_keeps_its_config_across_a_crash(tmp_path):
    store = _open(tmp_path / "s")
    assert store.put(Message("TopicA", b"a", queue_id=0)).ok
    store.crash()
    with _open(tmp_path / "s") as again:
        assert again.put(Message("TopicA", b"b", queue_id=0)).ok
    assert "TopicA" in load_rocketmq_json((tmp_path / "s" / "config" / "topics.json").read_text())["topicConfigTable"]


@pytest.mark.parametrize(
    "hour,used,manual,clean,immediately",
    [
        (4, 0.10, False, True, False),  # deleteWhen hour: expired files only
        (13, 0.10, False, False, False),  # neither the hour nor a full disk
        (13, 0.80, False, True, False),  # > diskMaxUsedSpaceRatio 75 %: expired files at any hour
        (13, 0.87, False, True, True),  # > diskSpaceCleanForciblyRatio 85 %: at once
        (13, 0.95, False, True, True),  # > diskSpaceWarningLevelRatio 90 %: disk full, at once
        (13, -1.0, False, True, False),  # Java could not measure the partition: treated as full
        (13, 0.10, True, True, False),  # executeDeleteFilesManually
    ],
)
def test_cleanup_decision_follows_clean_commit_log_service(hour, used, manual, clean, immediately):
    from rmqlab.engine.clean import cleanup_due

    d = cleanup_due(MessageStoreConfig(), hour=hour, used_ratio=used, manual=manual)
    assert (d.clean, d.immediately) == (clean, immediately) and bool(d.reasons) == clean
    # cleanFileForciblyEnable=false: a full disk still cleans, but only expired files
    off = cleanup_due(MessageStoreConfig(clean_file_forcibly_enable=False), hour=hour, used_ratio=used, manual=manual)
    assert (off.clean, off.immediately) == (clean, False)


def test_cleanup_ratios_are_clamped_as_java_clamps_them():
    from rmqlab.engine.clean import cleanup_due

    # diskSpaceCleanForciblyRatio=99 is clamped to 85 %: 0.87 still cleans at once
    assert cleanup_due(MessageStoreConfig(disk_space_clean_forcibly_ratio=99), hour=13, used_ratio=0.87).immediately
    # diskMaxUsedSpaceRatio=5 is clamped to 10 %: 0.08 does not clean
    assert not cleanup_due(MessageStoreConfig(disk_max_used_space_ratio=5), hour=13, used_ratio=0.08).clean
