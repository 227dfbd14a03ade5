"""Incidents of known cause on stores RocketMQ 5.3.3 wrote (tests/oracle/incidents.py),
RocketMQ's own start the judge of where the log ends: rmqlab names the cause (kind,
file, offset), counts the acknowledged messages lost and those of them that had been
flushed as the truth does, and every command tells the same story."""

from __future__ import annotations

import pytest

from tests.oracle import incidents


@pytest.fixture(scope="module")
def made(oracle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("incidents")
    return incidents.make(oracle, incidents.bases(oracle, tmp / "bases"), tmp)


def test_every_incident_is_told_as_rocketmq_and_the_truth_tell_it(made):
    assert len(made) == sum(len(f) for _, _, f in incidents.INCIDENTS.values())
    wrong = [w for inc in made for w in incidents.judge(inc)]
    assert not wrong, "\n".join(wrong)


def test_the_incidents_cover_what_they_claim(made):
    """The campaign's own check: each incident's damage did what it says (RocketMQ's end
    of the log moved, or did not, as the damage means)."""
    by = {i.name: i for i in made}
    full = max(r["physicalOffset"] + r["size"] for r in made[0].base.records)
    for flush in incidents.FLUSHES:
        window = by[f"crash window ({flush})"]
        assert window.end == window.base.first_unflushed()["physicalOffset"] and window.lost() and not window.lost_flushed()
    # the page: damage to records the last flush had written (the first record it costs was
    # flushed); the sector: to records it had not
    before, after = by["zeroed page before the last flush (ASYNC_FLUSH)"], by["zeroed sector after the last flush (ASYNC_FLUSH)"]
    assert before.lost()[0]["storeTimestamp"] <= before.base.flushed_ts and before.lost_flushed() > 0
    assert after.lost()[0]["storeTimestamp"] > after.base.flushed_ts and not after.lost_flushed()
    assert not by["short file (ASYNC_FLUSH)"].loads
    for name in ("flip in the oldest file, clean shutdown", "consume queue deleted", "index deleted"):
        inc = by[f"{name} (ASYNC_FLUSH)"]
        assert inc.end == full and not inc.lost(), name
