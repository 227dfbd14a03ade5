"""The C group commit (rmqlab.engine._group_commit.GroupCommit): which files a force
covers, what a failed force does, how it stops; and the store around it (files
registered as the commitlog rolls and cleans, the checkpoint's physicMsgTimestamp,
a crash that forces nothing more).  The SYNC_FLUSH guarantee itself is tested for
both group commits in test_flush.py."""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

from rmqlab.engine import ManualClock, Message, MessageStore, PutMessageStatus
from rmqlab.engine.message_store import _native_group_commit
from rmqlab.store.reader import open_store

from tests.engine.engine_support import sample_messages, small_config

SIZE = 1 << 20


@pytest.fixture(autouse=True)
def _built():
    if _native_group_commit is None:
        if os.environ.get("RMQLAB_PURE_FLUSH"):
            pytest.skip("RMQLAB_PURE_FLUSH asks for the Python group commit")
        pytest.fail("rmqlab.engine._group_commit was not built: `pip install -e .` needs a C compiler")


def _file(tmp_path, name: str) -> int:
    fd = os.open(tmp_path / name, os.O_RDWR | os.O_CREAT)
    os.write(fd, b"x" * 100)
    return fd


def _started(fd: int, flushed: int = 0, force_delay: float = 0.0):
    """A GroupCommit over one file at offset 0, started."""
    gc = _native_group_commit.GroupCommit(SIZE, flushed)
    gc.add_file(0, fd)
    gc.force_delay = force_delay
    gc.start()
    return gc


def _pipe() -> tuple[int, int]:
    """fdatasync on a pipe fails with EINVAL: a disk that refuses to force."""
    return os.pipe()


