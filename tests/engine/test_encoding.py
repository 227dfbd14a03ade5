"""The engine's in-place record writer gives the bytes of the reference encoder
(:func:`rmqlab.format.encode.encode_record`, itself checked against the construct
schema and RocketMQ's records) for any message."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.engine import ManualClock, Message, MessageStore
from rmqlab.format import properties as props
from rmqlab.format.encode import encode_record

from tests.engine.engine_support import small_config

_prop_text = st.text(alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=12)
_hosts = st.sampled_from([(b"\x7f\x00\x00\x01", 50000), (bytes(15) + b"\x01", 1234), (b"\x0a\x00\x00\x07", 0)])

message = st.builds(
    lambda topic, body, pd, qid, flag, tx, born, bh, sh, rc: (
        Message(topic, body, pd, queue_id=qid, flag=flag, sys_flag=tx, born_timestamp=born, born_host=bh, store_host=sh, reconsume_times=rc)
    ),
    st.text(alphabet="abcXYZ019_-%|", min_size=1, max_size=140),
    st.binary(max_size=300),
    st.dictionaries(st.text(alphabet="abcKEYSTAG_", min_size=1, max_size=8), _prop_text, max_size=4),
    st.integers(0, 7),
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from([0, 0x4, 0x8, 0xC, 0x1]),
    st.integers(0, 2**62),
    _hosts,
    _hosts,
    st.integers(0, 16),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(message, min_size=1, max_size=8), st.booleans())
def test_written_bytes_equal_reference_encoder(tmp_path_factory, msgs, crc):
    root = tmp_path_factory.mktemp("enc") / "s"
    with MessageStore.open(root, small_config(enabled_append_prop_crc=crc), clock=ManualClock(1_795_000_000_000, 7), services=False, broker_rewrites=False) as store:
        for m in msgs:
            r = store.put(m)
            assert r.ok, r.reason
            raw = store.commitlog.files[-1].mm[r.wrote_offset - store.commitlog.files[-1].file_from_offset :][: r.wrote_bytes]
            sys_flag = (m.sys_flag & ~0x30) | (0x10 if len(m.born_host[0]) == 16 else 0) | (0x20 if len(m.store_host[0]) == 16 else 0)
            expected = encode_record(
                topic=m.topic.encode(),
                body=m.body,
                properties=props.encode(m.properties or {}),
                queue_id=m.queue_id,
                flag=m.flag,
                queue_offset=r.queue_offset,
                physical_offset=r.wrote_offset,
                sys_flag=sys_flag,
                born_timestamp=m.born_timestamp,
                born_host=m.born_host,
                store_timestamp=r.store_timestamp,
                store_host=m.store_host,
                reconsume_times=m.reconsume_times,
                append_prop_crc=crc,
            )
            assert bytes(raw) == expected


@pytest.mark.parametrize("body_size", [300, 5000])
def test_fast_paths_write_the_general_paths_bytes(tmp_path, body_size):
    """``put``'s and ``put_batch``'s fast paths against the general path (taken when
    properties come as raw bytes): same records, queues and index — small bodies
    (joined into the mapping) and big ones (``pwritev``)."""
    from tests.engine.engine_support import sample_messages, store_files

    msgs = sample_messages(600 if body_size < 1000 else 150, queues=3, body_size=body_size)
    roots = {}
    for mode in ("put", "batch", "general"):
        root = roots[mode] = tmp_path / mode
        with MessageStore.open(root, small_config(), clock=ManualClock(1_795_000_000_000), services=False) as store:
            if mode == "put":
                assert all(store.put(m).ok for m in msgs)
            elif mode == "batch":
                for i in range(0, len(msgs), 64):
                    assert store.put_batch(msgs[i : i + 64]).ok
                assert store._fast_topics  # after the first batch the fast path is taken
            else:
                for m in msgs:
                    raw = props.encode(m.properties)
                    g = Message(m.topic, m.body, queue_id=m.queue_id, born_timestamp=m.born_timestamp, properties_raw=raw)
                    assert store.put(g).ok
    for sub in ("commitlog", "consumequeue"):
        assert store_files(roots["put"], sub) == store_files(roots["general"], sub) == store_files(roots["batch"], sub)
    idx = [sorted(store_files(roots[m], "index").values()) for m in roots]
    assert idx[0] == idx[1] == idx[2]
