"""Following a log that is being written (rmqlab.store.follow, ``rmqlab tail``,
``dump --follow``): every record once, in log order, none torn, while another process
writes through rmqlab's engine across file rolls; files deleted before they were read
said (and fatal with --fail-on-data-loss); a restart whose recovery cut records already
given out detected, and the new records given from the cut; a half-written record
waited for; and nothing of the store changed."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.engine import Message, MessageStore
from rmqlab.format.record import Record
from rmqlab.store.follow import LogFollower, Rewritten, Skipped, Stalled

FILE = 64 << 10
CFG = {"mappedFileSizeCommitLog": str(FILE)}


def _records(items) -> list[Record]:
    return [x for x in items if isinstance(x, Record)]


def _tree_digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


WRITER = textwrap.dedent("""
    import sys, time
    from rmqlab.config import MessageStoreConfig
    from rmqlab.engine import Message, MessageStore
    root, n = sys.argv[1], int(sys.argv[2])
    cfg = MessageStoreConfig.from_mapping({"mappedFileSizeCommitLog": "%d"})
    with MessageStore.open(root, cfg) as st:
        for i in range(n):
            st.put(Message("T%%d" %% (i %% 3), b"body-%%d-" %% i + b"x" * (i %% 700), {"seq": str(i), "KEYS": "k%%d" %% i}, queue_id=i %% 4))
            if i %% 50 == 0:
                time.sleep(0.01)
    print("done", flush=True)
