"""SYNC_FLUSH: a put that answered PUT_OK has been forced to disk; puts share forces
(group commit); a force that does not finish in time answers FLUSH_DISK_TIMEOUT.
ASYNC_FLUSH: the background service forces the log by itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rmqlab.engine import ManualClock, Message, MessageStore, PutMessageStatus
from rmqlab.engine.message_store import _native_group_commit
from rmqlab.recovery import recover
from rmqlab.store.reader import open_store

from tests.engine.engine_support import sample_messages, small_config


class ForceSpy:
    """Wraps ``os.fdatasync``: for each descriptor, how far the commitlog had been
    written when a force *that has completed* started (a force covers every byte in
    the page cache at its start)."""

    def __init__(self, monkeypatch, delay: float = 0.0):
        self.real = os.fdatasync
        self.delay = delay
        self.store = None
        self.done: dict[int, int] = {}
        self.calls = 0
        self.lock = threading.Lock()
        monkeypatch.setattr(os, "fdatasync", self)

    def __call__(self, fd: int) -> None:
        covered = self.store.commitlog.max_offset if self.store is not None and self.store.commitlog else 0
        if self.delay:
            time.sleep(self.delay)
        self.real(fd)
        with self.lock:
            self.calls += 1
            self.done[fd] = max(self.done.get(fd, 0), covered)

    def forced(self, fd: int) -> int:
        with self.lock:
            return self.done.get(fd, -1)


@pytest.fixture(params=["c", "python"])
def group_commit(request):
    """Both group commits: the C one (rmqlab.engine._group_commit, forcing from a
    thread of its own that ``os.fdatasync`` spies cannot see: its forces are slowed
    with ``force_delay`` and observed through ``flushed``) and the Python one."""
    if request.param == "c" and _native_group_commit is None:
        if os.environ.get("RMQLAB_PURE_FLUSH"):
            pytest.skip("RMQLAB_PURE_FLUSH asks for the Python group commit")
        pytest.fail("rmqlab.engine._group_commit was not built: `pip install -e .` needs a C compiler")
    return request.param


def _fd_of(store: MessageStore, offset: int) -> int:
    for f in store.commitlog.files:
        if f.file_from_offset <= offset < f.file_from_offset + f.file_size:
            return f.fd
    raise AssertionError(offset)


def test_sync_put_ok_means_forced(tmp_path, monkeypatch, group_commit):
    spy = ForceSpy(monkeypatch, delay=0.002)
    cfg = small_config(flush_disk_type="SYNC_FLUSH")
    store = MessageStore.open(tmp_path / "s", cfg, clock=ManualClock(1_795_000_000_000, 1), native_group_commit=group_commit == "c")
    spy.store = store
    if group_commit == "c":
        assert isinstance(store._group_commit, _native_group_commit.GroupCommit)
        store._group_commit.force_delay = 0.002
        forced = lambda r: store._group_commit.flushed  # noqa: E731 (how far its completed forces reach)
    else:
        forced = lambda r: spy.forced(_fd_of(store, r.wrote_offset))  # noqa: E731
    violations = []
    results = []

    def producer(k: int) -> None:
        for m in sample_messages(40, queues=8)[k::8] * 5:
            r = store.put(m)
            done = forced(r)
            results.append(r)
            end = r.wrote_offset + r.wrote_bytes
            if r.status is not PutMessageStatus.PUT_OK or done < end:
                violations.append(r)

    try:
        threads = [threading.Thread(target=producer, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not violations
        assert len(results) == 200
        assert store.flushed_where == store.max_phy_offset
        # group commit: 8 producers waiting on a slow force share it
        assert store._group_commit.flushes <= len(results) // 2
    finally:
        store.shutdown()


def test_sync_flush_timeout(tmp_path, monkeypatch, group_commit):
    spy = ForceSpy(monkeypatch, delay=0.5)
    cfg = small_config(flush_disk_type="SYNC_FLUSH", sync_flush_timeout=50)
    store = MessageStore.open(tmp_path / "s", cfg, native_group_commit=group_commit == "c")
    spy.store = store
    if group_commit == "c":
        store._group_commit.force_delay = 0.5
    try:
        r = store.put(Message("TopicA", b"slow disk"))
        assert r.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
        assert r.wrote_offset == 0  # written, just not known to be durable in time
        assert store.look_message_by_offset(0).body == b"slow disk"
        # WAIT=false: the producer does not wait for the force (Java isWaitStoreMsgOK)
        assert store.put(Message("TopicA", b"no wait", {"WAIT": "false"})).status is PutMessageStatus.PUT_OK
        # the same from the C put, when it is built (from the third put on, unless the
        # flusher holds the put lock at that moment)
        assert store.put(Message("TopicA", b"slow again", {"TAGS": "t"})).status is PutMessageStatus.FLUSH_DISK_TIMEOUT
        assert store.put(Message("TopicA", b"no wait again", {"WAIT": "false", "TAGS": "t"})).status is PutMessageStatus.PUT_OK
    finally:
        store.shutdown()


def test_sync_acknowledged_records_survive_kill(tmp_path):
    """A producer process killed with SIGKILL: every record it was told PUT_OK about is
    in the files, and recovery (abnormal: abort left behind) keeps all of them."""
    root = tmp_path / "s"
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from tests.engine.engine_support import small_config, sample_messages
        from rmqlab.engine import MessageStore
        store = MessageStore.open({str(root)!r}, small_config(flush_disk_type="SYNC_FLUSH"))
        for m in sample_messages(100000):
            r = store.put(m)
            print(r.status.value, r.wrote_offset, r.wrote_bytes, flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    acked = []
    try:
        for line in proc.stdout:
            status, off, size = line.split()
            assert status == "PUT_OK"
            acked.append((int(off), int(size)))
            if len(acked) >= 300:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        proc.stdout.close()
    assert (root / "abort").exists()
    with open_store(root, small_config(), strict=False) as st:
        offsets = {r.physical_offset: r.total_size for r in st.commitlog.iter_records() if r.crc_ok}
    assert all(offsets.get(o) == s for o, s in acked)
    rep = recover(root, config=small_config())
    assert rep.mode == "abnormal"
    assert rep.commitlog_end >= acked[-1][0] + acked[-1][1]


def test_async_flush_service_forces_in_background(tmp_path):
    cfg = small_config(flush_interval_commit_log=10, flush_commit_log_least_pages=0)
    store = MessageStore.open(tmp_path / "s", cfg)
    try:
        for m in sample_messages(50):
            assert store.put(m).ok
        deadline = time.monotonic() + 10
        while store.flushed_where < store.max_phy_offset and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store.flushed_where == store.max_phy_offset
        assert store._commit_service.flushes >= 1
    finally:
        store.shutdown()
