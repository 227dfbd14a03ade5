"""Seeded random workloads and store damage for the differential tests against RocketMQ.

A workload is a store configuration (RocketMQ's setting names) and a list of JSON lines
in the shape ``rmqlab dump --json`` prints and ``rmqlab write`` takes; a line
``{"batch": [...], "topic": T, "queue_id": Q}`` is one producer batch (Java
``MessageBatch``: RocketMQ's ``putMessages``, rmqlab's ``put_batch`` of a
``MessageBatch``).  Messages are given as the store receives them from a broker: a
delayed message is already rewritten to ``SCHEDULE_TOPIC_XXXX`` (Java
``HookUtils.handleScheduleMessage``), so both stores write the same records.

Everything is drawn from ``random.Random(seed)``: a seed names a workload, so a
difference found in a long run is reproduced from its seed alone.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

from rmqlab.config import MessageStoreConfig
from rmqlab.engine import Message, MessageBatch, MessageStore
from rmqlab.format import properties as props
from rmqlab.rules import SCHEDULE_TOPIC

LONG_TOPIC = "T" + "x" * 149  # > 127 bytes: a V2 record (2-byte topic length)
TOPICS = ["TopicA", "TopicB", "Orders-%d" % 7, LONG_TOPIC, "RMQ_SYS_TRANS_HALF_TOPIC"]
HOSTS_V4 = ["127.0.0.1:50000", "10.1.2.3:41234", "192.168.7.9:1"]
HOSTS_V6 = ["0:0:0:0:0:0:0:1:10911", "fe80:0:0:0:0:0:0:1:50001", "2001:db8:0:0:0:0:0:7:9876"]
BORN_BASE = 1_700_000_000_000


def random_config(rng: random.Random, release: str = "5.3.3") -> dict[str, str]:
    """Small files so that rolls, BLANK records and several index files happen.  Index
    files hold at least 255 entries: RocketMQ names a new index file by the wall clock
    in milliseconds, and files that fill faster than that collide (see
    :func:`tests.oracle.compare.index_file_name_collisions`)."""
    slots = rng.choice([64, 128])
    config = {
        "mappedFileSizeCommitLog": str(rng.choice([16384, 32768, 65536])),
        "mappedFileSizeConsumeQueue": str(20 * rng.choice([5, 20, 300])),
        "maxHashSlotNum": str(slots),
        "maxIndexNum": str(slots * rng.choice([4, 8])),
        "messageIndexEnable": "true",
        "flushDiskType": rng.choice(["ASYNC_FLUSH", "SYNC_FLUSH"]),
        "enabledAppendPropCRC": rng.choice(["false", "false", "true"]),
        "checkCRCOnRecover": "true",
    }
    if release.startswith("4."):
        config["enabledAppendPropCRC"] = "false"  # 4.9 has no property CRC (drawn all the same: seeds keep their workloads)
    return config


def _body(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.1:
        raw = b""
    elif kind < 0.4:
        raw = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64)))
    elif kind < 0.9:
        raw = ("hello-%d " % rng.randint(0, 10**6) * rng.randint(1, 20)).encode()
    else:
        raw = os.urandom(0) + bytes(rng.getrandbits(8) for _ in range(rng.randint(1000, 3000)))
    return base64.b64encode(raw).decode()


def _uniq(rng: random.Random) -> str:
    return "%032X" % rng.getrandbits(128)


def _user_properties(rng: random.Random, p: dict[str, str]) -> None:
    for _ in range(rng.randint(0, 3)):
        name = rng.choice(["color", "seq", "trace", "région", "k"])
        p[name] = rng.choice(["blue", str(rng.randint(0, 999)), "日本語", "a b", "x" * rng.randint(1, 40)])


def _properties(rng: random.Random, key_pool: list[str]) -> dict[str, str]:
    p: dict[str, str] = {}
    r = rng.random()
    if r < 0.7:
        p[props.TAGS] = rng.choice(["Tag0", "Tag1", "Tag2", "TagX", "*"])
    if rng.random() < 0.7:
        keys = rng.sample(key_pool, rng.randint(1, 3))
        sep = "  " if rng.random() < 0.1 else " "  # a double space: an empty key, skipped
        p[props.KEYS] = sep.join(keys)
    if rng.random() < 0.85:
        p[props.UNIQ_KEY] = _uniq(rng)
    _user_properties(rng, p)
    return p


def random_message(rng: random.Random, seq: int, key_pool: list[str], topics: list[str] = TOPICS) -> dict[str, Any]:
    topic = rng.choice(topics)
    m: dict[str, Any] = {"topic": topic, "queue_id": rng.randint(0, 3), "flag": rng.choice([0, 0, 1, 255, -1]),
                         "properties": _properties(rng, key_pool), "body": _body(rng)}
    r = rng.random()
    if r < 0.08:  # a delayed message, as the broker rewrites it (HookUtils.handleScheduleMessage)
        level = rng.choice(["1", "3", "18", "0", "-1", "40"])
        p = m["properties"]
        p[props.DELAY] = level
        p["REAL_TOPIC"] = topic
        p["REAL_QID"] = str(m["queue_id"])
        m["topic"] = SCHEDULE_TOPIC
        m["queue_id"] = max(int(level), 1) - 1 if level.lstrip("-").isdigit() else 0
        m["queue_id"] = min(m["queue_id"], 17)
    elif r < 0.16:  # transactions: PREPARED and ROLLBACK get no queue entry
        m["sys_flag"] = rng.choice([4, 8, 12])
        m["prepared_transaction_offset"] = rng.randint(0, 10**6)
    m["born_timestamp"] = BORN_BASE + seq * 1000
    m["born_host"] = rng.choice(HOSTS_V6 if rng.random() < 0.15 else HOSTS_V4)
    m["store_host"] = rng.choice(HOSTS_V6 if rng.random() < 0.15 else ["127.0.0.1:10911"])
    if rng.random() < 0.1:
        m["reconsume_times"] = rng.randint(1, 16)
    return m


def random_batch(rng: random.Random, key_pool: list[str]) -> dict[str, Any]:
    topic = rng.choice(TOPICS[:3])
    entries = []
    for _ in range(rng.randint(1, 6)):
        e = {"flag": rng.choice([0, 3]), "properties": _properties(rng, key_pool), "body": _body(rng)}
        entries.append(e)
    return {"batch": entries, "topic": topic, "queue_id": rng.randint(0, 3)}


def random_workload(seed: int, n: int | None = None, release: str = "5.3.3") -> tuple[dict[str, str], list[dict[str, Any]]]:
    """``release`` "4.9.7": what a 4.9 broker can store (V1 records only: no topic over
    127 bytes; no property CRC)."""
    rng = random.Random(seed)
    config = random_config(rng, release)
    topics = [t for t in TOPICS if len(t) <= 127] if release.startswith("4.") else TOPICS
    key_pool = ["k%d" % i for i in range(rng.randint(3, 40))] + ["shared", "ключ"]
    lines = []
    for seq in range(n if n is not None else rng.randint(20, 400)):
        lines.append(random_batch(rng, key_pool) if rng.random() < 0.06 else random_message(rng, seq, key_pool, topics))
    return config, lines


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(l, ensure_ascii=False) + "\n" for l in lines), encoding="utf-8")
    return path


# -- rmqlab writes ------------------------------------------------------------------------
def rmqlab_write(directory: Path, config: dict[str, str], lines: list[dict[str, Any]], *, crash: bool = False) -> list:
    """Put the workload with rmqlab's engine (no broker rewrite: the lines already are
    what the store receives); shut down cleanly, or ``crash`` (no flush, abort left)."""
    cfg = MessageStoreConfig.from_mapping(config)
    store = MessageStore.open(directory, cfg, broker_rewrites=False)
    results = []
    try:
        for i, line in enumerate(lines):
            if "batch" in line:
                msgs = [Message.from_dict({"topic": line["topic"], **e}, f"line {i + 1}") for e in line["batch"]]
                results.append(store.put_batch(MessageBatch.from_messages(msgs, queue_id=line["queue_id"])))
            else:
                results.append(store.put(Message.from_dict(line, f"line {i + 1}")))
    except BaseException:
        store.crash()
        raise
    if crash:
        store.crash()
    else:
        store.shutdown()
    return results


# -- damage -------------------------------------------------------------------------------
DAMAGE_KINDS = ["flip", "zero_page", "torn_tail", "cut_file", "delete_queue", "delete_index", "old_checkpoint", "garbage_after_end", "zero_queue_tail"]


def _files(root: Path, sub: str) -> list[Path]:
    d = root / sub
    return sorted(p for p in d.rglob("*") if p.is_file()) if d.is_dir() else []


def _last_data_end(path: Path) -> int:
    data = path.read_bytes()
    return len(data.rstrip(b"\0"))


def damage(root: Path, seed: int) -> dict[str, Any]:
    """Damage a crashed store the way disks and crashes do; returns what was done."""
    rng = random.Random(seed)
    kind = DAMAGE_KINDS[seed % len(DAMAGE_KINDS)]
    logs = [p for p in _files(root, "commitlog") if p.stat().st_size]
    what: dict[str, Any] = {"kind": kind, "seed": seed}
    if not logs:
        return what
    written = [p for p in logs if _last_data_end(p) > 0] or logs
    if kind == "flip":
        f = rng.choice(written)
        end = max(_last_data_end(f), 1)
        with open(f, "r+b") as fh:
            for _ in range(rng.randint(1, 4)):
                off = rng.randrange(end)
                fh.seek(off)
                b = fh.read(1)
                fh.seek(off)
                fh.write(bytes([b[0] ^ (1 << rng.randrange(8))]))
                what.setdefault("offsets", []).append(off)
        what["file"] = f.name
    elif kind == "zero_page":
        f = rng.choice(written)
        end = max(_last_data_end(f), 1)
        off = rng.randrange(0, end, 4096) if end > 4096 else 0
        with open(f, "r+b") as fh:
            fh.seek(off)
            fh.write(bytes(4096 if off + 4096 <= f.stat().st_size else f.stat().st_size - off))
        what.update(file=f.name, offset=off)
    elif kind == "torn_tail":
        f = written[-1]
        end = _last_data_end(f)
        cut = rng.randint(1, min(end, 600))
        with open(f, "r+b") as fh:
            fh.seek(end - cut)
            fh.write(bytes(cut))
        what.update(file=f.name, zeroed=cut)
    elif kind == "cut_file":
        f = written[-1]
        end = _last_data_end(f)
        size = rng.randrange(0, max(end, 1))
        os.truncate(f, size)
        what.update(file=f.name, size=size)
    elif kind == "delete_queue":
        queues = [p for p in (root / "consumequeue").glob("*/*") if p.is_dir()]
        if queues:
            q = rng.choice(sorted(queues))
            shutil.rmtree(q)
            what["queue"] = f"{q.parent.name}/{q.name}"
    elif kind == "delete_index":
        shutil.rmtree(root / "index", ignore_errors=True)
    elif kind == "old_checkpoint":
        cp = root / "checkpoint"
        if cp.exists():
            with open(cp, "r+b") as fh:
                fh.write(bytes(24))  # physic, logics and index timestamps of 0: the oldest possible
    elif kind == "garbage_after_end":
        f = written[-1]
        end = _last_data_end(f)
        n = rng.randint(1, 200)
        if end + n <= f.stat().st_size:
            with open(f, "r+b") as fh:
                fh.seek(end)
                fh.write(bytes(rng.randint(1, 255) for _ in range(n)))
            what.update(file=f.name, offset=end, length=n)
    elif kind == "zero_queue_tail":
        qfiles = [p for p in _files(root, "consumequeue") if _last_data_end(p)]
        if qfiles:
            f = rng.choice(qfiles)
            end = _last_data_end(f)
            n = 20 * rng.randint(1, 3)
            start = max(0, (end + 19) // 20 * 20 - n)
            with open(f, "r+b") as fh:
                fh.seek(start)
                fh.write(bytes(n))
            what.update(file=str(f.relative_to(root)), offset=start, length=n)
    return what


#: damage whose outcome the start-up rules of 5.4 and 5.5 decide (the capped walk back,
#: the whole first record, the checkpoint's logicsPhysicalOffset), for stores of more
#: than ten commitlog files (:func:`long_workload`)
RELEASE_DAMAGE_KINDS = ["far_back", "logics_offset", "first_record", "queues_deleted"]


def long_workload(seed: int, release: str = "5.3.3") -> tuple[dict[str, str], list[dict[str, Any]]]:
    """A workload whose store spans more than ten 16 KiB commitlog files (about 30)."""
    config, lines = random_workload(seed, n=900, release=release)
    config["mappedFileSizeCommitLog"] = "16384"
    return config, lines


def _body_at(data: bytes | bytearray, pos: int) -> int | None:
    """Where the body of the record at ``pos`` starts, when it has one of a few bytes."""
    from rmqlab.format.record import RecordError, decode_record

    try:
        r = decode_record(data, pos, check_crc=False)
    except RecordError:
        return None
    if r is None or r.is_blank or len(r.body) < 4:
        return None
    at = bytes(data).find(r.body, pos)
    return at if 0 <= at < pos + r.total_size else None


def release_damage(root: Path, seed: int) -> dict[str, Any]:
    """Damage a crashed store of :func:`long_workload` where the releases' start-up
    rules part; returns what was done."""
    import struct

    rng = random.Random(seed)
    kind = RELEASE_DAMAGE_KINDS[seed % len(RELEASE_DAMAGE_KINDS)]
    what: dict[str, Any] = {"kind": kind, "seed": seed}
    written = [p for p in _files(root, "commitlog") if _last_data_end(p) > 0]
    cp = root / "checkpoint"
    if kind == "far_back" and len(written) > 3:
        # a crash more than ten files back from the end: no checkpoint to start from, and
        # a record's body damaged in an early file (RocketMQ ≤ 5.3 ends the log there)
        cp.write_bytes(bytes(4096))
        f = written[rng.randrange(1, min(4, len(written) - 1))]
        data = bytearray(f.read_bytes())
        pos = 0
        for _ in range(rng.randint(1, 6)):
            size = struct.unpack_from(">i", data, pos)[0]
            if size <= 0 or pos + size >= len(data):
                break
            pos += size
        at = _body_at(data, pos)
        if at is not None:
            data[at + 1] ^= 0x5A
            f.write_bytes(bytes(data))
            what.update(file=f.name, offset=at + 1)
    elif kind == "logics_offset" and cp.exists():
        # the checkpoint's logicsPhysicalOffset (5.5+) disagreeing with the queues: the
        # start of an older or newer file
        f = rng.choice(written)
        with open(cp, "r+b") as fh:
            fh.seek(40)
            fh.write(struct.pack(">q", int(f.name) + rng.choice([0, 0, 1])))
        what.update(logics_physical_offset=int(f.name))
    elif kind == "first_record" and written:
        # the first record of one of the newest files damaged: 5.4+ decodes it whole
        # before it starts there (isMappedFileMatchedRecover)
        f = rng.choice(written[-12:])
        data = bytearray(f.read_bytes())
        at = _body_at(data, 0)
        if at is not None:
            data[at] ^= 0xA5
            f.write_bytes(bytes(data))
            what.update(file=f.name, offset=at)
    elif kind == "queues_deleted":
        shutil.rmtree(root / "consumequeue", ignore_errors=True)
    return what


#: damage to a log's or a queue's older files, not their tail (what made RocketMQ 5.3.3
#: and rmqlab part on hand-picked stores): a commitlog file missing from the middle, an
#: early unit of a queue zeroed, a queue's first file deleted, units pointing past the
#: end of the log appended to a queue, the last commitlog file holding data deleted with
#: the pre-allocated empty file after it left (RocketMQ loads the log with the gap)
OLDER_DAMAGE_KINDS = ["missing_file", "zero_old_unit", "first_cq_file_deleted", "units_past_end", "last_data_file_gone"]


def older_damage(root: Path, seed: int) -> dict[str, Any]:
    """Damage a crashed store's older files (:data:`OLDER_DAMAGE_KINDS`); returns what was done."""
    import struct

    rng = random.Random(seed)
    kind = OLDER_DAMAGE_KINDS[seed % len(OLDER_DAMAGE_KINDS)]
    what: dict[str, Any] = {"kind": kind, "seed": seed}
    logs = [p for p in _files(root, "commitlog") if _last_data_end(p) > 0]
    queues = sorted(q for q in (root / "consumequeue").glob("*/*") if q.is_dir())
    several = [q for q in queues if len([f for f in q.iterdir() if f.is_file()]) >= 2]
    if kind == "missing_file" and len(logs) >= 3:
        f = logs[rng.randrange(1, len(logs) - 1)]
        f.unlink()
        what["file"] = f.name
    elif kind == "zero_old_unit" and several:
        q = rng.choice(several)
        f = sorted(q.iterdir())[0]
        n = _last_data_end(f) // 20
        if n:
            at = 20 * rng.randrange(n)
            with open(f, "r+b") as fh:
                fh.seek(at)
                fh.write(bytes(20))
            what.update(file=str(f.relative_to(root)), offset=at)
    elif kind == "first_cq_file_deleted" and several:
        q = rng.choice(several)
        f = sorted(q.iterdir())[0]
        f.unlink()
        what["file"] = str(f.relative_to(root))
    elif kind == "last_data_file_gone" and len(logs) >= 2 and _files(root, "commitlog")[-1] != logs[-1]:
        logs[-1].unlink()
        what["file"] = logs[-1].name
    elif kind == "units_past_end" and queues and logs:
        q = rng.choice(queues)
        f = sorted(q.iterdir())[-1]
        end = (_last_data_end(f) + 19) // 20 * 20
        log_end = int(logs[-1].name) + _last_data_end(logs[-1])
        units = b"".join(struct.pack(">qiq", log_end + 1000 * (i + 1), 100, 0) for i in range(3))
        if end + len(units) <= f.stat().st_size:
            with open(f, "r+b") as fh:
                fh.seek(end)
                fh.write(units)
            what.update(file=str(f.relative_to(root)), offset=end)
    return what


