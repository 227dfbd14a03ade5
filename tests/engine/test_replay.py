"""Byte-identical replay: RocketMQ's put sequence through rmqlab gives RocketMQ's files.

The manifest of each reference store lists every put as RocketMQ received it (same
born/store timestamps and hosts, flags, the properties string in Java's HashMap
order) and what RocketMQ answered.  Replaying it must give the same answers, the
same commitlog and consume-queue bytes, and index files with the same headers,
slots and entries.
"""

from __future__ import annotations

import pytest

from rmqlab.engine import ManualClock, MessageStore
from rmqlab.store.reader import open_store

from tests.engine.engine_support import assert_same_as_rocketmq, manifest, manifest_message, reference_config


@pytest.mark.parametrize("case", ["clean", "v2ipv6"])
@pytest.mark.parametrize("mode", ["put", "put_batch"])
def test_replay_manifest(case, mode, tmp_path):
    cfg = reference_config(case)
    messages = manifest(case)["messages"]
    root = tmp_path / "store"
    with MessageStore.open(root, cfg, clock=ManualClock(1_795_303_733_000), services=False) as store:
        if mode == "put":
            for m in messages:
                r = store.put(manifest_message(m))
                got = (r.status.value, r.wrote_offset, r.wrote_bytes, r.queue_offset, r.msg_id, r.store_timestamp)
                assert got == (m["putStatus"], m["physicalOffset"], m["size"], m["queueOffset"], m["msgId"], m["storeTimestamp"]), m["seq"]
        else:
            for i in range(0, len(messages), 50):
                chunk = messages[i : i + 50]
                r = store.put_batch([manifest_message(m) for m in chunk])
                assert r.ok and r.offsets == [m["physicalOffset"] for m in chunk]
    assert_same_as_rocketmq(case, root)


@pytest.mark.parametrize("dispatch", ["background", "manual"])
def test_replay_with_background_services(dispatch, tmp_path):
    """Flush and reput threads running (SYNC_FLUSH group commit in v2ipv6) change nothing
    in the bytes."""
    case = "v2ipv6"
    root = tmp_path / "store"
    store = MessageStore.open(root, reference_config(case), clock=ManualClock(1_795_303_733_000), dispatch=dispatch)
    try:
        for m in manifest(case)["messages"]:
            assert store.put(manifest_message(m)).ok
        if dispatch == "manual":
            assert store.dispatch_behind == len(manifest(case)["messages"])
            assert store.reput(10) == 10
    finally:
        store.shutdown()
    assert_same_as_rocketmq(case, root)


def test_replayed_store_reads_like_rocketmqs(tmp_path, dumps):
    """What RocketMQ read back from its store (dump.json), the reader reads back from ours."""
    case = "clean"
    root = tmp_path / "store"
    with MessageStore.open(root, reference_config(case), clock=ManualClock(1_795_303_733_000), services=False) as store:
        for m in manifest(case)["messages"]:
            store.put(manifest_message(m))
    walk = dumps[case]["commitLogWalk"]
    with open_store(root, reference_config(case)) as st:
        recs = list(st.commitlog.iter_records(include_blank=True))
        assert [r.physical_offset for r in recs] == [w["physicalOffset"] for w in walk]
        assert [r.kind for r in recs] == [w["kind"] for w in walk]
        for qname, q in dumps[case]["consumeQueues"].items():
            topic, qid = qname.rsplit("/", 1)
            entries = st.consume_queue(topic, int(qid)).entries()
            assert [(e.commitlog_offset, e.size, e.tags_code) for e in entries] == [(u["physicalOffset"], u["size"], u["tagsCode"]) for u in q["cqUnits"]]
