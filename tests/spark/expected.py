"""What the single-process reader says a source's rows are, for tests that read the
same store through Spark elsewhere (a cluster, Spark Connect, object storage)."""

from __future__ import annotations

import base64
import os

from rmqlab.format.record import RecordError
from rmqlab.store import open_store


def commitlog_rows(root, config=None) -> list[dict]:
    """One dict per record or damage, in log order (``rmqlab dump --json``'s fields);
    ``config``: the store's settings (the directories of a log spread over several)."""
    out = []
    with open_store(root, config) as store:
        for item in store.commitlog.walk():
            if isinstance(item, RecordError):
                out.append({"kind": item.kind, "error": str(item)})
                continue
            d = item.to_dict()
            d.update(kind=item.kind, file=item.file)
            if not item.is_blank:  # the source's key columns: the properties RocketMQ's map holds
                d.update(keys=item.java_properties.get("KEYS"), uniq_key=item.java_properties.get("UNIQ_KEY"))
            out.append(d)
    return out


def assert_commitlog_rows(rows: list[dict], root, *, where: str = "", config=None) -> None:
    """``rows`` (a source's, any order) are the reader's; ``file`` and ``error`` may name
    the store by URI, so they are compared by the file's name."""
    rows = sorted(rows, key=lambda r: r["physical_offset"])
    expected = commitlog_rows(root, config)
    assert len(rows) == len(expected), where
    for exp, row in zip(expected, rows):
        if "error" in exp:
            assert row["kind"] == exp["kind"] and os.path.basename(exp["error"].split(" @ ")[0]) in row["error"], where
            continue
        for key, value in exp.items():
            got = row[key]
            if key == "body":
                got = base64.b64encode(got).decode("ascii")
            if key == "file":
                got, value = os.path.basename(got), os.path.basename(value)
            assert got == value, (where, exp["physical_offset"], key)
        assert row["error"] is None, where


def queue_rows(root, config=None) -> list[tuple]:
    """(topic, queue, offset, commitlog offset, size, tagsCode, the ext unit's tagsCode or None)."""
    from rmqlab.format.consumequeue import is_ext_addr

    out = []
    with open_store(root, config) as store:
        for q in store.queue_ids():
            ext = store.consume_queue_ext(q.topic, q.queue_id)
            for e in store.consume_queue(q.topic, q.queue_id).entries():
                x = ext.unit(e.tags_code).tags_code if ext is not None and is_ext_addr(e.tags_code) else None
                out.append((q.topic, q.queue_id, e.queue_offset, e.commitlog_offset, e.size, e.tags_code, x))
    return sorted(out)


def index_rows(root) -> list[tuple]:
    """(file name, entry, key hash, phy offset, time diff, prev index) of every used entry."""
    out = []
    with open_store(root) as store:
        for f in store.index.files:
            e = f.entries()
            for n in range(1, f.index_count):
                out.append((f.path.name, n, *(int(e[n][k]) for k in ("key_hash", "phy_offset", "time_diff", "prev_index"))))
    return sorted(out)


def as_index_rows(rows: list[dict]) -> list[tuple]:
    return sorted((os.path.basename(r["file"]), r["entry"], r["key_hash"], r["phy_offset"], r["time_diff"], r["prev_index"]) for r in rows)


def as_queue_rows(rows: list[dict]) -> list[tuple]:
    return sorted((r["topic"], r["queue_id"], r["queue_offset"], r["commitlog_offset"], r["size"], r["tags_code"], r["ext_tags_code"]) for r in rows)
