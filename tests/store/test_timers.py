"""The timer store, on a store built from RocketMQ 5.3.3's timer layouts: records of
``rmq_sys_wheel_timer`` as the broker rewrites a timer message
(HookUtils.transformTimerMessage: TIMER_OUT_MS, REAL_TOPIC, REAL_QID), one timer-log
unit per enqueued message (TimerMessageStore.doEnqueue), the wheel's slots
(TimerWheel.putSlot) and ``config/timercheck`` (TimerCheckpoint.flush).  A real
broker's timer store is checked in tests/oracle/test_timers.py."""

from __future__ import annotations

import json

import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.engine import Message, MessageStore
from rmqlab.format.timer import (
    MAGIC_DEFAULT, MAGIC_DELETE, MAGIC_ROLL, SLOT_SIZE, TIMER_CHECK_FILE_SIZE, TIMER_DEL_UNIQKEY, TIMER_OUT_MS, TIMER_TOPIC, UNIT_SIZE, WHEEL_LENGTH,
    TimerCheck, TimerLogUnit, TimerWheelSlot, delete_key, slot_index,
)
from rmqlab.forensics.verify import verify_store
from rmqlab.store import open_store
from rmqlab.store.timer import TimerStore, timer_messages

from tests.support import run_rmqlab as cli

READ_MS = 5_000_000  # timercheck lastReadTimeMs: slots before it have fired
LOG_FILE = 4096  # mappedFileSizeTimerLog of this store


def _timer_message(key: str, uniq: str, deliver_ms: int, extra=None) -> Message:
    p = {TIMER_OUT_MS: str(deliver_ms), "REAL_TOPIC": "Orders", "REAL_QID": "1", "KEYS": key, "UNIQ_KEY": uniq, **(extra or {})}
    return Message(TIMER_TOPIC, key.encode(), p, queue_id=0)


