"""`rmqlab dump/lookup/queue/info/hexdump` end to end, against RocketMQ's manifests and dumps."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest

from tests.support import REFERENCE, UNDAMAGED
from rmqlab.cli import main

DUMP_KEYS = [
    "physical_offset", "total_size", "magic", "body_crc", "crc_ok", "queue_id", "flag", "queue_offset", "sys_flag",
    "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times", "prepared_transaction_offset",
    "topic", "properties", "body", "msg_id",
]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("case", UNDAMAGED)
def test_dump_json_matches_manifest(case, manifests, capsys, decoder_path):
    code, out, err = run_cli(capsys, "dump", REFERENCE / case / "store", "--json")
    assert code == 0 and err == ""
    rows = json_lines(out)
    msgs = manifests[case]["messages"]
    assert len(rows) == len(msgs)
    for row, m in zip(rows, msgs):
        assert list(row) == DUMP_KEYS
        assert row["physical_offset"] == m["physicalOffset"]
        assert row["total_size"] == m["size"]
        assert row["magic"] == (0xDAA320AB if m["messageVersion"] == "MESSAGE_VERSION_V2" else 0xDAA320A7)
        assert row["body_crc"] == m["bodyCRC"] and row["crc_ok"] is True
        assert (row["topic"], row["queue_id"], row["queue_offset"]) == (m["topic"], m["queueId"], m["queueOffset"])
        assert (row["flag"], row["sys_flag"], row["reconsume_times"]) == (m["flag"], m["sysFlagStored"], m["reconsumeTimes"])
        assert row["prepared_transaction_offset"] == m["preparedTransactionOffset"]
        assert (row["born_timestamp"], row["store_timestamp"]) == (m["bornTimestamp"], m["storeTimestamp"])
        assert (row["born_host"], row["store_host"]) == (m["bornHost"], m["storeHost"])
        assert base64.b64decode(row["body"]) == base64.b64decode(m["bodyBase64"])
        assert row["msg_id"] == m["msgId"]
        # properties: what was put, in on-disk (Java HashMap) order, plus the CRC property if on
        disk = dict(row["properties"])
        disk.pop("__CRC32#", None) if manifests[case]["storeConfig"]["enabledAppendPropCRC"] == "true" else None
        assert list(disk.items()) == [tuple(p.split("\x01", 1)) for p in m["propertiesString"].split("\x02") if p]


def test_dump_filters_and_blanks(capsys, manifests):
    store = REFERENCE / "clean" / "store"
    _, out, _ = run_cli(capsys, "dump", store, "--json", "--topic", "TopicB", "--queue", "2")
    rows = json_lines(out)
    want = [m["physicalOffset"] for m in manifests["clean"]["messages"] if m["topic"] == "TopicB" and m["queueId"] == 2]
    assert [r["physical_offset"] for r in rows] == want
    _, out, _ = run_cli(capsys, "dump", store, "--json", "--all", "--from", 65536, "--to", 131072)
    rows = json_lines(out)
    assert rows[0]["physical_offset"] == 65536 and all(65536 <= r["physical_offset"] < 131072 for r in rows)
    assert rows[-1]["kind"] == "BLANK" and rows[-1]["physical_offset"] == 81277
    _, out, _ = run_cli(capsys, "dump", store)
    assert len(out.splitlines()) == len(manifests["clean"]["messages"])


def test_lookup_every_mode(capsys, dumps, manifests):
    store = REFERENCE / "clean" / "store"
    m = next(x for x in manifests["clean"]["messages"] if x["keys"] == "k12 order-12 shared")
    for argv in (
        ["--key", "k12", "--topic", "TopicA"],
        ["--msg-id", m["msgId"]],
        ["--offset", m["physicalOffset"]],
        ["--queue", f"TopicA:0:{m['queueOffset']}"],
        ["--time", m["storeTimestamp"], "--topic", "TopicA", "--queue-id", 0, "--boundary", "UPPER"],
    ):
        code, out, err = run_cli(capsys, "lookup", store, *argv, "--json")
        assert code == 0, (argv, err)
        rows = json_lines(out)
        assert m["physicalOffset"] in [r["physical_offset"] for r in rows], argv
    # text output names the raw answer and collisions
    code, out, _ = run_cli(capsys, "lookup", store, "--key", "shared", "--topic", "TopicB", "--raw")
    q = next(x for x in dumps["clean"]["indexQueries"] if x["topic"] == "TopicB" and x["key"] == "shared")
    assert f"{len(q['indexPhyOffsets'])} index hit(s)" in out and str(q["indexPhyOffsets"][:3])[1:-1] in out
    code, out, err = run_cli(capsys, "lookup", store, "--key", "no-such-key", "--topic", "TopicA")
    assert code == 1 and "0 record(s)" in out
    code, _, err = run_cli(capsys, "lookup", store, "--key", "k1")
    assert code == 2 and "--topic" in err


def test_queue_json_matches_rocketmq_cq_units(capsys, dumps):
    cq = dumps["v2ipv6"]["consumeQueues"]
    key = next(k for k in cq if k.startswith("TopicLong"))
    code, out, _ = run_cli(capsys, "queue", REFERENCE / "v2ipv6" / "store", "--topic", cq[key]["topic"], "--queue-id", cq[key]["queueId"], "--json")
    assert code == 0
    assert json_lines(out) == [
        {"queue_offset": u["queueOffset"], "commitlog_offset": u["physicalOffset"], "size": u["size"], "tags_code": u["tagsCode"]}
        for u in cq[key]["cqUnits"]
    ]


def test_info_reports_state(capsys, dumps):
    code, out, _ = run_cli(capsys, "info", REFERENCE / "crash" / "store", "--json")
    info = json.loads(out)
    assert code == 0
    assert info["abort"] == dumps["crash"]["beforeLoad"]["abortFileContent"]
    assert info["commitlog_end_offset"] == dumps["crash"]["recovery"]["commitLogMaxOffsetAfterRecovery"]
    assert info["records"] == 640 and info["crc_failures"] == 0
    assert info["checkpoint"]["index_msg_timestamp"] == dumps["crash"]["beforeLoad"]["checkpoint"]["indexMsgTimestamp"]
    assert len(info["index_files"]) == 6 and info["config"]["maxHashSlotNum"] == 64
    code, out, _ = run_cli(capsys, "info", REFERENCE / "v2ipv6" / "store")
    assert "V2 records" in out and "IPv6 store host" in out and "__CRC32#" in out and "abort: absent" in out


def test_hexdump_annotates_fields(capsys):
    f = REFERENCE / "clean" / "store" / "commitlog" / "00000000000000000000"
    code, out, _ = run_cli(capsys, "hexdump", f, "--length", 64)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("0000000000000000: 0000 0087 daa3 20a7")
    assert "totalSize=135" in lines[0] and "magicCode=V1" in lines[0] and "queueOffset=0" in lines[1]
    code, out, _ = run_cli(capsys, "hexdump", f, "--offset", 65504, "--length", 32)
    assert "BLANK" in out and "totalSize=22" in out
    cq = REFERENCE / "clean" / "store" / "consumequeue" / "TopicA" / "0" / "00000000000000000000"
    code, out, _ = run_cli(capsys, "hexdump", cq, "--offset", 20, "--length", 20)
    assert "offset=3383" in out and "size=367" in out


def test_python_dash_m_and_console_script_agree():
    store = str(REFERENCE / "clean" / "store")
    a = subprocess.run([sys.executable, "-m", "rmqlab", "queue", store, "--topic", "TopicA", "--queue-id", "1", "--json"], capture_output=True, text=True)
    assert a.returncode == 0 and len(a.stdout.splitlines()) == 52


def test_lookup_queue_warns_when_a_unit_points_at_another_queues_record(capsys, store_copy, dumps):
    """A damaged unit of TopicA/0 points at TopicA/1's first record: RocketMQ's
    getMessage serves that record, so lookup prints it too, and warns on stderr with
    the unit's file and byte (exit 0); an intact unit gives no warning."""
    import struct

    root = store_copy("clean")
    units = dumps["clean"]["consumeQueues"]
    other = units["TopicA/1"]["cqUnits"][0]
    path = root / "consumequeue" / "TopicA" / "0" / f"{0:020d}"
    data = bytearray(path.read_bytes())
    struct.pack_into(">qi", data, 20, other["physicalOffset"], other["size"])  # unit 1
    path.write_bytes(bytes(data))
    code, out, err = run_cli(capsys, "lookup", root, "--queue", "TopicA:0:1", "--json")
    assert code == 0 and json_lines(out)[0]["physical_offset"] == other["physicalOffset"]
    assert json_lines(out)[0]["queue_id"] == 1
    assert f"{path} @ 20: unit 1 of TopicA/0 points at a record of TopicA/1" in err and "RocketMQ serves it as it is" in err
    code, out, err = run_cli(capsys, "lookup", root, "--queue", "TopicA:0:0")
    assert code == 0 and err == ""