#: the topics of :func:`odd_topics_workload`: a 131-byte name (a V2 record), a retry
#: topic, a trace topic (``rmq_sys_TRACE_DATA_*``), and two plain ones
ODD_TOPICS = ["L" * 131, "%RETRY%group_a", "rmq_sys_TRACE_DATA_eu", "TopicA", "Orders-7"]


def odd_topics_workload(seed: int, release: str = "5.3.3", n: int = 2500) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """A store shaped as brokers' are where their recoveries were seen to part: long, odd
    and system topic names (:data:`ODD_TOPICS`) over six queues each, 40 KiB commitlog
    files (about 25), consume-queue files of 40 or 300 units (queues of several files),
    index files of 128 slots × 512 entries, either flush, CRC checked on recovery.  4.9
    stores drop the 131-byte topic (a V1 record holds 127 bytes)."""
    rng = random.Random(seed)
    config = {
        "mappedFileSizeCommitLog": "40960",
        "mappedFileSizeConsumeQueue": str(20 * rng.choice([40, 300])),
        "maxHashSlotNum": "128",
        "maxIndexNum": "512",
        "messageIndexEnable": "true",
        "flushDiskType": rng.choice(["ASYNC_FLUSH", "SYNC_FLUSH"]),
        "enabledAppendPropCRC": "false",
        "checkCRCOnRecover": "true",
    }
    topics = [t for t in ODD_TOPICS if len(t) <= 127] if release.startswith("4.") else ODD_TOPICS
    key_pool = ["k%d" % i for i in range(30)] + ["shared"]
    lines = []
    for seq in range(n):
        m = random_message(rng, seq, key_pool, topics)
        if m["topic"] != SCHEDULE_TOPIC:
            m["queue_id"] = rng.randrange(6)
        lines.append(m)
    return config, lines


