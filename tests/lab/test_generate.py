"""The store generator: what it writes is a RocketMQ store rmqlab's reader (and the
bulk decoder) read back exactly; consume queues and index agree with the log."""

from __future__ import annotations

import base64
import json
from collections import Counter

import pytest

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from rmqlab.format import commitlog as cl
from rmqlab.scan import decode as fd
from rmqlab.format.hashing import java_string_hash
from rmqlab.format.record import RecordError
from rmqlab.lab.generate import generate_store, parse_range, parse_size
from rmqlab.store import open_store

SMALL = MessageStoreConfig(max_hash_slot_num=500, max_index_num=2000, mapped_file_size_consume_queue=20 * 300, mapped_file_size_commit_log=128 << 10)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen") / "store"
    result = generate_store(root, "600KiB", mapped_file_size="128KiB", topics=3, queues=2, body_size="0-400", seed=7, duplicates=0.05, config=SMALL)
    return root, result


def test_sizes_parse():
    assert parse_size("2GiB") == 2 << 30 and parse_size("512m") == 512 << 20 and parse_size("4096") == 4096
    assert parse_range("100-300") == (100, 300) and parse_range("40") == (40, 40)
    with pytest.raises(ValueError):
        parse_size("lots")


def test_commitlog_reads_back_record_for_record(generated):
    root, result = generated
    store = open_store(root)
    items = list(store.commitlog.walk())
    assert not any(isinstance(i, RecordError) for i in items)
    msgs = [i for i in items if not i.is_blank]
    blanks = [i for i in items if i.is_blank]
    assert len(msgs) == result.records and result.files == len(store.commitlog.queue.files) >= 4
    assert all(m.crc_ok and m.stored_physical_offset == m.physical_offset for m in msgs)
    # Java rolls a file with a BLANK holding exactly the bytes left
    size = store.commitlog.mapped_file_size
    assert size == 128 << 10
    for b in blanks:
        assert b.total_size == size - (b.physical_offset % size)
    assert len(blanks) == result.files - 1
    # queue offsets count up from 0 in every queue; clocks move forward
    seen = Counter()
    for m in msgs:
        assert m.queue_offset == seen[(m.topic, m.queue_id)]
        seen[(m.topic, m.queue_id)] += 1
        assert m.born_timestamp < m.store_timestamp
    ts = [m.store_timestamp for m in msgs]
    assert ts == sorted(ts) and ts[-1] > ts[0]
    assert Counter(m.topic for m in msgs) == Counter(result.topics)
    assert {len(m.body) for m in msgs} <= set(range(0, 401)) and max(len(m.body) for m in msgs) > 300
    uniq = Counter(m.uniq_key for m in msgs)
    assert sum(n - 1 for n in uniq.values()) == result.duplicates > 0


def test_consume_queues_and_index_agree_with_the_log(generated):
    root, _ = generated
    store = open_store(root, SMALL)
    msgs = list(store.commitlog.iter_records())
    by_queue = {}
    for m in msgs:
        by_queue.setdefault((m.topic, m.queue_id), []).append((m.physical_offset, m.total_size, java_string_hash(m.tags) if m.tags else 0))
    assert {(q.topic, q.queue_id) for q in store.queue_ids()} == set(by_queue)
    for (topic, qid), want in by_queue.items():
        got = [(e.commitlog_offset, e.size, e.tags_code) for e in store.consume_queue(topic, qid).entries()]
        assert got == want
    for m in msgs[::97]:
        assert m.physical_offset in store.index.query_offset(m.topic, m.uniq_key)
        for key in (m.keys or "").split():
            assert m.physical_offset in store.index.query_offset(m.topic, key)


def test_bulk_decoder_reads_the_generated_store(generated, monkeypatch):
    root, _ = generated
    store = open_store(root)
    expected = [dict(r.to_dict(), kind=r.kind) for r in store.commitlog.walk()]
    rows = []
    for f in store.commitlog.queue.files:
        for b in fd.decode_file(f.buf, f.file_from_offset, file=str(f.path)):
            rows += b.to_pylist()
    assert len(rows) == len(expected)
    for r, e in zip(rows, expected):
        r = dict(r, properties=dict(r["properties"] or {}))
        if r["body"] is not None:
            r["body"] = base64.b64encode(r["body"]).decode()
        assert {k: r[k] for k in e} == e
    assert len({r["born_host"] for r in rows}) > 4


def test_same_seed_same_bytes(tmp_path):
    a = generate_store(tmp_path / "a", "70KiB", mapped_file_size="64KiB", seed=3, index=False, consume_queues=False)
    b = generate_store(tmp_path / "b", "70KiB", mapped_file_size="64KiB", seed=3, index=False, consume_queues=False)
    generate_store(tmp_path / "c", "70KiB", mapped_file_size="64KiB", seed=4, index=False, consume_queues=False)
    names = sorted(p.name for p in (tmp_path / "a" / "commitlog").iterdir())
    assert a.records == b.records and len(names) == 2
    for n in names:
        assert (tmp_path / "a" / "commitlog" / n).read_bytes() == (tmp_path / "b" / "commitlog" / n).read_bytes()
    assert (tmp_path / "a" / "commitlog" / names[0]).read_bytes() != (tmp_path / "c" / "commitlog" / names[0]).read_bytes()
    assert not (tmp_path / "a" / "consumequeue").exists()


def test_record_too_big_for_the_file_is_refused(tmp_path):
    with pytest.raises(ValueError):
        generate_store(tmp_path / "s", "10KiB", mapped_file_size="4KiB", body_size=5000, index=False, consume_queues=False)


def test_cli_generate_and_refuse_to_overwrite(tmp_path, capsys):
    root = tmp_path / "store"
    assert main(["generate", str(root), "--size", "100KiB", "--file-size", "64KiB", "--no-index", "--json", "--seed", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["files"] == 2 and out["records"] > 300
    before = (root / "commitlog" / "00000000000000000000").read_bytes()
    assert main(["generate", str(root), "--size", "100KiB"]) == 2
    assert "already holds files" in capsys.readouterr().err
    assert (root / "commitlog" / "00000000000000000000").read_bytes() == before
    assert open_store(root).commitlog.max_offset() > 64 << 10
    assert cl.MAGIC_V1 == int.from_bytes(before[4:8], "big")
