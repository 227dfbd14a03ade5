"""``rmqlab write`` replays what ``rmqlab dump --json`` prints: RocketMQ's bytes again."""

from __future__ import annotations

import json

import pytest

from rmqlab.cli import main
from rmqlab.store.reader import open_store

from tests.engine.engine_support import REFERENCE, assert_same_as_rocketmq, reference_config


def _broker_conf(case: str, path) -> str:
    path.write_text(reference_config(case).to_properties())
    return str(path)


@pytest.mark.parametrize("case", ["clean", "v2ipv6"])
def test_dump_then_write_is_byte_identical(case, tmp_path, capsys):
    conf = _broker_conf(case, tmp_path / "broker.conf")
    assert main(["dump", str(REFERENCE / case / "store"), "--json", "--all", "--config", conf]) == 0
    dump = tmp_path / "dump.jsonl"
    dump.write_text(capsys.readouterr().out)
    root = tmp_path / "new"
    assert main(["write", str(root), "--input", str(dump), "--config", conf, "--json"]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    walk = [json.loads(line) for line in dump.read_text().splitlines()]
    messages = [w for w in walk if w.get("kind") != "BLANK"]
    assert [(r["physical_offset"], r["size"], r["queue_offset"], r["msg_id"]) for r in results] == [
        (w["physical_offset"], w["total_size"], w["queue_offset"], w["msg_id"]) for w in messages
    ]
    assert_same_as_rocketmq(case, root)  # index names differ (clock); contents equal


def test_write_into_existing_store_continues(tmp_path, capsys):
    lines = [json.dumps({"topic": "TopicA", "queue_id": 1, "properties": {"TAGS": "a", "KEYS": f"k{i}"}, "body": "aGk="}) for i in range(3)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    root = tmp_path / "s"
    assert main(["write", str(root), "--input", str(src), "--config", _broker_conf("clean", tmp_path / "b.conf")]) == 0
    assert main(["write", str(root), "--input", str(src)]) == 0  # sizes inferred from the files
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 6 and all("PUT_OK" in line for line in out)
    assert "queue_offset=5" in out[-1]
    with open_store(root) as st:
        assert [r.body for r in st.commitlog.iter_records()] == [b"hi"] * 6


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text('{"topic": "bad topic!", "body": ""}\n{"topic": "T", "body": "not base64!!"}\n')
    conf = _broker_conf("clean", tmp_path / "b.conf")
    assert main(["write", str(tmp_path / "s"), "--input", str(src), "--config", conf]) == 2
    cap = capsys.readouterr()
    assert "MESSAGE_ILLEGAL" in cap.out
    assert "line 2" in cap.err and "base64" in cap.err and "Traceback" not in cap.err
    assert main(["write", str(tmp_path / "s"), "--input", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read input" in capsys.readouterr().err


def test_input_bad_from_its_first_line_creates_no_store(tmp_path, capsys):
    """A missing input, or one whose first message is bad, leaves no new store behind;
    a bad line later keeps the messages before it (the error names the line); an empty
    input still creates the store it was asked for."""
    conf = _broker_conf("clean", tmp_path / "b.conf")
    bad_first = tmp_path / "bad.jsonl"
    bad_first.write_text('\n{"topic": "T", "queue_id": "x", "body": ""}\n')
    for src in (tmp_path / "missing.jsonl", bad_first):
        assert main(["write", str(tmp_path / "s1"), "--input", str(src), "--config", conf]) == 2
        assert str(src.name) in capsys.readouterr().err
        assert not (tmp_path / "s1").exists()
    later = tmp_path / "later.jsonl"
    later.write_text('{"topic": "T", "body": "YQ=="}\n{"topic": "T", "queue_id": "x", "body": ""}\n')
    assert main(["write", str(tmp_path / "s2"), "--input", str(later), "--config", conf]) == 2
    assert "later.jsonl line 2" in capsys.readouterr().err
    with open_store(tmp_path / "s2", reference_config("clean")) as st:
        assert [r.body for r in st.commitlog.iter_records()] == [b"a"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["write", str(tmp_path / "s3"), "--input", str(empty), "--config", conf]) == 0
    assert (tmp_path / "s3" / "commitlog").is_dir()


def test_refuses_a_locked_store(tmp_path, capsys):
    from rmqlab.engine import MessageStore

    from tests.engine.engine_support import small_config

    src = tmp_path / "in.jsonl"
    src.write_text('{"topic": "T", "body": ""}\n')
    store = MessageStore.open(tmp_path / "s", small_config(), services=False)
    try:
        assert main(["write", str(tmp_path / "s"), "--input", str(src)]) == 2
        assert "lock" in capsys.readouterr().err
    finally:
        store.shutdown()
