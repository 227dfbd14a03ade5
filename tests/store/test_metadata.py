"""Consumer offsets (Java ConsumerOffsetManager, persisted by ConfigManager through
fastjson) and the lag beside each queue, on a copy of a store RocketMQ wrote, with the
offsets files written in RocketMQ's format: fastjson's unquoted Integer map keys, the
``topic@group`` keys, ``dataVersion``; ``.bak`` and ``.tmp`` as MixAll.string2File
leaves them."""

from __future__ import annotations

import json

import pytest

from tests.support import REFERENCE, copy_store
from tests.support import run_rmqlab as cli
from rmqlab.errors import StoreFormatError
from rmqlab.lookup import consumer_progress
from rmqlab.store import open_store
from rmqlab.format.fastjson import parse_fastjson
from rmqlab.store.metadata import read_consumer_offsets

# what ConsumerOffsetManager.encode(true) writes (fastjson, pretty): tabs, unquoted queue ids
FASTJSON = """{
\t"dataVersion":{
\t\t"counter":7,
\t\t"stateVersion":0,
\t\t"timestamp":1795303734000
\t},
\t"offsetTable":{
\t\t"TopicA@billing":{0:40,1:53,2:0,3:10
\t\t},
\t\t"TopicB@audit{1:2}":{1:5
\t\t}
\t},
\t"pullOffsetTable":{},
\t"resetOffsetTable":{}
}"""


@pytest.fixture
def store(tmp_path):
    root = copy_store("clean", tmp_path)
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "consumerOffset.json").write_text(FASTJSON)
    return root


def test_fastjson_keys_are_read_and_strings_left_alone():
    doc = parse_fastjson(FASTJSON)
    assert doc["offsetTable"]["TopicA@billing"] == {"0": 40, "1": 53, "2": 0, "3": 10}
    assert "TopicB@audit{1:2}" in doc["offsetTable"]  # a key-like run inside a string stays as it is
    with pytest.raises(StoreFormatError) as err:
        parse_fastjson('{"offsetTable":{"a@b":{0:1,', "x.json")
    assert err.value.offset is not None


def test_lag_beside_each_queue_as_rocketmq_holds_them(store):
    dump = json.loads((REFERENCE / "clean" / "dump.json").read_text())
    manifest = json.loads((REFERENCE / "clean" / "manifest.json").read_text())["messages"]
    stored = {(m["topic"], m["queueId"], m["queueOffset"]): m["storeTimestamp"] for m in manifest}
    offsets = read_consumer_offsets(store)
    assert offsets.source.endswith("config/consumerOffset.json") and offsets.data_version["counter"] == 7 and not offsets.notes
    with open_store(store) as st:
        rows = consumer_progress(st, offsets, "billing")
    assert [r.queue_id for r in rows] == [0, 1, 2, 3]
    for r in rows:
        cq = dump["consumeQueues"][f"TopicA/{r.queue_id}"]
        assert (r.min_offset, r.max_offset) == (cq["minOffset"], cq["maxOffset"])
        assert r.lag == cq["maxOffset"] - r.committed_offset
        if r.committed_offset < cq["maxOffset"]:
            assert r.next_store_timestamp == stored[("TopicA", r.queue_id, r.committed_offset)] and r.note is None
        else:  # 53 is past TopicA/1's end: the queue lost what the group had consumed
            assert r.lag < 0 and r.next_store_timestamp is None and "past the queue's end" in r.note
    with open_store(store) as st:
        audit = consumer_progress(st, offsets, "audit{1:2}")
    assert {r.queue_id: r.committed_offset for r in audit} == {0: None, 1: 5, 2: None, 3: None}  # every queue of the topic
    assert all(r.lag == r.max_offset - (r.committed_offset or 0) for r in audit)


def test_bak_and_tmp_as_configmanager_leaves_them(store):
    cfg = store / "config"
    (cfg / "consumerOffset.json.bak").write_text(FASTJSON.replace("0:40", "0:30"))
    (cfg / "consumerOffset.json.tmp").write_text(FASTJSON[:100])  # a persist a crash interrupted
    offsets = read_consumer_offsets(store)
    assert offsets.committed("billing", "TopicA", 0) == 40
    assert any("consumerOffset.json.tmp is left over and torn" in n for n in offsets.notes)
    assert any(".bak (the previous persist) differs in 1 entry" in n for n in offsets.notes)
    (cfg / "consumerOffset.json").write_text(FASTJSON[:60])  # torn: RocketMQ's load falls back to .bak
    offsets = read_consumer_offsets(store)
    assert offsets.source.endswith(".bak") and offsets.committed("billing", "TopicA", 0) == 30
    assert any("cannot be read" in n and "RocketMQ loads consumerOffset.json.bak" in n for n in offsets.notes)


