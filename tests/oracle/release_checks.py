"""The checks of rmqlab against a live Apache RocketMQ 5.4.0 or 5.5.0, whose start-up rules differ from
5.3.3's (rmqlab.releases): each release writes stores of more than ten commitlog files,
crashes, the copies are damaged where the rules part (a crash further back than ten
files, a damaged first record, a checkpoint's logicsPhysicalOffset that disagrees with
the queues, deleted queues), and RocketMQ's own recovery of one copy must equal
rmqlab's of the other, the release told from the store's bytes or, where they do not
tell, named as the user would.  The seeded differential directions and damage of
tests/oracle/test_differential.py run against each release too, fewer seeds.

Each release's test file (test_release_5_4.py, test_release_5_5.py) names its release
(``RELEASE``) and imports these tests, so that the two run on both test workers;
test_release_5_5_1.py imports those its store alone can run (5.5.1 publishes no broker
or client).
"""

from __future__ import annotations

import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.recovery import recover
from tests.oracle import differential as D
from tests.oracle.harness import Oracle, build_or_skip
from tests.oracle.test_differential import _failures
from tests.oracle.workload import RELEASE_DAMAGE_KINDS, long_workload

LONG_SEEDS = [301, 302]
RELEASE_DAMAGE_SEEDS = list(range(len(RELEASE_DAMAGE_KINDS)))  # one of each kind (the long run: scripts/differential.py --release)
SEEDS = [111, 112]
DAMAGE_SEEDS = [0, 1, 2, 4, 6]  # a flip, a zeroed page, a torn tail, a deleted queue, an old checkpoint


@pytest.fixture(scope="module")
def release_oracle(request):
    """(release, the harness JVM built against it): the release the test module names."""
    release = request.module.RELEASE
    with Oracle(build_or_skip(release), threads=4) as rmq:
        assert rmq.rocketmq_version == release
        yield release, rmq


@pytest.fixture(scope="module")
def long_stores(release_oracle, tmp_path_factory):
    release, rmq = release_oracle
    written = D.rocketmq_written(rmq, LONG_SEEDS, tmp_path_factory.mktemp(f"long{release}"), release=release, workload=long_workload)
    assert all(ans.get("ok") for *_, ans in written), [ans.get("error") for *_, ans in written]
    return written


def test_damage_where_the_releases_start_up_rules_part(release_oracle, long_stores, tmp_path):
    release, rmq = release_oracle
    result = D.damaged(rmq, long_stores, RELEASE_DAMAGE_SEEDS, tmp_path, release=release, how=D.release_damage)
    assert len(result) == len(RELEASE_DAMAGE_SEEDS)
    if any(result.values()):
        pytest.fail(_failures(result), pytrace=False)


def test_a_crash_further_back_than_ten_files_ends_where_the_release_ends_it(release_oracle, long_stores, tmp_path):
    """The issue's case: the checkpoint zeroed and a record damaged in an early file of
    a store of ~30 files.  5.4+ looks back ten files and keeps everything after; 5.3.3's
    rules start at file 0 and end the log at the damage.  The store says 5.4+
    (rocksdbstore/), so rmqlab follows it unasked; told 5.3.3 it answers 5.3.3's."""
    release, rmq = release_oracle
    seed = next(s for s in range(100) if s % len(RELEASE_DAMAGE_KINDS) == RELEASE_DAMAGE_KINDS.index("far_back"))
    result = D.damaged(rmq, long_stores, [seed], tmp_path, release=release, how=D.release_damage)
    if any(result.values()):
        pytest.fail(_failures(result), pytrace=False)
    store = tmp_path / f"d{seed}" / "store"
    config = MessageStoreConfig.from_mapping(long_stores[0][2])
    told = recover(store, config=config)
    old = recover(store, config=config, rocketmq_version="5.3.3")
    assert told.release in ("5.4.0", "5.5.0") and not told.release_outcomes
    assert old.commitlog_end < told.commitlog_end, "the damage did not part the releases: the test would not see the rule"
    assert int(old.start_file) == 0 and int(told.start_file) > 0


def test_both_directions_and_the_classic_damage(release_oracle, tmp_path):
    """RocketMQ writes, rmqlab reads, recovers and verifies; rmqlab writes, the release
    loads, recovers, reads back and appends; RocketMQ's crashed stores damaged the nine
    classic ways."""
    release, rmq = release_oracle
    written = D.rocketmq_written(rmq, SEEDS, tmp_path / "w", release=release)
    result = D.rocketmq_to_rmqlab(rmq, SEEDS, tmp_path / "w", written=written, release=release)
    result |= D.damaged(rmq, written, DAMAGE_SEEDS, tmp_path / "d", release=release)
    result |= D.rmqlab_to_rocketmq(rmq, SEEDS[:1], tmp_path / "m", release=release)
    assert len(result) == 2 * len(SEEDS) + len(DAMAGE_SEEDS) + 3
    if any(result.values()):
        pytest.fail(_failures(result), pytrace=False)


def test_a_broker_of_the_release_killed_recovers_and_reads_as_the_release_does(release_oracle, tmp_path):
    """A real broker of the release (its NamesrvStartup, BrokerStartup and Java client,
    tests/oracle/broker.py), killed with SIGKILL: rmqlab tells the release from the store
    (5.4+ leaves rocksdbstore/; 5.5 writes the checkpoint's sixth long), recovers it as
    that release's own store does and reads what it reads; the read commands answer."""
    from tests.oracle.broker import capture
    from tests.oracle.test_broker_capture import _read_commands_answer, _recovers_and_reads_as_rocketmq
    from rmqlab.store.release import tell_release

    release, rmq = release_oracle
    # timer-wheel snapshots (5.4+): the broker flushes the wheel as timerwheel.<timer log offset>
    cap = capture(tmp_path / "capture", build_or_skip(release), settings={"timerWheelSnapshotFlush": "true", "timerWheelSnapshotIntervalMs": "100"})
    said = tell_release(cap.store, MessageStoreConfig.from_mapping(cap.config)).candidates
    assert release in said and "5.3.3" not in said, said
    _recovers_and_reads_as_rocketmq(rmq, cap, tmp_path, release)
    _read_commands_answer(cap.store)
    _timers_read_from_the_snapshot(cap)


def _timers_read_from_the_snapshot(cap):
    """The wheel the broker loads at its next start is its newest snapshot
    (TimerMessageStore with timerWheelSnapshotFlush): rmqlab reads that one, lists
    exactly the timer messages still pending, and verify finds the timer store sound."""
    import json

    from rmqlab.forensics.verify import verify_store
    from rmqlab.store.timer import TimerStore
    from tests.oracle.test_broker_capture import _timer_sends, cli

    cfg = MessageStoreConfig.from_mapping(cap.config)
    timer = TimerStore.of(cap.store, cfg)
    try:
        assert timer.snapshot_offset is not None and timer.wheel_path.name == f"timerwheel.{timer.snapshot_offset}", sorted(p.name for p in cap.store.iterdir())
    finally:
        timer.close()
    done = cli("timers", cap.store, "--json")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    pending = _timer_sends(cap, "timer-pending")
    assert sorted(r["uniq_key"] for r in rows) == sorted(m["msgId"] for m in pending) and len(pending) == 5
    rep = verify_store(cap.store, cfg)
    assert not [f for f in rep.findings if f.kind.startswith("TIMER")], [str(f) for f in rep.findings]
