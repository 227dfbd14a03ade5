"""The bounded fault campaign of every ``make test`` (the long one:
``scripts/faults.py``, 100,000 inputs and 1,000 kill points): 600 damaged inputs
through the read commands and 10 writers killed with SIGKILL.  Every damaged input gets an answer or a one-line error, no
command hangs, crashes, answers a key with a record that lacks it or changes a byte;
no acknowledged message is lost, corrupted or unfindable by key."""

from __future__ import annotations

import pytest

from tests.faults import campaign as C

INPUT_SEEDS = range(600)
KILL_SEEDS = range(10)


def test_damaged_inputs_get_an_answer_or_a_clean_error():
    counts, findings = C.run_inputs(INPUT_SEEDS)
    assert sum(counts.values()) == len(INPUT_SEEDS)
    bad = [f for f in findings if f["outcome"] in ("traceback", "hang", "crash", "wrong answer", "input changed")]
    if bad:
        pytest.fail("\n".join(f"seed {f['seed']}: {f['outcome']} {f.get('mutation')} {f.get('argv')}\n  {f.get('error', '')[-600:]}" for f in bad[:10]), pytrace=False)
    assert counts["correct"] and counts["clean error"]  # both kinds of answer are met


def test_no_acknowledged_message_is_lost_corrupted_or_unfindable_after_a_kill():
    total = C.run_kill_points(KILL_SEEDS)
    assert total["kill points"] == len(KILL_SEEDS) and total["acknowledged"] > 1000
    assert (total["lost"], total["corrupted"], total["unfindable"]) == (0, 0, 0), total


def test_the_campaign_sees_what_it_counts(monkeypatch, tmp_path):
    """The classification itself: a command that raises is a traceback, one that hangs
    a hang, one that writes into the store an input change."""
    import rmqlab.cli as cli

    def explode(argv):
        raise KeyError("boom")

    monkeypatch.setattr(cli, "main", explode)
    assert C.run_input(7)["outcome"] == "traceback"
    monkeypatch.setattr(C, "HANG_S", 1)

    def sleep(argv):
        import time

        time.sleep(5)

    monkeypatch.setattr(cli, "main", sleep)
    assert C.run_input(7)["outcome"] == "hang"

    def scribble(argv):
        from pathlib import Path

        root = Path(argv[1]) if Path(argv[1]).is_dir() else Path(argv[1]).parents[1]
        (root / "checkpoint").write_bytes(b"x")
        return 0

    monkeypatch.setattr(cli, "main", scribble)
    assert C.run_input(0)["outcome"] == "input changed"


@pytest.mark.parametrize("seed", [1579, 3343])
def test_long_run_findings_stay_fixed(seed):
    """Seeds the long run found (a consume-queue file extended by garbage: its ragged
    size was taken for mappedFileSizeConsumeQueue and recover raised ValueError)."""
    assert C.run_input(seed)["outcome"] in ("correct", "clean error")