def test_offsets_command(store, tmp_path):
    out = cli("offsets", store, "--json", "--group", "billing")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert {k for k in rows[0]} >= {"group", "topic", "queue_id", "committed_offset", "min_offset", "max_offset", "lag"}
    assert [r["lag"] for r in rows if r["lag"] < 0] == [52 - 53]
    text = cli("offsets", store).stdout
    assert "billing: " in text and "message(s) not consumed yet" in text and "! committed offset 53 is past the queue's end" in text
    bare = copy_store("crash", tmp_path / "bare")
    none = cli("offsets", bare)
    assert none.returncode == 1 and "no config/consumerOffset.json" in none.stderr


def test_recovery_says_what_its_cut_costs_each_group(tmp_path):
    """crash-torn: RocketMQ's recovery cuts TopicB/2's last unit (its dump: maxOffset 52
    after recovery).  Three groups committed before the crash: one had consumed the
    cut message (its committed offset ends past the new end), two had not (lost to
    them).  After the recovery, `offsets` shows the first one's negative lag."""
    root = copy_store("crash-torn", tmp_path)
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable":{"TopicB@fast":{2:53},"TopicB@slow":{2:40},"TopicB@caught":{2:52},"TopicA@other":{2:3}}}')
    from rmqlab.recovery import recover

    rep = recover(root)
    after = json.loads((REFERENCE / "crash-torn" / "dump.json").read_text())["consumeQueues"]["TopicB/2"]["maxOffset"]
    losses = {g.group: g for g in rep.group_losses}
    assert set(losses) == {"fast", "slow", "caught"}  # TopicA/2 lost nothing
    assert all((g.cut_from, g.cut_to, g.new_max_offset) == (after, after + 1, after) for g in losses.values())
    assert (losses["fast"].unconsumed_lost, losses["fast"].committed_past_end) == (0, True)
    assert (losses["slow"].unconsumed_lost, losses["caught"].unconsumed_lost) == (1, 1)
    assert "group loss     slow on TopicB/2: 1 cut message(s)" in rep.to_text()
    out = tmp_path / "recovered"
    recover(root, out=out)

    def rows_of(store):
        return {r["group"]: r for r in map(json.loads, cli("offsets", store, "--json").stdout.splitlines()) if r["topic"] == "TopicB" and r["queue_id"] == 2}

    rows = rows_of(out)
    assert rows["fast"]["lag"] == after - 53 < 0 and rows["caught"]["lag"] == 0 and rows["slow"]["lag"] == after - 40
    # before the recovery, offsets counts the queues as that start will leave them: the same
    # max and lag, and the cut named (what it takes from each group is the report's loss)
    before = rows_of(root)
    assert {g: (r["max_offset"], r["lag"]) for g, r in before.items()} == {g: (r["max_offset"], r["lag"]) for g, r in rows.items()}
    assert {g: (r["units_cut"], r["unconsumed_cut"]) for g, r in before.items()} == {g: (1, losses[g].unconsumed_lost) for g in before}
    assert all(r["units_cut"] == 0 for r in rows.values())
    assert "OFFSET_OVERFLOW_BADLY" in before["fast"]["note"]


def test_a_bak_that_differs_only_in_data_version_is_not_a_divergence(store):
    """Every persist bumps dataVersion: a .bak with the same offsets is no note."""
    cfg = store / "config"
    (cfg / "consumerOffset.json.bak").write_text(FASTJSON.replace('"counter":7', '"counter":6'))
    (cfg / "consumerOffset.json.tmp").write_text(FASTJSON.replace('"counter":7', '"counter":8'))
    notes = read_consumer_offsets(store).notes
    assert not any(".bak" in n for n in notes) and any("holds the same content" in n for n in notes), notes


def _rocksdb_offsets(directory, table: dict[str, str], counter: int) -> None:
    """config/consumerOffsets/ as RocksDBConsumerOffsetManager.persist leaves it: a key
    per topic@group, RocksDBOffsetSerializeWrapper's JSON as its value (fastjson: the
    Integer queue ids unquoted), the dataVersion in the kvDataVersion column family
    (ConfigRocksDBStorage.KV_DATA_VERSION_KEY)."""
    from rocksdict import Options, Rdict

    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    db = Rdict(str(directory), options=opts, column_families={"kvDataVersion": Options(raw_mode=True), "forbidden": Options(raw_mode=True)})
    for key, value in table.items():
        db[key.encode()] = value.encode()
    db.get_column_family("kvDataVersion")[b"kvDataVersionKey"] = json.dumps({"counter": counter, "stateVersion": 0, "timestamp": 1795303734000}).encode()
    db.flush()
    db.close()
    (directory / "rocksdict-config.json").unlink(missing_ok=True)


