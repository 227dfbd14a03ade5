"""LiveStoreWatcher and the LiveStore under it, driven headlessly: what it shows is what
the store's files hold (a reader opened on them), steps and buttons move the ends as a
broker's threads would, a kill leaves the appended records and restart recovers."""

from __future__ import annotations

import time

from rmqlab.lab.live import LiveStore
from rmqlab.store import open_store
from rmqlab.widgets import LiveStoreWatcher


def test_each_end_is_what_the_files_hold(tmp_path):
    live = LiveStore(tmp_path).put(14).dispatch(6)
    p = live.positions()
    with open_store(live.root, strict=False) as s:
        assert [r.physical_offset + r.total_size for r in s.commitlog.iter_records()][-1] == p.written
        units = {f"{q.topic}/{q.queue_id}": s.consume_queue(q.topic, q.queue_id).valid_range()[1] for q in s.queue_ids()}
    assert units == p.queue_units == {"Orders/0": 3, "Orders/1": 3} and p.dispatch_behind == 8 and p.flushed == 0
    assert len(live.follow()) == 14 and live.positions().followed == p.written
    live.close()


def test_steps_buttons_a_kill_and_a_restart(tmp_path):
    w = LiveStoreWatcher(LiveStore(tmp_path), interval=0.05)
    s = [w.step() for _ in range(4)][-1]
    assert s["followed"] == 20 and s["positions"].dispatch_behind == 0 and s["positions"].flushed == s["positions"].written
    w.buttons["put"].click()
    assert w.state()["followed"] == 30 and w.state()["positions"].dispatch_behind == 10
    assert "30 in all" in w.output.value and "role='meter'" in w.output.value
    w.buttons["kill"].click()
    assert not w.state()["running"] and "killed" in w.output.value
    w.buttons["put"].click()  # refused while killed: said, not raised
    assert w.error
    w.buttons["restart"].click()
    p = w.state()["positions"]
    assert w.live.recovery.mode == "abnormal" and p.dispatch_behind == 0 and sum(p.queue_units.values()) == 30  # re-dispatched
    w.run.value = True  # on its own
    deadline = time.time() + 10
    while w.steps < 7 and time.time() < deadline:
        time.sleep(0.05)
    w.run.value = False
    assert w.steps >= 7 and w.state()["followed"] >= 45
    w.close()
