"""RocketMQ 5.5.1's store, judged live (its broker and client are not on Maven Central;
the store alone is enough here): both directions and the classic damage
(tests/oracle/release_checks.py), and the rule where it parts from 5.5.0.

After recovery, ``ConsumeQueueStore.recoverOffsetTable`` runs ``ConsumeQueue
.correctMinOffset`` on every queue; from 5.5.1 it first resets a queue left with no file
(``truncateDirtyLogicFiles`` deleted them all) to maxPhysicOffset -1, where 5.5.0 keeps
the end of the log it was cut at (``Release.empty_queue_resets_max``).  The store is
the long run's seed that found it: RocketMQ 5.5.1 writes it, a page of its first file is
zeroed, both recover."""

from __future__ import annotations

import json

from rmqlab.config import MessageStoreConfig
from rmqlab.recovery.recover import recover
from rmqlab.writers.clock import ManualClock
from tests.oracle import differential as D
from tests.oracle.release_checks import release_oracle, test_both_directions_and_the_classic_damage  # noqa: F401 (run here for 5.5.1)

RELEASE = "5.5.1"
SEED = 10261  # zero_page in commitlog file 0: the log ends at 20511 and queues lose every file


def test_a_queue_recovery_empties_reports_no_max_physical_offset(release_oracle, tmp_path):
    release, oracle = release_oracle
    written = D.rocketmq_written(oracle, [SEED], tmp_path, release)
    diffs = D.damaged(oracle, written, [SEED], tmp_path, release)
    assert list(diffs.values()) == [[]], diffs
    # the rule decides this store: under 5.5.0's it would end with another max
    config = MessageStoreConfig.from_mapping(written[0][2])
    store = tmp_path / f"d{SEED}" / "store"
    got = {r: recover(store, config=config, out=tmp_path / f"out-{r}", clock=ManualClock(D.CLOCK_MS, tick_ms=1), rocketmq_version=r).max_phy_offset_in_cq_after
           for r in ("5.5.0", "5.5.1")}
    assert got["5.5.0"] != got["5.5.1"], json.dumps(got)