def test_offsets_kept_in_rocksdb_are_read_and_merged_as_rocketmq_does(tmp_path):
    """storeType=defaultRocksDB: BrokerController makes a RocksDBConsumerOffsetManager,
    which loads config/consumerOffsets/ and takes consumerOffset.json only when its
    dataVersion counter is higher (merge)."""
    pytest.importorskip("rocksdict")
    from tests.layouts import rocksdb_consume_queue

    store = rocksdb_consume_queue(tmp_path)
    config = store / "config"
    config.mkdir(exist_ok=True)
    _rocksdb_offsets(config / "consumerOffsets", {"TopicA@billing": '{"offsetTable":{0:7,1:9}}', "TopicB@audit": '{"offsetTable":{2:1}}'}, counter=5)
    (config / "consumerOffset.json").write_text(FASTJSON)  # counter 7 > 5: RocketMQ takes the file
    got = read_consumer_offsets(store)
    assert got.table[("TopicA", "billing")] == {0: 40, 1: 53, 2: 0, 3: 10} and got.source.endswith("consumerOffset.json")
    assert any("RocksDBConsumerOffsetManager.merge" in n for n in got.notes)
    (config / "consumerOffset.json").write_text(FASTJSON.replace('"counter":7', '"counter":3'))
    got = read_consumer_offsets(store)
    assert got.source == str(config / "consumerOffsets") and got.table == {("TopicA", "billing"): {0: 7, 1: 9}, ("TopicB", "audit"): {2: 1}}
    before = sorted((p.name, p.read_bytes()) for p in (config / "consumerOffsets").iterdir())
    out = cli("offsets", store, "--group", "billing", "--json")
    rows = [json.loads(x) for x in out.stdout.splitlines()]
    assert out.returncode == 0 and {(r["queue_id"], r["committed_offset"]) for r in rows if r["committed_offset"] is not None} == {(0, 7), (1, 9)}
    with open_store(store) as s:  # the lag is counted against the RocksDB queues
        lo, hi = s.consume_queue("TopicA", 0).valid_range()
    assert next(r for r in rows if r["queue_id"] == 0)["lag"] == hi - 7
    assert sorted((p.name, p.read_bytes()) for p in (config / "consumerOffsets").iterdir()) == before


def test_topics_kept_in_rocksdb_are_read_and_merged_as_rocketmq_does(tmp_path):
    """RocksDBTopicConfigManager: config/topics/ holds a key per topic and its TopicConfig
    as fastjson writes it; topics.json's topics are put over them when its dataVersion
    counter is higher (merge).  The queue type recovery asks comes from there."""
    pytest.importorskip("rocksdict")
    from rmqlab.store.layout import recognise
    from rmqlab.store.metadata import batch_topics, read_topics
    from tests.layouts import rocksdb_consume_queue

    store = rocksdb_consume_queue(tmp_path)
    config = store / "config"
    config.mkdir(exist_ok=True)
    tc = lambda name, attrs: json.dumps({"topicName": name, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "attributes": attrs})  # noqa: E731
    _rocksdb_offsets(config / "topics", {"TopicA": tc("TopicA", {"queue.type": "BatchCQ"}), "TopicB": tc("TopicB", {})}, counter=5)
    table, source, notes = read_topics(store)
    assert source == str(config / "topics") and table["TopicA"].queue_type == "BatchCQ" and table["TopicB"].queue_type == "SimpleCQ"
    assert batch_topics(store) == ({"TopicA"}, str(config / "topics"))
    json_doc = {"topicConfigTable": {"TopicB": json.loads(tc("TopicB", {"queue.type": "BatchCQ"}))}, "dataVersion": {"counter": 7}}
    (config / "topics.json").write_text(json.dumps(json_doc))  # counter 7 > 5: its topics go over RocksDB's
    table, source, notes = read_topics(store)
    assert {t for t, c in table.items() if c.queue_type == "BatchCQ"} == {"TopicA", "TopicB"} and any("merge" in n for n in notes)
    json_doc["dataVersion"]["counter"] = 3
    (config / "topics.json").write_text(json.dumps(json_doc))
    assert batch_topics(store)[0] == {"TopicA"}
    assert any(p.path == "config/topics/" and p.handling == "read" for p in recognise(store).parts)
