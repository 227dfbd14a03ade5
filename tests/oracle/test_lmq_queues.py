"""LMQ queues written by RocketMQ itself (``enableLmq``, ``enableMultiDispatch``): the
units of ``%LMQ%…`` queues point at the records of other topics that name them in
``INNER_MULTI_DISPATCH``; rmqlab reads them as RocketMQ does, verify checks each
against its record (ConsumeQueue.multiDispatchLmqQueue) and finds damage to them."""

from __future__ import annotations

import shutil
import struct

import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.forensics.verify import verify_store
from rmqlab.store import open_store

from tests.oracle.compare import compare_messages, compare_queues
from tests.oracle.production import loaded, write_lmq_store


@pytest.fixture(scope="module")
def lmq_store(oracle, tmp_path_factory):
    return loaded(oracle, write_lmq_store(oracle, tmp_path_factory.mktemp("lmq"), seed=501))


def test_lmq_queues_read_and_verify_as_rocketmq_wrote_them(lmq_store):
    root, config, dump = lmq_store
    lmq = sorted(q for q in dump["consumeQueues"] if q.startswith("%LMQ%"))
    assert len(lmq) >= 2 and all(q.endswith("/0") for q in lmq)  # queue 0, as MixAll.isLmq makes it
    cfg = MessageStoreConfig.from_mapping(config)
    with open_store(root, cfg) as store:
        assert store.layout.lmq_topics == sorted(q.split("/")[0] for q in lmq)
        assert compare_queues(store, dump) == [] and compare_messages(store, dump) == []
    rep = verify_store(root, cfg)
    units = sum(dump["consumeQueues"][q]["maxOffset"] - dump["consumeQueues"][q]["minOffset"] for q in lmq)
    assert rep.findings == [] and rep.stats["lmq_entries"] == units > 20


@pytest.mark.parametrize("at, value, kind", [
    (0, struct.pack(">q", 1), "LMQ_DANGLING"),     # no record starts there
    (8, struct.pack(">i", 7), "LMQ_MISMATCH"),     # the wrong size
    (12, struct.pack(">q", 99), "LMQ_MISMATCH"),   # the wrong tagsCode
])
def test_damage_to_an_lmq_unit_is_named(lmq_store, tmp_path, at, value, kind):
    root, config, _ = lmq_store
    copy = shutil.copytree(root, tmp_path / "store")
    f = sorted((copy / "consumequeue" / "%LMQ%room0" / "0").iterdir())[0]
    with open(f, "r+b") as fh:
        fh.seek(20 * 2 + at)  # unit 2
        fh.write(value)
    rep = verify_store(copy, MessageStoreConfig.from_mapping(config))
    assert [(x.kind, x.file, x.offset) for x in rep.findings] == [(kind, str(f), 40)]
