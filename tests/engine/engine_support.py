"""Helpers for the engine tests: the reference stores' configs and records."""

from __future__ import annotations

import json
from pathlib import Path

from rmqlab.config import MessageStoreConfig
from rmqlab.store.reader import open_store

from tests.support import REFERENCE


def reference_config(case: str) -> MessageStoreConfig:
    """The settings RocketMQ used for ``case`` (its ``config.json``)."""
    values = json.loads((REFERENCE / case / "config.json").read_text())["storeConfig"]
    return MessageStoreConfig.from_mapping(values)


def reference_records(case: str):
    """Every MESSAGE record of the case's commitlog, as RocketMQ wrote it."""
    with open_store(REFERENCE / case / "store", reference_config(case)) as st:
        return [r for r in st.commitlog.walk() if not r.is_blank]


def store_files(root: Path, sub: str) -> dict[str, bytes]:
    base = root / sub
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}




def manifest(case: str) -> dict:
    return json.loads((REFERENCE / case / "manifest.json").read_text())


def manifest_message(m: dict):
    """A manifest entry as RocketMQ received it: same hosts, timestamps, flags and the
    properties string in Java's HashMap order."""
    import base64

    from rmqlab.engine import Message
    from rmqlab.format.msgid import parse_host

    return Message(
        m["topic"],
        base64.b64decode(m["bodyBase64"]),
        queue_id=m["queueId"],
        flag=m["flag"],
        sys_flag=m["sysFlagAsPut"],
        born_timestamp=m["bornTimestamp"],
        born_host=parse_host(m["bornHost"]),
        store_timestamp=m["storeTimestamp"],
        store_host=parse_host(m["storeHost"]),
        reconsume_times=m["reconsumeTimes"],
        prepared_transaction_offset=m["preparedTransactionOffset"],
        properties_raw=m["propertiesString"].encode("utf-8"),
    )


def index_parts(data: bytes, slots: int) -> tuple[bytes, bytes, bytes]:
    """(header, slots, entries) of an index file's bytes."""
    from rmqlab.format.indexfile import INDEX_HEADER_SIZE

    return data[:INDEX_HEADER_SIZE], data[INDEX_HEADER_SIZE : INDEX_HEADER_SIZE + 4 * slots], data[INDEX_HEADER_SIZE + 4 * slots :]


def assert_same_as_rocketmq(case: str, root: Path, *, commitlog: bool = True) -> None:
    """commitlog and consume-queue files byte-identical to RocketMQ's; index files with
    identical headers, slots and entries (their names come from the clock)."""
    cfg = reference_config(case)
    ref = REFERENCE / case / "store"
    if commitlog:
        ours, theirs = store_files(root, "commitlog"), store_files(ref, "commitlog")
        assert sorted(ours) == sorted(theirs)
        for name in theirs:
            assert ours[name] == theirs[name], f"commitlog/{name} differs"
    assert store_files(root, "consumequeue") == store_files(ref, "consumequeue")
    ours_i = [v for _, v in sorted(store_files(root, "index").items())]
    theirs_i = [v for _, v in sorted(store_files(ref, "index").items())]
    assert len(ours_i) == len(theirs_i)
    for a, b in zip(ours_i, theirs_i):
        assert index_parts(a, cfg.max_hash_slot_num) == index_parts(b, cfg.max_hash_slot_num)


def small_config(**changes) -> MessageStoreConfig:
    """Small files, so that rolls, new index files and cleanup happen in a few puts."""
    cfg = MessageStoreConfig(
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=20 * 20,
        max_hash_slot_num=64,
        max_index_num=256,
    )
    return cfg.replace(**changes)


def sample_messages(n: int, topic: str = "TopicA", queues: int = 4, body_size: int = 200):
    from rmqlab.engine import Message

    return [
        Message(
            topic,
            (f"body-{i}-".encode() * (body_size // 8 + 1))[:body_size],
            {"TAGS": f"Tag{i % 3}", "KEYS": f"key-{i} shared", "UNIQ_KEY": f"UNIQ{i:08d}", "seq": str(i)},
            queue_id=i % queues,
            born_timestamp=1_700_000_000_000 + i,
        )
        for i in range(n)
    ]