""" % FILE)


def test_tail_prints_every_record_once_in_order_while_another_process_writes(tmp_path):
    """A writer process puts 3,000 messages (about 30 file rolls) while ``rmqlab tail
    --json`` runs from the start: each message printed exactly once, in log order, its
    body whole; the store's bytes as the writer left them."""
    root = tmp_path / "s"
    (root / "commitlog").mkdir(parents=True)
    n = 3000
    tail = subprocess.Popen([sys.executable, "-m", "rmqlab", "tail", str(root), "--json", "--idle-exit", "4", "--interval", "0.02"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = subprocess.run([sys.executable, "-c", WRITER, str(root), str(n)], capture_output=True, text=True, timeout=300)
    assert writer.returncode == 0, writer.stderr
    out, err = tail.communicate(timeout=120)
    assert tail.returncode == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    seqs = [int(dict(r["properties"])["seq"]) if isinstance(r["properties"], dict) else None for r in rows]
    assert seqs == list(range(n))  # each once, in the order put
    offsets = [r["physical_offset"] for r in rows]
    assert offsets == sorted(offsets) and len(set(offsets)) == n
    assert all(r["crc_ok"] for r in rows)
    assert len(list((root / "commitlog").iterdir())) > 20  # it followed across the rolls
    assert err == ""


def test_files_deleted_before_they_were_read_are_said(tmp_path):
    root = tmp_path / "s"
    with MessageStore.open(root, MessageStoreConfig.from_mapping(CFG)) as st:
        for i in range(800):
            st.put(Message("T", b"x" * 300, {"seq": str(i)}))
    files = sorted((root / "commitlog").iterdir())
    for f in files[:2]:  # the broker's clean-up deletes the oldest files
        f.unlink()
    with LogFollower(root, 0) as f:
        got = f.poll()
    assert isinstance(got[0], Skipped) and (got[0].start, got[0].end) == (0, int(files[2].name))
    assert _records(got)[0].physical_offset == int(files[2].name)
    cli = [sys.executable, "-m", "rmqlab", "tail", str(root), "--from", "0", "--idle-exit", "0.5"]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "skipped" in done.stderr and len(done.stdout.splitlines()) > 100
    done = subprocess.run(cli + ["--fail-on-data-loss"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "skipped" in done.stderr and done.stdout == ""


def test_a_restart_that_cut_records_already_given_out_is_detected(tmp_path):
    """Records given out, then the broker killed with the last five lost from the page
    cache (zeroed) and restarted: its recovery ends the log before them and new puts
    write over them.  The follower says where the cut is and gives the new records."""
    root = tmp_path / "s"
    cfg = MessageStoreConfig.from_mapping(CFG)
    st = MessageStore.open(root, cfg)
    for i in range(50):
        st.put(Message("T", b"old-%d" % i + b"y" * 100, {"seq": f"old{i}"}))
    with LogFollower(root) as f:
        given = _records(f.poll())
        assert len(given) == 50
        st.crash()
        cut = given[45]
        path = root / "commitlog" / f"{0:020d}"
        with open(path, "r+b") as fh:
            fh.seek(cut.physical_offset)
            fh.write(bytes(given[-1].physical_offset + given[-1].total_size - cut.physical_offset))
        with MessageStore.open(root, cfg) as st2:
            for i in range(7):
                st2.put(Message("T", b"new-%d" % i, {"seq": f"new{i}"}))
            got = f.poll()
    assert isinstance(got[0], Rewritten) and got[0].offset == cut.physical_offset and got[0].exact
    assert [r.java_properties["seq"] for r in _records(got)] == [f"new{i}" for i in range(7)]
    assert _records(got)[0].physical_offset == cut.physical_offset


def test_a_record_half_written_is_waited_for_and_never_given(tmp_path):
    root = tmp_path / "s"
    with MessageStore.open(root, MessageStoreConfig.from_mapping(CFG)) as st:
        for i in range(20):
            st.put(Message("T", b"z" * 500, {"seq": str(i)}))
    with LogFollower(root, settle=0.05) as f:
        recs = _records(f.poll())
        last = recs[-1]
        path = root / "commitlog" / f"{0:020d}"
        data = path.read_bytes()
        whole = data[last.physical_offset : last.physical_offset + last.total_size]
        # as another process sees a copy in progress: the record gone, then half of it
        f2 = LogFollower(root, last.physical_offset, settle=0.05)
        before = _tree_digest(root)
        with open(path, "r+b") as fh:
            fh.seek(last.physical_offset)
            fh.write(bytes(len(whole)))
            fh.flush()
            assert f2.poll() == []
            fh.seek(last.physical_offset)
            fh.write(whole[: len(whole) // 2])
            fh.flush()
            assert f2.poll() == []
            time.sleep(0.1)
            stalled = f2.poll()
            assert len(stalled) == 1 and isinstance(stalled[0], Stalled) and "CRC" in stalled[0].why
            fh.seek(last.physical_offset + len(whole) // 2)
            fh.write(whole[len(whole) // 2 :])
            fh.flush()
        got = f2.poll()
        f2.close()
    assert len(got) == 1 and got[0].physical_offset == last.physical_offset and got[0].crc_ok
    assert _tree_digest(root) == before  # the follower wrote nothing


def test_dump_follow_lists_then_follows(tmp_path):
    root = tmp_path / "s"
    cfg = MessageStoreConfig.from_mapping(CFG)
    with MessageStore.open(root, cfg) as st:
        for i in range(10):
            st.put(Message("T", b"a", {"seq": str(i)}))
    proc = subprocess.Popen([sys.executable, "-m", "rmqlab", "dump", str(root), "--follow", "--json", "--idle-exit", "3", "--interval", "0.05"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    with MessageStore.open(root, cfg) as st:
        for i in range(10, 25):
            st.put(Message("T", b"b", {"seq": str(i)}))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert [dict(json.loads(line)["properties"])["seq"] for line in out.splitlines()] == [str(i) for i in range(25)]


def test_dump_follow_follows_from_where_its_listing_ended(tmp_path, monkeypatch, capsys):
    """Records a broker appends while the listing runs are followed, not skipped: the
    follow starts at the end the listing stopped at, not at the log's end after it."""
    from rmqlab.cli import dump, main

    root = tmp_path / "store"
    cfg = MessageStoreConfig(mapped_file_size_commit_log=64 * 1024)
    with MessageStore.open(root, cfg) as st:
        for i in range(5):
            st.put(Message("T", b"a", {"seq": str(i)}))
    listed = dump._list

    def list_while_a_broker_appends(store, args, end, progress):
        status = listed(store, args, end, progress)
        with MessageStore.open(root, cfg) as st:  # appended after the listing read the log's end
            for i in range(5, 8):
                st.put(Message("T", b"b", {"seq": str(i)}))
        return status

    monkeypatch.setattr(dump, "_list", list_while_a_broker_appends)
    assert main(["dump", str(root), "--follow", "--json", "--idle-exit", "1", "--interval", "0.05"]) == 0
    seqs = [dict(json.loads(line)["properties"])["seq"] for line in capsys.readouterr().out.splitlines()]
    assert seqs == [str(i) for i in range(8)]


def test_a_start_that_is_no_record_boundary_is_refused():
    from tests.support import REFERENCE

    done = subprocess.run([sys.executable, "-m", "rmqlab", "tail", str(REFERENCE / "clean" / "store"), "--from", "12"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "@ offset 12" in done.stderr and "record boundary" in done.stderr


@pytest.mark.parametrize("start", ["latest"])
def test_latest_gives_only_what_comes_after(tmp_path, start):
    root = tmp_path / "s"
    cfg = MessageStoreConfig.from_mapping(CFG)
    with MessageStore.open(root, cfg) as st:
        for i in range(300):
            st.put(Message("T", b"c" * 200, {"seq": str(i)}))
    with LogFollower(root, start) as f:
        assert f.poll() == []
        with MessageStore.open(root, cfg) as st:
            st.put(Message("T", b"d", {"seq": "after"}))
        assert [r.java_properties["seq"] for r in _records(f.poll())] == ["after"]


def test_a_damaged_record_is_never_printed_and_is_said():
    """crash-torn ends in a record whose body CRC fails (a torn write): tail prints the
    639 records before it, never that one, and says it is waiting there."""
    from tests.support import REFERENCE

    done = subprocess.run([sys.executable, "-m", "rmqlab", "tail", str(REFERENCE / "crash-torn" / "store"), "--json", "--settle", "0.2", "--idle-exit", "1.5"],
                          capture_output=True, text=True, timeout=60)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and len(rows) == 639 and rows[-1]["physical_offset"] < 366653
    assert "waiting at 366653" in done.stderr and "CRC" in done.stderr
