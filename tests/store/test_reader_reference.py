"""The read-only reader reproduces what Apache RocketMQ itself read back (dump.json).

For ``clean`` and ``v2ipv6`` the dump is of the very bytes we read.  For ``crash``
RocketMQ recovered the store first (abnormal recovery: it deleted the newest index
file and rebuilt it); the reader reads the store as the crash left it, so index
answers are compared as sets there (recovery's re-dispatch indexes one record twice,
see tests/recovery for the exact post-recovery answers).
"""

from __future__ import annotations

import base64

import pytest

from tests.support import REFERENCE, UNDAMAGED
from rmqlab import lookup
from rmqlab.format.msgid import format_host
from rmqlab.store import open_store


@pytest.fixture(scope="module", params=UNDAMAGED)
def case(request):
    store = open_store(REFERENCE / request.param / "store")
    yield request.param, store
    store.close()


def test_commitlog_walk_matches_rocketmq(case, dumps):
    name, store = case
    walk = dumps[name]["commitLogWalk"]
    recs = list(store.commitlog.iter_records(include_blank=True))
    assert len(recs) == len(walk)
    for rec, w in zip(recs, walk):
        assert rec.physical_offset == w["physicalOffset"]
        assert rec.kind == w["kind"]
        if rec.is_blank:
            assert rec.total_size == w["blankTotalSizeField"] == w["bytesToFileEnd"]
            continue
        assert rec.total_size == w["size"]
        assert rec.topic == w["topic"]
        assert rec.queue_id == w["queueId"]
        assert rec.queue_offset == w["queueOffset"]
        assert rec.sys_flag == w["sysFlag"]
        assert rec.store_timestamp == w["storeTimestamp"]
        assert rec.prepared_transaction_offset == w["preparedTransactionOffset"]
        assert rec.keys == w["keys"]
        assert rec.uniq_key == w["uniqKey"]
        assert rec.crc_ok
    assert store.commitlog.max_offset() == dumps[name]["recovery"]["commitLogMaxOffsetAfterRecovery"]


def test_consume_queues_match_rocketmq(case, dumps):
    name, store = case
    cqs = dumps[name]["consumeQueues"]
    assert sorted(str(q) for q in store.queue_ids()) == sorted(cqs)
    for key, cq in cqs.items():
        q = store.consume_queue(cq["topic"], cq["queueId"])
        assert q.valid_range(store.commitlog.min_offset) == (cq["minOffset"], cq["maxOffset"])
        got = [e.to_dict() for e in q.entries(store.commitlog.min_offset)]
        want = [{"queue_offset": u["queueOffset"], "commitlog_offset": u["physicalOffset"], "size": u["size"], "tags_code": u["tagsCode"]} for u in cq["cqUnits"]]
        assert got == want, key
        assert q.max_physic_offset(store.commitlog.min_offset) == cq["maxPhysicOffset"]


def test_get_message_returns_every_field_rocketmq_returns(case, dumps):
    name, store = case
    n = 0
    for cq in dumps[name]["consumeQueues"].values():
        for m in cq["messages"]:
            entry, rec = lookup.get_message(store, cq["topic"], cq["queueId"], m["queueOffset"])
            assert entry.commitlog_offset == rec.physical_offset == m["physicalOffset"]
            assert rec.total_size == m["size"]
            assert rec.topic == m["topic"] and rec.queue_id == m["queueId"]
            assert rec.tags == m["tags"] and rec.keys == m["keys"]
            assert rec.java_properties == m["properties"]
            assert (base64.b64encode(rec.body).decode() if rec.body else None) == m["bodyBase64"]
            assert rec.body_crc == m["bodyCRC"]
            if m["bodyCRCRecomputed"] is not None:
                assert rec.body_crc_computed == m["bodyCRCRecomputed"]
            assert (rec.flag, rec.sys_flag, rec.reconsume_times) == (m["flag"], m["sysFlag"], m["reconsumeTimes"])
            assert rec.prepared_transaction_offset == m["preparedTransactionOffset"]
            assert (rec.born_timestamp, rec.store_timestamp) == (m["bornTimestamp"], m["storeTimestamp"])
            assert format_host(*rec.born_host) == m["bornHost"]
            assert format_host(*rec.store_host) == m["storeHost"]
            assert rec.msg_id == m["msgId"]
            assert lookup.look_by_msg_id(store, m["msgId"]).physical_offset == m["physicalOffset"]
            n += 1
    assert n > 600


def test_offset_in_queue_by_time_lower_upper_default(case, dumps):
    name, store = case
    probes = 0
    for cq in dumps[name]["consumeQueues"].values():
        for ts, answer in cq["offsetInQueueByTime"].items():
            assert lookup.offset_by_time(store, cq["topic"], cq["queueId"], int(ts), "LOWER") == answer["LOWER"]
            assert lookup.offset_by_time(store, cq["topic"], cq["queueId"], int(ts), "UPPER") == answer["UPPER"]
            # RocketMQ 5.3's default boundary is LOWER
            assert lookup.offset_by_time(store, cq["topic"], cq["queueId"], int(ts)) == answer["default"]
            probes += 1
    assert probes > 50


def test_index_queries_raw_and_verified(case, dumps, manifests):
    name, store = case
    carriers: dict[tuple[str, str], set[int]] = {}
    for m in manifests[name]["messages"]:
        if m["sysFlagStored"] & 0xC == 0xC:  # rollback: never indexed
            continue
        keys = [k for k in (m["keys"] or "").split(" ") if k] + ([m["uniqKey"]] if m["uniqKey"] else [])
        for k in keys:
            carriers.setdefault((m["topic"], k), set()).add(m["physicalOffset"])
    for q in dumps[name]["indexQueries"]:
        res = lookup.query_by_key(store, q["topic"], q["key"])
        if name == "crash":
            assert set(res.raw_offsets) == set(q["indexPhyOffsets"])
        else:
            assert res.raw_offsets == q["indexPhyOffsets"]  # newest first, collisions included
        # verified answer: exactly the records that carry the key (from the manifest)
        want = sorted(carriers.get((q["topic"], q["key"]), set()))
        assert [r.physical_offset for r in res.records] == want
        assert set(want) <= set(q["queryMessagePhyOffsets"])
        assert set(res.collisions).isdisjoint(r.physical_offset for r in res.records)