def test_lookup_time_on_a_crashed_store_says_what_recovery_will_cut(capsys, dumps):
    """crash-torn, not recovered: TopicB/2's last unit points past the end of the log.
    lookup --time answers from the queue as it is and says, on stderr, that RocketMQ's
    recovery cuts that unit and what the queue then holds (RocketMQ's own answer)."""
    root = REFERENCE / "crash-torn" / "store"
    after = dumps["crash-torn"]["consumeQueues"]["TopicB/2"]["maxOffset"]
    code, out, err = run_cli(capsys, "lookup", root, "--time", "1795303799000", "--topic", "TopicB", "--queue-id", "2")
    assert code == 0 and "last 1 unit(s) point at or past the end of the log" in err and f"holds [0, {after})" in err
    code, out, err = run_cli(capsys, "lookup", REFERENCE / "clean" / "store", "--time", "1795303799000", "--topic", "TopicB", "--queue-id", "2")
    assert code == 0 and err == ""


@pytest.mark.parametrize("halves", [False, True], ids=["one-thread", "two-halves"])
def test_dump_json_is_json_dumps_of_every_record(tmp_path, capsys, decoder_path, halves, monkeypatch):
    """The bulk JSON writer against ``json.dumps(Record.to_dict())``, line for line, on
    values that need escaping: quotes, backslashes, control bytes, non-ASCII, empty and
    odd-length bodies, empty property values, negative and extreme integers; each batch
    written whole, or in two halves by two threads (as a large batch is)."""
    from rmqlab.engine import Message, MessageStore
    from rmqlab.scan import jsonlines, kernels
    from rmqlab.store import open_store

    monkeypatch.setattr(jsonlines, "SPLIT_FROM_ROWS", 2 if halves else 1 << 40)
    monkeypatch.setattr(kernels, "_WORKERS", 2)

    root = tmp_path / "store"
    odd = ['say "hi"', "back\\slash", "tab\there\nnewline\r\x1f\x7f", "ünïcödé ✓ 日本", ""]
    with MessageStore.open(root) as store:
        for i in range(300):
            text = odd[i % len(odd)]
            props = {"KEYS": f"k{i} {text}".strip(), "TAGS": text, "UNIQ_KEY": f"U{i:031d}", f"name{i % 3}": text}
            body = bytes(range(256))[: i % 7] + text.encode()
            msg = Message(f"Topic{'Ü' if i % 5 == 0 else ''}{i % 3}", body, props, queue_id=i % 4)
            msg.flag = [0, -1, 2**31 - 1, -(2**31)][i % 4]
            store.put(msg)
    code, out, err = run_cli(capsys, "dump", root, "--json")
    assert code == 0 and err == ""
    with open_store(root) as st:
        want = [json.dumps(r.to_dict(), ensure_ascii=False) for r in st.commitlog.iter_records()]
    assert out.splitlines() == want