def build(root, *, torn=False, break_chain=False):
    """Five timer messages: fired, cancelled (pending, named by the delete marker),
    rolled, not yet enqueued (pending) and the delete marker."""
    cfg = MessageStoreConfig(mapped_file_size_commit_log=65536, mapped_file_size_consume_queue=400, max_hash_slot_num=64, max_index_num=256)
    store = MessageStore.open(root, cfg)
    msgs = {
        "fired": _timer_message("t-fired", "U1", 2_000_000),
        "cancelled": _timer_message("t-cancelled", "U2", 10_000_000),
        "rolled": _timer_message("t-rolled", "U3", 900_000_000),
        "waiting": _timer_message("t-waiting", "U4", 11_000_000),
        "cancel": _timer_message("t-cancel", "U5", 10_000_000, {TIMER_DEL_UNIQKEY: delete_key("Orders", "U2")}),
    }
    put = {k: store.put(m) for k, m in msgs.items()}
    store.shutdown()
    # enqueue as TimerMessageStore.doEnqueue does (write time 1_000_000): (name, delayed time, magic)
    enq = [("fired", 2_000_000, MAGIC_DEFAULT), ("cancelled", 10_000_000, MAGIC_DEFAULT), ("rolled", 3_000_000, MAGIC_DEFAULT | MAGIC_ROLL),
           ("cancel", 10_000_000, MAGIC_DEFAULT | MAGIC_DELETE)]
    log = bytearray(LOG_FILE)
    slots: dict[int, list[int]] = {}
    for n, (name, when, magic) in enumerate(enq):
        pos = n * UNIT_SIZE
        chain = slots.setdefault(when, [])
        prev = chain[-1] if chain else -1
        if break_chain and name == "cancel":
            prev = 2 * UNIT_SIZE  # the rolled unit: another slot's
        r = put[name]
        log[pos : pos + UNIT_SIZE] = TimerLogUnit.build(dict(size=UNIT_SIZE, prev_pos=prev, magic=magic, write_time=1_000_000, delay=when - 1_000_000,
                                                            commitlog_offset=r.wrote_offset, commitlog_size=r.wrote_bytes, real_topic_hash=0, reserved=0))
        chain.append(pos)
    if torn:
        at = len(enq) * UNIT_SIZE
        log[at : at + 16] = b"\x00\x00\x00\x34" + bytes(8) + b"\x00\x00\x77\x77"  # size 52, a magic no MAGIC bits make
    (root / "timerlog").mkdir()
    (root / "timerlog" / "00000000000000000000").write_bytes(bytes(log))
    with open(root / "timerwheel", "wb") as fh:
        fh.truncate(WHEEL_LENGTH)
        for when, chain in slots.items():
            fh.seek(slot_index(when) * SLOT_SIZE)
            fh.write(TimerWheelSlot.build(dict(delayed_time=when // 1000, first_pos=chain[0], last_pos=chain[-1], num=len(chain), magic=0)))
    check = TimerCheck.build(dict(last_read_time_ms=READ_MS, last_timer_log_flush_pos=len(enq) * UNIT_SIZE, last_timer_queue_offset=4,
                                  master_timer_queue_offset=4, state_version=0, timestamp=0, counter=1))
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "timercheck").write_bytes(check + bytes(TIMER_CHECK_FILE_SIZE - len(check)))
    conf = root.parent / "broker.conf"
    conf.write_text(f"mappedFileSizeTimerLog={LOG_FILE}\n")
    return put, conf


def test_each_timer_message_has_the_state_the_timer_store_gives_it(tmp_path):
    put, _ = build(tmp_path / "s")
    with open_store(tmp_path / "s") as store:
        states = {m.keys: m.state for m in timer_messages(store)}
    assert states == {"t-fired": "fired", "t-cancelled": "cancelled", "t-rolled": "rolled", "t-waiting": "pending", "t-cancel": "cancel"}


def test_timers_lists_exactly_the_pending_ones(tmp_path):
    put, _ = build(tmp_path / "s")
    done = cli("timers", tmp_path / "s", "--json")
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and [r["keys"] for r in rows] == ["t-waiting"]
    r = rows[0]
    assert (r["physical_offset"], r["real_topic"], r["real_queue_id"], r["deliver_ms"], r["state"]) == (put["waiting"].wrote_offset, "Orders", 1, 11_000_000, "pending")
    assert r["timerlog_position"] is None  # never enqueued: the broker enqueues it at start
    everything = cli("timers", tmp_path / "s", "--all").stdout
    assert "1 cancel, 1 cancelled, 1 fired, 1 pending, 1 rolled" in everything


def test_verify_is_quiet_on_a_sound_timer_store(tmp_path):
    build(tmp_path / "s")
    rep = verify_store(tmp_path / "s")
    assert not [f for f in rep.findings if f.kind.startswith("TIMER")], [str(f) for f in rep.findings]
    assert rep.stats["timer_units"] == 4 and rep.stats["timer_pending_units"] == 2


def test_verify_finds_units_past_a_truncated_log(tmp_path):
    put, _ = build(tmp_path / "s")
    # the log loses everything from the cancelled message on (a truncation, apache/rocketmq#10668)
    cut = put["cancelled"].wrote_offset
    f = tmp_path / "s" / "commitlog" / "00000000000000000000"
    data = bytearray(f.read_bytes())
    data[cut:] = bytes(len(data) - cut)
    f.write_bytes(bytes(data))
    past = verify_store(tmp_path / "s").by_kind("TIMER_PAST_END")
    assert sorted((p.offset, p.severity) for p in past) == [(UNIT_SIZE, "error"), (2 * UNIT_SIZE, "warning"), (3 * UNIT_SIZE, "error")]


def test_verify_finds_a_torn_unit_and_a_broken_chain(tmp_path):
    build(tmp_path / "s", torn=True, break_chain=True)
    rep = verify_store(tmp_path / "s")
    torn = rep.by_kind("TIMER_LOG_TORN")
    assert [(f.offset) for f in torn] == [4 * UNIT_SIZE]
    slot = rep.by_kind("TIMER_SLOT")
    assert len(slot) == 1 and slot[0].offset == slot_index(10_000_000) * SLOT_SIZE and "belongs to the slot of 3000000" in slot[0].message
    assert rep.by_kind("TIMER_UNCHAINED")  # the cancelled message's unit: the broken chain skips it
    with open_store(tmp_path / "s") as store:
        assert TimerStore.of(store.root).units()[1].torn


def test_no_timer_store_is_said_plainly(tmp_path):
    from tests.support import REFERENCE

    done = cli("timers", REFERENCE / "clean" / "store")
    assert done.returncode == 1 and "no timer store" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("damage", ["wheel-size", "check-short"])
def test_damaged_timer_files_are_clean_errors(tmp_path, damage):
    build(tmp_path / "s")
    if damage == "wheel-size":
        with open(tmp_path / "s" / "timerwheel", "r+b") as fh:
            fh.truncate(1000)
    else:
        (tmp_path / "s" / "config" / "timercheck").write_bytes(b"\x00" * 10)
    rep = verify_store(tmp_path / "s")
    assert rep.by_kind("TIMER_WHEEL" if damage == "wheel-size" else "TIMER_CHECK")
    done = cli("timers", tmp_path / "s")
    assert "Traceback" not in done.stderr and done.returncode in (0, 2)


def _snapshot_without_slot(root, when: int, offset: int) -> None:
    """A wheel snapshot taken before the units of ``when``'s slot were written: the wheel
    as it is, that slot empty, named for the timer-log ``offset`` (TimerWheel.backup)."""
    wheel = bytearray((root / "timerwheel").read_bytes())
    at = slot_index(when) * SLOT_SIZE
    wheel[at : at + SLOT_SIZE] = bytes(SLOT_SIZE)
    (root / f"timerwheel.{offset}").write_bytes(bytes(wheel))


def test_a_wheel_snapshot_is_the_wheel_the_broker_loads(tmp_path):
    """timerWheelSnapshotFlush (5.4+): the newest timerwheel.<offset> is the wheel loaded
    at start, and the timer-log units from its offset on are chained into it again
    (TimerMessageStore: setLastTimerLogFlushPos(snapOffset)) — not lost."""
    build(tmp_path / "s")
    root = tmp_path / "s"
    _snapshot_without_slot(root, 10_000_000, 1 * UNIT_SIZE)  # the cancelled/cancel slot: units 1 and 3, both after 52
    (root / "timerwheel.0").write_bytes((root / "timerwheel").read_bytes())  # an older snapshot
    t = TimerStore.of(root)
    assert (t.snapshot_offset, t.wheel_path.name) == (UNIT_SIZE, f"timerwheel.{UNIT_SIZE}") and "taken as on" in t.snapshot_reason
    t.close()
    assert not [f for f in verify_store(root).findings if f.kind.startswith("TIMER")]
    # a snapshot taken before the first unit: unit 1 lies before it, no slot chains it — lost
    (root / f"timerwheel.{UNIT_SIZE}").unlink()
    _snapshot_without_slot(root, 10_000_000, 4 * UNIT_SIZE)
    assert [f.kind for f in verify_store(root).findings if f.kind.startswith("TIMER")] == ["TIMER_UNCHAINED"]
    # the setting off: the broker loads timerwheel itself
    off = MessageStoreConfig.from_mapping({"timerWheelSnapshotFlush": "false"})
    t = TimerStore.of(root, off)
    assert (t.snapshot_offset, t.wheel_path.name) == (None, "timerwheel")
    t.close()
    with open_store(root) as store:
        parts = {p.path: p.handling for p in store.layout.parts}
    assert parts[f"timerwheel.{4 * UNIT_SIZE}"] == "decoded" and parts["timerwheel.0"] == "read"
