"""WriteForm driven headlessly: each button does one step of a put, and what the form
reports is what a fresh reader finds in the files."""

from __future__ import annotations

import pytest

from rmqlab.format.hashing import index_key_hash, tags_code
from rmqlab.lookup import get_message, query_by_key
from rmqlab.store import open_store
from rmqlab.widgets import WriteForm


@pytest.fixture
def form(tmp_path):
    f = WriteForm(tmp_path / "scratch")
    yield f
    f.close_store()


def test_put_appends_but_does_not_dispatch(form):
    form.topic.value = "Orders"
    form.queue_id.value = 2
    form.tags.value = "paid"
    form.message_keys.value = "order-9"
    form.put.click()
    c = form.changes
    assert c["status"] == "PUT_OK" and c["physical_offset"] == 0
    with open_store(form.root) as s:
        rec = s.commitlog.read(0)
        assert (rec.topic, rec.queue_id, rec.tags, rec.keys) == ("Orders", 2, "paid", "order-9")
        assert rec.total_size == c["size"] and rec.crc_ok
        assert not (form.root / "consumequeue" / "Orders" / "2").exists() or s.consume_queue("Orders", 2).valid_range() == (0, 0)
    assert "1 record(s) waiting for dispatch" in form.status.value
    assert "Java totalSize" in form.output.value  # the appended bytes, field by field


def test_dispatch_writes_entry_and_moves_slots(form):
    form.message_keys.value = "order-1"
    form.put.click()
    form.dispatch.click()
    form.message_keys.value = "order-1 cust-3"  # the same key again: the chain grows
    form.put.click()
    first_slots = dict(form.changes)
    form.dispatch.click()
    c = form.changes
    assert c["dispatched"] == 1 and c["queues"] == {"Orders/0": (1, 2)}
    old, new = c["slots"]["Orders#order-1"]
    assert old > 0 and new > old
    with open_store(form.root) as s:
        entry, rec = get_message(s, "Orders", 0, 1)
        assert entry.tags_code == tags_code("created") and rec.keys == "order-1 cust-3"
        f = s.index.files[-1]
        slot = index_key_hash("Orders#order-1") % f.max_hash_slot_num
        assert int(f.slots()[slot]) == new
        e = f.entries()[new]
        assert int(e["prev_index"]) == old and int(e["phy_offset"]) == rec.physical_offset
        assert len(query_by_key(s, "Orders", "order-1").records) == 2
    assert first_slots["step"] == "put"
    form.dispatch.click()
    assert form.changes == {"step": "dispatch", "dispatched": 0}


def test_flush_moves_the_checkpoint(form):
    form.put.click()
    form.flush.click()
    cp = form.changes["checkpoint"]
    with open_store(form.root) as s:
        rec = s.commitlog.read(0)
        assert s.checkpoint().physic_msg_timestamp == rec.store_timestamp
    assert cp["physic_msg_timestamp"] == (0, rec.store_timestamp)
    assert "waiting for dispatch" in form.status.value and "0 record(s)" in form.status.value


def test_invalid_topic_is_refused_and_shown(form):
    form.topic.value = "no spaces allowed"
    form.put.click()
    assert form.changes["status"] != "PUT_OK"
    assert "no spaces allowed" in form.output.value
    with open_store(form.root) as s:
        assert list(s.commitlog.iter_records()) == []


def test_flush_shows_every_checkpoint_field_and_why_the_index_time_stays(tmp_path):
    form = WriteForm(tmp_path / "store")
    form.topic.value, form.message_keys.value = "Orders", "k1"
    form.put.click()
    form.dispatch.click()
    form.flush.click()
    changed = form.changes["checkpoint"]
    assert {"physic_msg_timestamp", "logics_msg_timestamp"} <= set(changed)
    assert "index_msg_timestamp" not in changed  # one index file, not full: it does not move
    assert "moves only when an index file is full" in form.output.value
    form.close_store()