def test_a_force_covers_the_files_of_the_range_and_only_them(tmp_path):
    good = _file(tmp_path, "a")
    bad_r, bad_w = _pipe()
    gc = _native_group_commit.GroupCommit(SIZE, 0)
    gc.add_file(SIZE, bad_w)  # registered out of order: kept in offset order
    gc.add_file(0, good)
    os.close(good)  # the module forces its own dup(): the writer may close at any time
    gc.start()
    try:
        assert gc.files == 2 and gc.alive
        assert gc.wait_for(SIZE // 2, 5.0, 111)
        assert gc.flushed == SIZE // 2 and gc.flushed_timestamp == 111 and gc.flushes == 1
        assert gc.wait_for(SIZE, 5.0, 112)  # ends exactly at the second file: not forced
        assert gc.error is None
        # into the second file: its force fails, nothing past it counts as forced
        assert not gc.wait_for(SIZE + 10, 5.0, 113)
        assert gc.error == (errno.EINVAL, SIZE)
        assert gc.flushed == SIZE and gc.flushed_timestamp == 112
        assert not gc.alive  # a failed force stops the service ...
        assert not gc.wait_for(SIZE + 5, 0.01)  # ... and every later wait answers False
        assert gc.wait_for(SIZE // 4, 0.01)  # (what was forced stays forced)
    finally:
        gc.stop()
        os.close(bad_r)
        os.close(bad_w)


def test_a_gap_in_the_files_is_an_error_not_a_force(tmp_path):
    fd0, fd2 = _file(tmp_path, "a"), _file(tmp_path, "c")
    gc = _native_group_commit.GroupCommit(SIZE, 0)
    gc.add_file(0, fd0)
    gc.add_file(2 * SIZE, fd2)
    gc.start()
    try:
        assert not gc.wait_for(2 * SIZE + 1, 5.0)
        assert gc.error == (errno.ENOENT, SIZE)  # nothing registered at the 2nd file's offset
        assert gc.flushed == 0 and gc.flushes == 0
    finally:
        gc.stop()
        os.close(fd0)
        os.close(fd2)


def test_requests_waiting_together_share_one_force(tmp_path):
    fd = _file(tmp_path, "a")
    gc = _started(fd, force_delay=0.2)
    try:
        assert gc.wait_for(1, 5.0)  # the first force (slow), then 8 waiters at once
        answers = []
        threads = [threading.Thread(target=lambda k=k: answers.append(gc.wait_for(100 + k, 5.0, k))) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [True] * 8
        assert gc.flushes <= 3  # one force per group, not per waiter
        assert gc.flushed == 107 and gc.flushed_timestamp == 7
    finally:
        gc.stop()
        os.close(fd)


def test_request_without_waiting_stop_drains_halt_does_not(tmp_path):
    fd = _file(tmp_path, "a")
    gc = _started(fd, flushed=10, force_delay=0.05)
    gc.request(50, 7)  # WAIT=false
    assert gc.stop(10.0)  # drains: the request is forced before the thread ends
    assert gc.flushed == 50 and gc.flushed_timestamp == 7 and not gc.alive
    assert not gc.wait_for(60, 0.01)  # a stopped service forces nothing more

    gc2 = _started(fd, force_delay=0.3)
    assert gc2.wait_for(5, 5.0)
    gc2.request(50)
    time.sleep(0.05)  # the force for 50 has started (sleeping in force_delay)
    gc2.request(90)
    assert gc2.halt(10.0)  # as kill -9: the running force ends, no other starts
    assert gc2.flushed == 50 and gc2.requested == 90
    os.close(fd)


def test_files_removed_while_forced_are_closed_after_the_force(tmp_path):
    fd = _file(tmp_path, "a")
    gc = _native_group_commit.GroupCommit(SIZE, 0)
    gc.add_file(0, fd)
    with pytest.raises(ValueError, match="already registered"):
        gc.add_file(0, fd)
    gc.force_delay = 0.2
    gc.start()
    try:
        gc.request(10)
        time.sleep(0.05)
        assert gc.remove_file(0)  # busy: dropped after the force, which still succeeds
        assert not gc.remove_file(0)  # already removed
        gc.add_file(0, fd)  # registered again while the dropped one is still being forced
        with pytest.raises(ValueError, match="already registered"):
            gc.add_file(0, fd)
        deadline = time.monotonic() + 5
        while gc.flushed < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gc.flushed == 10 and gc.error is None and gc.files == 1  # the dropped one closed, the new one stays
        assert not gc.remove_file(12345)
    finally:
        gc.stop()
        os.close(fd)


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError):
        _native_group_commit.GroupCommit(0, 0)
    gc = _native_group_commit.GroupCommit(SIZE, 0)
    with pytest.raises(OSError):
        gc.add_file(0, 987654)  # not a descriptor
    with pytest.raises(ValueError):
        gc.force_delay = -1
    with pytest.raises(TypeError):
        gc.wait_for(1)
    assert not gc.wait_for(1, 0.01)  # not started: nothing is ever forced
    gc.start()
    with pytest.raises(RuntimeError, match="already started"):
        gc.start()
    assert gc.stop()


def test_store_registers_files_as_the_commitlog_rolls_and_cleans(tmp_path):
    cfg = small_config(flush_disk_type="SYNC_FLUSH", mapped_file_size_commit_log=64 * 1024)
    clock = ManualClock(1_795_000_000_000, 1)
    store = MessageStore.open(tmp_path / "s", cfg, clock=clock)
    try:
        gc = store._group_commit
        assert isinstance(gc, _native_group_commit.GroupCommit)
        body = b"z" * 3000
        results = [store.put(Message("TopicA", body, {"KEYS": f"k{i}"})) for i in range(120)]
        assert all(r.status is PutMessageStatus.PUT_OK for r in results)
        n_files = len(store.commitlog.files)
        assert n_files >= 5 and gc.files == n_files
        assert store.flushed_where == store.max_phy_offset == gc.flushed
        # the checkpoint's physicMsgTimestamp: the newest record the forces covered
        store.flush_logics()
        assert store.checkpoint.physic_msg_timestamp == results[-1].store_timestamp
        gone = store.clean_expired_files(force=True).commitlog_files
        assert len(gone) >= 2 and gc.files == len(store.commitlog.files) == n_files - len(gone)
        assert store.put(Message("TopicA", b"after cleanup")).status is PutMessageStatus.PUT_OK
    finally:
        store.shutdown()
    assert not gc.alive and gc.files == 0
    with open_store(tmp_path / "s", cfg) as st:
        assert st.commitlog.walk()  # a clean shutdown: readable


def test_crash_forces_nothing_more(tmp_path):
    cfg = small_config(flush_disk_type="SYNC_FLUSH")
    store = MessageStore.open(tmp_path / "s", cfg)
    gc = store._group_commit
    for m in sample_messages(20):
        assert store.put(m).ok
    gc.force_delay = 0.3
    first = store.put(Message("TopicA", b"not waited for", {"WAIT": "false"}))
    time.sleep(0.05)  # its force is under way (in force_delay)
    second = store.put(Message("TopicA", b"nor this", {"WAIT": "false"}))
    store.crash()
    assert not gc.alive
    # the force in flight completes (as a kill cannot stop the disk); none starts after
    assert gc.flushed == first.wrote_offset + first.wrote_bytes
    assert gc.requested == second.wrote_offset + second.wrote_bytes
    assert (tmp_path / "s" / "abort").exists()
