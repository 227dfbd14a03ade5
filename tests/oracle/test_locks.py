"""A store has one writer: rmqlab and RocketMQ respect each other's lock.

RocketMQ takes a lock on the first byte of ``STORE/lock`` when it starts
(``DefaultMessageStore.start``: ``FileChannel.tryLock(0, 1, false)``, a POSIX record
lock); rmqlab's engine takes the same byte (an open-file-description lock, which Linux
makes conflict with it).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import REFERENCE, copy_store
from rmqlab.config import MessageStoreConfig
from rmqlab.engine import Message, MessageStore
from rmqlab.errors import StoreLockedError


def _config(case: str) -> dict:
    return json.loads((REFERENCE / case / "config.json").read_text())["storeConfig"]


def _open(src):
    return MessageStore.open(src, MessageStoreConfig.from_mapping(_config("clean")))


def test_rmqlab_write_refuses_a_store_rocketmq_holds(oracle, tmp_path):
    src = copy_store("clean", tmp_path)
    oracle.hold(src, _config("clean"))
    try:
        with pytest.raises(StoreLockedError):
            _open(src)
        inp = tmp_path / "in.jsonl"
        inp.write_text(json.dumps({"topic": "T", "body": ""}) + "\n")
        done = subprocess.run([sys.executable, "-m", "rmqlab", "write", str(src), "--input", str(inp)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "lock" in done.stderr and str(src) in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    finally:
        oracle.release(src)
    with _open(src) as st:  # released: rmqlab may write again
        assert st.put(Message("T", b"x")).ok


def test_rocketmq_refuses_a_store_rmqlab_holds(oracle, tmp_path):
    src = copy_store("clean", tmp_path)
    with _open(src):
        ans = oracle.submit({"op": "hold", "dir": str(src), "config": _config("clean")}).result(120)
    assert not ans["ok"]
    assert "Lock failed" in ans["error"]


def test_recover_in_place_and_write_say_a_held_store_is_held_whatever_its_sizes(oracle, tmp_path):
    """A store whose index sizes cannot be inferred from its files (maxIndexNum is not 4
    × maxHashSlotNum): the lock is checked before any size is, so 'held' is what
    recover --in-place and write answer, not 'cannot infer maxHashSlotNum'."""
    cfg = {"mappedFileSizeCommitLog": "65536", "mappedFileSizeConsumeQueue": "400", "maxHashSlotNum": "64", "maxIndexNum": "100"}
    src = tmp_path / "s"
    with MessageStore.open(src, MessageStoreConfig.from_mapping(cfg)) as st:
        st.put(Message("T", b"x", {"KEYS": "k"}))
    oracle.hold(src, cfg)
    try:
        for args in (["recover", str(src), "--in-place"], ["write", str(src), "--input", "/dev/null"]):
            done = subprocess.run([sys.executable, "-m", "rmqlab", *args], capture_output=True, text=True, timeout=120)
            assert done.returncode == 2 and "holds this store" in done.stderr, (args, done.stderr)
    finally:
        oracle.release(src)
