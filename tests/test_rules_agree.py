"""Every reader and writer of the store asks :mod:`rmqlab.rules` the same questions —
the tagsCode of a record (delay levels included), which keys index it, whether a
consume queue takes it — and must give the same answers.  Here hypothesis writes
stores of records with any mix of sysFlag transaction type, DELAY, TAGS, KEYS,
UNIQ_KEY and topic through the engine, then requires:

- the consume queues and index the engine's put wrote are byte-identical to the ones
  dispatch rebuilds record by record, as a batch of requests and as columns, and to
  the ones abnormal recovery rebuilds after both were deleted;
- each record's consume-queue entry exists exactly when ``rules.goes_to_consume_queue``
  says, with ``rules.tags_code`` (read through ``lookup.get_message``);
- each key of ``rules.index_keys`` finds the record through ``lookup.query_by_key``
  exactly when ``rules.goes_to_index`` says, and ``lookup.record_has_key`` agrees;
- ``verify`` finds no queue or index error on the store.

The store-level example of the issue that started this (verify and dispatch disagreeing
on DELAY "0" and "-1" in SCHEDULE_TOPIC_XXXX) is a fixed case below.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab import lookup, rules
from rmqlab.engine import ManualClock, Message, MessageStore
from rmqlab.writers.dispatch import CommitLogDispatcher
from rmqlab.format import commitlog as cl
from rmqlab.format import properties as props
from rmqlab.forensics.verify import verify_store
from rmqlab.recovery import recover
from rmqlab.rules import parse_delay_levels
from rmqlab.scan.dispatch_request import read_dispatch_columns, request_from_record
from rmqlab.store.reader import open_store

from tests.engine.engine_support import small_config

T0 = 1_795_000_000_000
CONFIG = small_config(mapped_file_size_commit_log=1 << 20)
TOPICS = ["TopicA", "Tx", rules.SCHEDULE_TOPIC]
WORD = st.text(alphabet="abcXYZ09-_éя中", min_size=1, max_size=6)
DELAY = st.one_of(st.integers(-3, 25).map(str), st.sampled_from(["+2", "007", "-0", "2147483647", "99"]))
KEYS = st.lists(st.one_of(WORD, st.just("")), min_size=1, max_size=4).map(" ".join).filter(bool)


@st.composite
def messages(draw):
    out = []
    for _ in range(draw(st.integers(1, 12))):
        p = {}
        if draw(st.booleans()):
            p[props.TAGS] = draw(WORD)
        if draw(st.booleans()):
            p[props.KEYS] = draw(KEYS)
        if draw(st.booleans()):
            p[props.UNIQ_KEY] = draw(WORD)
        if draw(st.integers(0, 3)) == 0:
            p[props.DELAY] = draw(DELAY)
        sys_flag = draw(st.sampled_from([cl.TRANSACTION_NOT_TYPE, cl.TRANSACTION_PREPARED_TYPE, cl.TRANSACTION_COMMIT_TYPE, cl.TRANSACTION_ROLLBACK_TYPE]))
        out.append(Message(draw(st.sampled_from(TOPICS)), draw(WORD).encode(), p, queue_id=draw(st.integers(0, 2)), sys_flag=sys_flag))
    return out


def _queues_and_index(root: Path) -> tuple[dict, list]:
    """Consume-queue files by path, index files in creation order (their names are the
    wall-clock time of creation, which differs between the runs compared)."""
    cq = {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / rules.CONSUMEQUEUE_DIR).rglob("*")) if p.is_file()}
    idx = [p.read_bytes() for p in sorted((root / rules.INDEX_DIR).iterdir())] if (root / rules.INDEX_DIR).is_dir() else []
    return cq, idx


def _rebuilt(src: Path, dst: Path, how: str) -> tuple[dict, list]:
    """Dispatch the records of ``src``'s log into a fresh root ``dst`` one way."""
    shutil.copytree(src / rules.COMMITLOG_DIR, dst / rules.COMMITLOG_DIR)
    delay_levels = parse_delay_levels(CONFIG.message_delay_level)
    with open_store(src, CONFIG) as st_:
        recs = [r for r in st_.commitlog.walk() if not r.is_blank]
    with CommitLogDispatcher(dst, CONFIG, clock=ManualClock(T0)) as d:
        if how == "one by one":
            for r in recs:
                d.dispatch(r)
        elif how == "batch":
            d.dispatch_batch([request_from_record(r, delay_levels) for r in recs])
        else:
            buf = (src / rules.COMMITLOG_DIR / f"{0:020d}").read_bytes()
            pos = np.asarray([r.physical_offset for r in recs], np.int64)
            d.dispatch_columns(read_dispatch_columns(buf, pos, file_base=0, file="commitlog", delay_levels=delay_levels))
        d.flush()
    return _queues_and_index(dst)


