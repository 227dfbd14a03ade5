"""Bad input: one clear error naming the file and the byte offset, never a traceback,
nothing allocated from an unchecked length, and the evidence left untouched."""

from __future__ import annotations

import hashlib
import struct
import subprocess
import sys
import tracemalloc

import pytest

from rmqlab.errors import StoreFormatError, StoreLayoutError
from rmqlab.format.record import BAD_MAGIC, BAD_SIZE, SIZE_MISMATCH, TRUNCATED, RecordError, decode_record
from rmqlab.store import open_store

from tests.support import run_rmqlab as cli

FIRST = "00000000000000000000"


def assert_clean_error(proc, *needles):
    assert proc.returncode == 2, proc
    assert "Traceback" not in proc.stderr and proc.stdout.count("\n") < 5000
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1, line
    for n in needles:
        assert str(n) in line, (n, line)


def digest(root):
    return {p.relative_to(root): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def poke(path, offset, data):
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def test_wrong_magic_names_file_and_offset(store_copy):
    root = store_copy("clean")
    f = root / "commitlog" / FIRST
    poke(f, 135 + 4, b"\x12\x34\x56\x78")  # magic of the second record
    before = digest(root)
    with pytest.raises(RecordError) as exc:
        list(open_store(root).commitlog.iter_records())
    assert exc.value.kind == BAD_MAGIC and exc.value.offset == 135 and str(f) in str(exc.value)
    proc = cli("dump", root)
    # file 0 is not where the next start walks: RocketMQ keeps the records after the damage,
    # dump names the damage on stderr and goes on after it (exit 1)
    assert proc.returncode == 1 and all(w in proc.stderr for w in (str(f), "offset 135", "BAD_MAGIC")) and "Traceback" not in proc.stderr
    assert proc.stdout.splitlines()[0].split()[0] == "0" and int(proc.stdout.splitlines()[1].split()[0]) > 135  # the record before, then past the damage
    assert digest(root) == before


def test_length_pointing_past_end_of_file(store_copy):
    root = store_copy("clean")
    f = root / "commitlog" / FIRST
    poke(f, 388, struct.pack(">i", 70000))  # totalSize of the third record
    proc = cli("dump", root, "--json")
    assert proc.returncode == 1 and all(w in proc.stderr for w in (str(f), "offset 388", "BAD_SIZE", "70000")) and "Traceback" not in proc.stderr
    assert len(proc.stdout.splitlines()) > 2  # the records after the damage the next start never reads


def test_huge_inner_length_is_checked_before_use(store_copy):
    root = store_copy("clean")
    f = root / "commitlog" / FIRST
    # bodyLength of record 0 (135 bytes, empty body) at 84 claims 2 GiB
    poke(f, 84, struct.pack(">i", 0x7FFFFFF0))
    tracemalloc.start()
    with pytest.raises(RecordError) as exc:
        open_store(root).commitlog.read(0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # the record is named by its start, the field that lies by its offset in the message
    assert exc.value.kind == SIZE_MISMATCH and exc.value.offset == 0 and "at file offset 84" in str(exc.value)
    assert peak < 50_000_000


def test_garbage_bytes_and_truncated_tail():
    buf = bytes(range(256)) * 4
    with pytest.raises(RecordError) as exc:
        decode_record(buf, 16, file="garbage.bin")
    assert exc.value.file == "garbage.bin" and exc.value.offset == 16
    with pytest.raises(RecordError) as exc:
        decode_record(b"\x00\x00\x01\x00\xda\xa3", 0, file="short.bin")
    assert exc.value.kind == TRUNCATED
    assert decode_record(b"\x00" * 6, 0) is None  # zero tail is the end of the log, not damage


def test_truncated_last_commitlog_file(store_copy):
    root = store_copy("clean")
    last = sorted((root / "commitlog").iterdir())[-1]
    data = last.read_bytes()
    last.write_bytes(data[:100])  # cut inside the first record of the last file
    with pytest.raises(StoreLayoutError) as exc:
        open_store(root)
    assert str(last) in str(exc.value) and "expected the configured 65536" in str(exc.value)
    # told the size is what it is, the reader opens it and names the record it cannot read
    store = open_store(root, strict=False)
    assert any(str(last) in str(p) for p in store.problems)
    with pytest.raises(RecordError) as e2:
        list(store.commitlog.iter_records())
    assert e2.value.kind == BAD_SIZE and e2.value.offset == 0 and str(last) in str(e2.value)
    proc = cli("info", root)  # info is lenient: it reports problems and keeps going
    assert proc.returncode == 0 and "problem:" in proc.stdout and "record chain from the first file breaks at" in proc.stdout


def test_wrong_file_size_in_the_middle(store_copy):
    root = store_copy("clean")
    mid = root / "commitlog" / "00000000000000065536"
    with open(mid, "r+b") as fh:
        fh.truncate(60000)
    # RocketMQ's load refuses the store (the broker does not start); the evidence is still
    # read, the file named with both lengths in a warning, and the damage the short file
    # makes stepped over as dump steps over any damage before the end of the log
    proc = cli("dump", root)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and proc.stdout
    warning = proc.stderr.splitlines()[0]
    assert all(str(n) in warning for n in (mid, "60000", "65536", "load refuses the store")), warning


def test_missing_directory_and_not_a_store(tmp_path):
    assert_clean_error(cli("info", tmp_path / "nope"), tmp_path / "nope", "not a directory")
    assert_clean_error(cli("info", tmp_path), tmp_path, "commitlog/")
    assert_clean_error(cli("hexdump", tmp_path / "nope.bin"), "nope.bin", "cannot open")


def test_index_and_checkpoint_of_wrong_size(store_copy):
    root = store_copy("clean")
    idx = sorted((root / "index").iterdir())[0]
    with open(idx, "r+b") as fh:
        fh.truncate(1000)
    # the file is left out and named; the other index files still answer
    store = open_store(root)
    index = store.index
    assert [p.file for p in index.problems] == [str(idx)] and "index file is 1000 bytes" in str(index.problems[0])
    assert idx not in [f.path for f in index.files] and len(index.files) == len(list((root / "index").iterdir())) - 1
    assert any(str(idx) in str(p) for p in store.problems)
    info = cli("info", root)
    assert info.returncode == 0 and f"problem: {idx}" in info.stdout and "Traceback" not in info.stderr
    found = cli("lookup", root, "--key", "shared", "--topic", "TopicB")
    assert found.returncode == 0 and str(idx) in found.stderr and "left out of the key lookup" in found.stderr
    verify = cli("verify", root)
    assert verify.returncode == 1 and f"LAYOUT                 {idx}" in verify.stdout
    cp = root / "checkpoint"
    cp.write_bytes(b"\x00" * 10)
    with pytest.raises(StoreFormatError) as exc:
        open_store(root).checkpoint()
    assert exc.value.offset == 10 and str(cp) in str(exc.value)


def test_consume_queue_file_of_wrong_size(store_copy):
    root = store_copy("clean")
    first = root / "consumequeue" / "TopicA" / "0" / FIRST
    with open(first, "r+b") as fh:
        fh.truncate(390)
    proc = cli("queue", root, "--topic", "TopicA", "--queue-id", 0, "--consumequeue-file-size", 400)
    assert_clean_error(proc, first, "390")


def test_bad_offsets_and_ids(store_copy):
    root = store_copy("clean")
    assert_clean_error(cli("lookup", root, "--offset", 10_000_000), "offset 10000000")
    assert_clean_error(cli("lookup", root, "--offset", 5), "offset 5")
    assert_clean_error(cli("lookup", root, "--msg-id", "XYZ"), "msgId")
    assert_clean_error(cli("lookup", root, "--queue", "TopicA:0:999"), "queue offset 999")
    assert_clean_error(cli("hexdump", root / "commitlog" / FIRST, "--offset", 99999999), "offset 99999999")


def test_a_cycle_in_an_index_hash_chain_is_an_error_not_a_hang(store_copy):
    """A damaged prevIndex that points forward makes a loop; Java's selectPhyOffset
    would circle it forever when no entry matches.  The walk stops at the first entry
    it meets twice and names the file and the byte of the entry that closes the loop."""
    import signal

    from rmqlab import lookup
    from rmqlab.format.hashing import index_key_hash
    from rmqlab.format.indexfile import entry_position, index_key
    from rmqlab.store.index_file import IndexFile

    root = store_copy("clean")
    path = sorted((root / "index").iterdir())[0]
    slots, entries = 64, 256
    f = IndexFile(path, slots, entries)
    # a chain of two entries or more: the head A and the one before it, B
    e = f.entries()
    head = next(int(s) for s in f.slots() if 0 < int(s) < f.index_count and 0 < int(e[int(s)]["prev_index"]) < int(s))
    b = int(e[head]["prev_index"])
    key_hash, phy = int(e[head]["key_hash"]), int(e[head]["phy_offset"])
    f.close()
    with open(path, "r+b") as fh:  # B's prevIndex -> A: A, B, A, B, ...
        fh.seek(entry_position(slots, b) + 16)
        fh.write(struct.pack(">i", head))
    with open_store(root) as st:
        rec = st.commitlog.read(phy)
        rec_key = next(k for k in [rec.uniq_key, *(rec.keys or "").split(" ")] if k and index_key_hash(index_key(rec.topic, k)) == key_hash)
        def hang(*_):
            raise TimeoutError("the chain walk did not stop")

        old = signal.signal(signal.SIGALRM, hang)  # a hang fails this test, not the suite
        signal.alarm(20)
        try:
            with pytest.raises(StoreFormatError, match=rf"slot \d+ loops: entry {b}'s prevIndex leads back to entry {head}") as err:
                lookup.query_by_key(st, rec.topic, rec_key)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    assert err.value.file == str(path) and err.value.offset == entry_position(slots, b)
    done = subprocess.run([sys.executable, "-m", "rmqlab", "lookup", str(root), "--topic", rec.topic, "--key", rec_key],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "loops" in done.stderr and path.name in done.stderr and "Traceback" not in done.stderr
