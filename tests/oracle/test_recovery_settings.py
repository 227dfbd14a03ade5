"""Two start-up settings of RocketMQ 5.5 that change where abnormal recovery walks and
where it stops, asked of RocketMQ 5.5.1 itself (``CommitLog.recoverAbnormally``):

- ``enableAcceleratedRecovery``: the walk begins inside its start file at
  dispatchFromPhyOffset (the checkpoint's logicsPhysicalOffset), so damage before it
  is never seen; a checkpoint with a physicMsgTimestamp but no logicsPhysicalOffset
  makes ``ConsumeQueueStore.getDispatchFromPhyOffset`` throw (load() fails); an offset
  inside a record ends the walk at once;
- ``checkCommitLogOffsetOnRecover``: a whole record whose physicalOffset field lies
  outside its file ends the walk.

Each case is a crashed store RocketMQ 5.5.1 wrote, damaged where the setting decides;
RocketMQ recovers one copy and rmqlab another, and rmqlab without the setting must end
elsewhere (else the case would not test the rule)."""

from __future__ import annotations

import struct

import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.format import layout
from rmqlab.recovery import recover
from tests.oracle import differential as D
from tests.oracle.release_checks import release_oracle  # noqa: F401 (the 5.5.1 harness)
from tests.oracle.test_differential import _failures
from tests.oracle.workload import _body_at, _records, broker_checkpoint

RELEASE = "5.5.1"
SEED = 7  # a crashed store of several 16 KiB files whose newest files start with whole records
ACCELERATED = {"enableAcceleratedRecovery": "true"}
OFFSET_CHECK = {"checkCommitLogOffsetOnRecover": "true"}


def _checkpoint_at(store):
    c = broker_checkpoint(store)
    return c["file"], c["records"], c["k"]


def _flip_before(store):
    """A body byte flipped in a record of the start file before logicsPhysicalOffset."""
    f, records, k = _checkpoint_at(store)
    _flip_body(f, records[k // 2][0])


def _flip_body(f, pos):
    """A byte of the body of the record at ``pos`` flipped (its body CRC then fails)."""
    data = bytearray(f.read_bytes())
    data[_body_at(data, pos)] ^= 0x5A
    f.write_bytes(bytes(data))


def _first_record_damaged(store):
    """The first record of the file holding logicsPhysicalOffset damaged: the walk for a
    start file goes back one file, and dispatchFromPhyOffset lies past that file's end."""
    f, records, k = _checkpoint_at(store)
    _flip_body(f, 0)


def _no_logics_offset(store):
    """A physicMsgTimestamp but no logicsPhysicalOffset (a 5.4 broker's checkpoint)."""
    _checkpoint_at(store)
    with open(store / "checkpoint", "r+b") as fh:
        fh.seek(40)
        fh.write(struct.pack(">q", 0))


def _offset_outside(store):
    """The physicalOffset field of a record of the newest data file pointed 5 files on."""
    f = [p for p in sorted((store / "commitlog").iterdir()) if _records(p)][-1]
    pos, _ = _records(f)[-2]
    with open(f, "r+b") as fh:
        fh.seek(pos + layout.PHYSICAL_OFFSET_AT)
        fh.write(struct.pack(">q", int(f.name) + 5 * f.stat().st_size))


CASES = {
    "accelerated past a damaged record": (ACCELERATED, _flip_before),
    "a record's physicalOffset outside its file": (OFFSET_CHECK, _offset_outside),
    "offsets checked on an undamaged store": (OFFSET_CHECK, lambda store: None),
}
#: stores RocketMQ 5.5.1 does not load with the setting (its recovery throws)
LOAD_FAILS = {
    "accelerated without logicsPhysicalOffset": (ACCELERATED, _no_logics_offset, "logicsPhysicalOffset is invalid"),
    "accelerated past the start file's end": (ACCELERATED, _first_record_damaged, "ByteBuffer.position throws"),
}


def test_accelerated_recovery_and_the_offset_check_end_as_rocketmq_5_5_1_does(release_oracle, tmp_path):
    release, rmq = release_oracle
    (seed, d, config, ans), = D.rocketmq_written(rmq, [SEED], tmp_path, release, workload=_workload)
    assert ans.get("ok"), ans.get("error")
    cases = []
    for i, (name, (settings, damage)) in enumerate(CASES.items()):
        base = tmp_path / f"c{i}"
        D._copy(d / "crash", base / "store")
        damage(base / "store")
        D._copy(base / "store", base / "rocketmq")
        cases.append((base, {**config, **settings}))
    results = D.both_recover(rmq, cases, release)
    failures = {name: diffs for name, (_, diffs) in zip(CASES, results) if diffs}
    if failures:
        pytest.fail(_failures(failures), pytrace=False)
    answers = {name: ans for name, (ans, _) in zip(CASES, results)}
    assert any("recover using acceleration" in line for line in answers["accelerated past a damaged record"]["recovery"]["logLines"])
    # RocketMQ's load fails; rmqlab's dry run says why (and it will not write a recovery)
    for name, (settings, damage, why) in LOAD_FAILS.items():
        base = tmp_path / name.replace(" ", "-")
        D._copy(d / "crash", base / "store")
        damage(base / "store")
        D._copy(base / "store", base / "rocketmq")
        assert rmq.load(base / "rocketmq", {**config, **settings})["recovery"]["loadResult"] is False, name
        told = recover(base / "store", config=MessageStoreConfig.from_mapping({**config, **settings}), rocketmq_version=release)
        assert not told.load_ok and why in told.load_problems[0], (name, told.load_problems)
    # the setting decides each damaged case: rmqlab without it ends elsewhere
    for i, (name, (settings, _)) in enumerate(CASES.items()):
        if name == "offsets checked on an undamaged store":
            continue
        store = tmp_path / f"c{i}" / "store"
        with_it = recover(store, config=MessageStoreConfig.from_mapping({**config, **settings}), rocketmq_version=release)
        without = recover(store, config=MessageStoreConfig.from_mapping(config), rocketmq_version=release)
        assert with_it.commitlog_end != without.commitlog_end, name


def _workload(seed, release=RELEASE):
    """A random workload of 500 messages, each with a body of 4 bytes or more (one to
    flip: tests.oracle.workload._body_at), in 16 KiB commitlog files."""
    from tests.oracle.workload import random_workload

    config, lines = random_workload(seed, n=500, release=release)
    for line in lines:
        for m in line.get("batch", [line]):
            m["body"] = m["body"] if len(m["body"]) >= 8 else "Ym9keQ=="  # "body"
    config["mappedFileSizeCommitLog"] = "16384"
    return config, lines