def _check_agreement(tmp: Path, msgs: list[Message]) -> None:
    root = tmp / "store"
    with MessageStore.open(root, CONFIG, clock=ManualClock(T0, tick_ms=1), services=False) as store:
        for m in msgs:
            store.put(m)
        store.flush()
    engine = _queues_and_index(root)
    for how in ("one by one", "batch", "columns"):
        assert _rebuilt(root, tmp / how.replace(" ", "-"), how) == engine, how
    # abnormal recovery rebuilds both from the log
    crashed = tmp / "crashed"
    shutil.copytree(root, crashed)
    shutil.rmtree(crashed / rules.CONSUMEQUEUE_DIR, ignore_errors=True)
    shutil.rmtree(crashed / rules.INDEX_DIR, ignore_errors=True)
    (crashed / rules.ABORT_FILE).write_text("")
    recover(crashed, config=CONFIG, out=tmp / "recovered", clock=ManualClock(T0))
    assert _queues_and_index(tmp / "recovered") == engine, "recovery"

    delay_levels = parse_delay_levels(CONFIG.message_delay_level)
    with open_store(root, CONFIG) as st_:
        for r in st_.commitlog.walk():
            if r.is_blank:
                continue
            jp = r.java_properties
            if rules.goes_to_consume_queue(r.sys_flag):
                entry, got = lookup.get_message(st_, r.topic, r.queue_id, r.queue_offset)
                assert got.physical_offset == r.physical_offset
                assert entry.tags_code == rules.tags_code(r.topic, jp, r.store_timestamp, delay_levels)
            keys = rules.index_keys(r.topic, jp.get(props.UNIQ_KEY), jp.get(props.KEYS))
            for full in keys:
                key = full[len(r.topic) + 1 :]
                assert lookup.record_has_key(r, r.topic, key)
                found = {x.physical_offset for x in lookup.query_by_key(st_, r.topic, key).records}
                assert (r.physical_offset in found) == bool(rules.goes_to_index(r.sys_flag)), (full, r.sys_flag)
    bad = [f for f in verify_store(root, CONFIG).findings if f.kind.startswith(("CQ_", "INDEX_")) and f.severity != "info"]
    assert not bad, bad


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(msgs=messages())
def test_every_path_asks_the_same_rules(tmp_path_factory, msgs):
    _check_agreement(tmp_path_factory.mktemp("agree"), msgs)


def test_schedule_topic_delay_levels_at_or_below_zero_keep_the_tags_hash(tmp_path):
    """The issue's example: DELAY "0" and "-1" on SCHEDULE_TOPIC_XXXX keep the TAGS
    hash (Java: ``if (delayLevel > 0)``), "3" makes it the delivery time; verify used to
    call the first two CQ_MISMATCH."""
    msgs = [Message(rules.SCHEDULE_TOPIC, b"x", {props.TAGS: "a", props.DELAY: d}) for d in ("0", "-1", "3")]
    _check_agreement(tmp_path, msgs)
    with open_store(tmp_path / "store", CONFIG) as st_:
        codes = {r.java_properties[props.DELAY]: lookup.get_message(st_, r.topic, r.queue_id, r.queue_offset)[0].tags_code
                 for r in st_.commitlog.walk() if not r.is_blank}
    assert codes["0"] == codes["-1"] == ord("a")
    assert codes["3"] > T0