def test_one_line_buffer_serves_batch_after_batch_as_buffers_of_their_own_do():
    """A batch's lines written into the buffer the batch before used (grown when a batch
    needs more room, kept when it needs less) are the lines written into a new buffer."""
    import mmap

    from rmqlab.lab.samples import shipped_dir
    from rmqlab.scan.decode import decode_file
    from rmqlab.scan.jsonlines import LineBuffer, json_line_pieces, json_lines

    path = sorted((shipped_dir() / "clean" / "commitlog").iterdir())[0]
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        batch = next(b for b in decode_file(m, int(path.name), file=str(path)) if b.num_rows >= 60)
        lines, seen = LineBuffer(), []
        for lo, n in ((0, 5), (5, 50), (55, 1), (10, 3), (0, batch.num_rows)):
            rows = batch.slice(lo, n)
            got = b"".join(bytes(p) for p in json_line_pieces(rows, lines))
            assert got == json_lines(rows) and got.count(b"\n") == n
            seen.append(lines.buf.ctypes.data)
    assert seen[2] == seen[3] == seen[1] != seen[0]  # smaller batches after a larger one: the same memory


def test_crc_ok_is_written_true_false_or_null_as_its_column_holds_it():
    """crc_ok's three values (checked good, checked bad, not checked), row by row,
    as json.dumps writes True, False and None."""
    import mmap

    import pyarrow as pa
    import pyarrow.compute as pc

    from rmqlab.lab.samples import shipped_dir
    from rmqlab.scan.decode import KIND_MESSAGE, decode_file
    from rmqlab.scan.jsonlines import json_lines

    path = sorted((shipped_dir() / "clean" / "commitlog").iterdir())[0]
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        batch = next(b for b in decode_file(m, int(path.name), file=str(path)) if b.num_rows >= 9)
        batch = batch.filter(pc.equal(batch.column("kind"), KIND_MESSAGE))
        good = json_lines(batch).splitlines()
        values = [(True, False, None)[i % 3] for i in range(batch.num_rows)]
        mixed = batch.set_column(batch.schema.get_field_index("crc_ok"), "crc_ok", pa.array(values, pa.bool_()))
        got = json_lines(mixed).splitlines()
    assert all(b'"crc_ok": true' in line for line in good)
    assert got == [line.replace(b'"crc_ok": true', b'"crc_ok": ' + json.dumps(v).encode()) for line, v in zip(good, values)]
