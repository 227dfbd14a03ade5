"""Dispatch rebuilds RocketMQ's consume queues and index from RocketMQ's commitlog."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.writers.dispatch import CommitLogDispatcher
from rmqlab.rules import parse_delay_levels
from rmqlab.scan.dispatch_request import request_from_record
from rmqlab.scan.hashes import java_string_hashes
from rmqlab.format.hashing import java_string_hash

from tests.engine.engine_support import REFERENCE, assert_same_as_rocketmq, reference_config, store_files


def _assert_same_as_rocketmq(case: str, root) -> None:
    assert_same_as_rocketmq(case, root, commitlog=False)


@pytest.mark.parametrize("case", ["clean", "v2ipv6"])
@pytest.mark.parametrize("mode", ["one-by-one", "batches"])
def test_rebuild_is_byte_identical(case, mode, tmp_path, ref_records):
    recs = ref_records(case)
    with CommitLogDispatcher(tmp_path, reference_config(case)) as d:
        if mode == "one-by-one":
            for r in recs:
                d.dispatch(r)
        else:
            for i in range(0, len(recs), 97):
                d.dispatch_records(recs[i : i + 97])
        d.flush()
    _assert_same_as_rocketmq(case, tmp_path)


def test_redispatch_is_idempotent(tmp_path, ref_records):
    recs = ref_records("clean")
    cfg = reference_config("clean")
    with CommitLogDispatcher(tmp_path, cfg) as d:
        d.dispatch_records(recs)
    # reopen (positions recovered from the files) and feed a tail again; the last
    # record is left out: it sits *at* the index's endPhyOffset, and Java's
    # buildIndex only skips records *below* it (see the next test)
    with CommitLogDispatcher(tmp_path, cfg) as d:
        d.dispatch_records(recs[-200:-1])
        for r in recs[-50:-1]:
            d.dispatch(r)
    _assert_same_as_rocketmq("clean", tmp_path)


def test_record_at_end_phy_offset_is_indexed_again(tmp_path, ref_records):
    """Java ``buildIndex`` returns only when ``offset < endPhyOffset``: re-dispatching
    the newest indexed record adds its keys once more, while its consume-queue entry
    is skipped."""
    recs = ref_records("clean")
    cfg = reference_config("clean")
    with CommitLogDispatcher(tmp_path, cfg) as d:
        d.dispatch_records(recs)
        last = d.index.last
        count = last.index_count
        n_keys = (recs[-1].uniq_key is not None) + len([k for k in (recs[-1].keys or "").split(" ") if k])
        cq_before = store_files(tmp_path, "consumequeue")
        d.dispatch(recs[-1])
        assert last.index_count == count + n_keys
        assert store_files(tmp_path, "consumequeue") == cq_before


def test_truncate_then_redispatch(tmp_path, ref_records):
    recs = ref_records("clean")
    cfg = reference_config("clean")
    cut_at = recs[400].physical_offset
    with CommitLogDispatcher(tmp_path, cfg) as d:
        d.dispatch_records(recs)
        cut = d.truncate_dirty(cut_at)
        expected_cut = sum(1 for r in recs[400:] if r.transaction_type in (0, 8))
        assert cut == expected_cut
        assert d.max_physic_offset <= cut_at
    # the files now end before cut_at, as the reader sees them
    from rmqlab.store.reader import open_store

    with open_store(tmp_path if (tmp_path / "commitlog").is_dir() else _with_commitlog(tmp_path), cfg) as st:
        for qid in st.queue_ids():
            for e in st.consume_queue(qid.topic, qid.queue_id).entries():
                assert e.commitlog_offset < cut_at
    with CommitLogDispatcher(tmp_path, cfg) as d:
        d.dispatch_records(recs[400:])
    assert store_files(tmp_path, "consumequeue") == store_files(REFERENCE / "clean" / "store", "consumequeue")


def _with_commitlog(root):
    (root / "commitlog").mkdir(exist_ok=True)
    return root


def test_transactions_and_delay(ref_records):
    """PREPARED/ROLLBACK get no consume-queue entry; the delayed record's tagsCode is
    the delivery time (storeTimestamp + 10 s for level 3)."""
    recs = {r.physical_offset: r for r in ref_records("clean")}
    import json

    manifest = json.loads((REFERENCE / "clean" / "manifest.json").read_text())["messages"]
    delayed = next(m for m in manifest if m["topic"] == "SCHEDULE_TOPIC_XXXX")
    req = request_from_record(recs[delayed["physicalOffset"]], parse_delay_levels(reference_config("clean").message_delay_level))
    assert req.tags_code == delayed["storeTimestamp"] + 10_000
    dump = json.loads((REFERENCE / "clean" / "dump.json").read_text())
    assert [u["tagsCode"] for u in dump["consumeQueues"]["SCHEDULE_TOPIC_XXXX/2"]["cqUnits"]] == [req.tags_code]
    # PREPARED (sysFlag 4) and ROLLBACK (12) records appear in no queue
    in_queues = {u["physicalOffset"] for q in dump["consumeQueues"].values() for u in q["cqUnits"]}
    tx = [m for m in manifest if m["sysFlagAsPut"] in (4, 12)]
    assert len(tx) == 2 and not in_queues & {m["physicalOffset"] for m in tx}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=40), min_size=1, max_size=30))
def test_vectorised_java_hash(keys):
    got = java_string_hashes(keys)
    assert [int(x) for x in got] == [java_string_hash(k) for k in keys]


def test_java_hash_vectors():
    got = java_string_hashes(["TagA", "hello", "polygenelubricants", "h\u00e9llo-\u4e16\u754c", "\U0001F600x"])
    assert list(map(int, got[:3])) == [2598919, 99162322, -2147483648]
    assert int(got[3]) == java_string_hash("h\u00e9llo-\u4e16\u754c")


def test_out_of_order_batch_equals_one_by_one(tmp_path, ref_records):
    recs = list(reversed(ref_records("clean")[:300]))
    cfg = reference_config("clean")
    with CommitLogDispatcher(tmp_path / "a", cfg) as a, CommitLogDispatcher(tmp_path / "b", cfg) as b:
        a.dispatch_records(recs)
        for r in recs:
            b.dispatch(r)
    assert store_files(tmp_path / "a", "consumequeue") == store_files(tmp_path / "b", "consumequeue")
    assert sorted(store_files(tmp_path / "a", "index").values()) == sorted(store_files(tmp_path / "b", "index").values())


@pytest.mark.parametrize("tags", [False, True])
def test_index_key_hashes_are_the_keys_index_keys_names(tags):
    """Every key the bulk path hashes for a batch (all of its rows, as verify asks, or
    some of them) is the one rules.index_keys names for that record, in its order."""
    import numpy as np
    import pyarrow.compute as pc

    from rmqlab.format.record import decode_record
    from rmqlab.lab.samples import shipped_dir
    from rmqlab.rules import index_keys
    from rmqlab.scan.decode import decode_file
    from rmqlab.scan.dispatch_request import DispatchColumns
    from rmqlab.scan.hashes import index_key_hashes
    from rmqlab.store import open_store

    with open_store(shipped_dir() / "clean") as st:
        f = st.commitlog.queue.files[0]
        batch = next(b for b in decode_file(f.buf, f.file_from_offset, java_properties=DispatchColumns.JAVA_PROPERTIES) if b.num_rows > 100)
        batch = batch.filter(pc.equal(batch.column("kind"), "MESSAGE"))  # what dispatch reads: messages
        cols = DispatchColumns.from_arrow(batch, {})
        # each record's properties as Java's map holds them, read one record at a time
        props = [decode_record(f.buf, p - f.file_from_offset).java_properties for p in batch.column("physical_offset").to_pylist()]
    topics = batch.column("topic").to_pylist()

    def expected(rows):
        rec, keys = [], []
        for r in rows.tolist():
            p = props[r]
            ks = index_keys(topics[r], p.get("UNIQ_KEY"), p.get("KEYS"), p.get("TAGS") if tags else None)
            rec += [r] * len(ks)
            keys += ks
        return np.asarray(rec, np.int64), index_key_hashes(keys)

    for rows in (np.arange(len(cols)), np.arange(1, len(cols), 3)):
        rec, hashes = cols.index_key_hashes(rows, tags=tags)
        want_rec, want = expected(rows)
        assert len(rec) > len(rows) // 2 and (rec == want_rec).all() and (hashes == want).all()