def broker_checkpoint(root: Path, back: int = 3) -> dict[str, int]:
    """Write the checkpoint a broker flushes while it dispatches (the harness copies a
    crashed store before its first flush, so its checkpoint is zeros): every timestamp
    that of a record in the middle of the data file ``back`` from the newest, and that
    record's start as logicsPhysicalOffset (5.5: ``ConsumeQueue`` sets it to a dispatched
    record's commitLogOffset).  Returns the file, its records and the record's index."""
    import struct

    from rmqlab.format.layout import store_timestamp_at

    files = [p for p in _files(root, "commitlog") if _records(p)]
    f = files[-min(back, len(files))]
    records = _records(f)
    k = len(records) // 2
    ts = store_timestamp_at(f.read_bytes(), records[k][0])
    with open(root / "checkpoint", "r+b") as fh:
        fh.write(struct.pack(">qqq", ts, ts, ts))
        fh.seek(40)
        fh.write(struct.pack(">q", int(f.name) + records[k][0]))
    return {"file": f, "records": records, "k": k}


def _records(path: Path) -> list[tuple[int, int]]:
    """(start, totalSize) of each message record of a commitlog file, up to a BLANK or zeros."""
    import struct

    from rmqlab.format import commitlog as cl

    data, pos, out = path.read_bytes(), 0, []
    while pos + 8 <= len(data):
        size, magic = struct.unpack_from(">iI", data, pos)
        if size <= 0 or magic not in cl.MESSAGE_MAGICS:
            break
        out.append((pos, size))
        pos += size
    return out
