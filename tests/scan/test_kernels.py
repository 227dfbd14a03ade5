"""The compiled loops (rmqlab.scan.kernels): the same bodies and CRCs as slicing and
zlib.crc32, and the bulk decoder built on them gives the rows the one-record decoder
(rmqlab.format.record.decode_record, the slow reference) gives."""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pytest

from rmqlab.scan import decode as fd
from rmqlab.scan import hashes, kernels

from tests.support import REFERENCE



def test_the_loops_are_built():
    """numba and isal are dependencies: the loops must be there (no other copy runs)."""
    assert kernels.AVAILABLE, kernels.UNAVAILABLE_BECAUSE


def _reference_rows(buf: bytes, verify_crc: bool) -> list[dict]:
    """The walk from 0 with the one-record decoder, as decode_file's rows (the keys of
    Record.to_dict, a CRC failure as its kind), up to the first record it refuses."""
    import base64

    from rmqlab.format.record import RecordError, decode_record

    rows, pos = [], 0
    while True:
        try:
            rec = decode_record(buf, pos, check_crc=verify_crc)
        except RecordError:
            return rows
        if rec is None:
            return rows
        row = rec.to_dict()
        if not rec.is_blank:
            row["body"] = base64.b64decode(row["body"])
            row["properties"] = list(row["properties"].items())
            row["kind"] = "MESSAGE" if not verify_crc or rec.crc_ok else ("BODY_CRC" if not rec.body_crc_ok else "PROPERTY_CRC")
            if not verify_crc:
                row["crc_ok"] = None
        rows.append(row)
        if rec.is_blank:
            return rows
        pos += rec.total_size


def test_bodies_and_crcs_equal_slicing_and_zlib():
    rng = np.random.default_rng(7)
    src = rng.integers(0, 256, 20 << 20, dtype=np.uint8)  # large enough to be split across threads
    lens = rng.integers(0, 9000, 4000)
    lens[::97] = 0  # empty bodies
    starts = np.sort(rng.integers(0, len(src) - 9000, len(lens)))
    arr, crcs = kernels.bodies_and_crcs(src, starts, lens)
    assert arr.type == pa.binary() and len(arr) == len(lens)
    for i in list(range(0, len(lens), 37)) + [len(lens) - 1]:
        want = src[starts[i] : starts[i] + lens[i]].tobytes()
        assert arr[i].as_py() == want
        assert int(crcs[i]) == zlib.crc32(want)
    copied, none = kernels.bodies_and_crcs(src, starts, lens, with_crc=False)
    assert none is None and copied.equals(arr)
    with pytest.raises(ValueError):
        kernels.bodies_and_crcs(src, np.array([len(src) - 5]), np.array([10]))


@pytest.mark.parametrize("verify_crc", [True, False])
@pytest.mark.parametrize("case", ["clean", "crash-torn", "v2ipv6"])
def test_decoder_rows_are_the_one_record_decoders(case, verify_crc):
    f = REFERENCE / case / "store" / "commitlog" / "00000000000000000000"
    buf = f.read_bytes()
    data = bytearray(buf)
    data[5000] ^= 0xFF  # a body CRC failure somewhere, whatever record it hits
    for b in (buf, bytes(data)):
        want = _reference_rows(b, verify_crc)
        got = pa.Table.from_batches(list(fd.decode_file(b, 0, file=str(f), mode="lenient", batch_rows=64, verify_crc=verify_crc))).to_pylist()
        assert len(want) > 10
        assert [{k: r[k] for k in w} for r, w in zip(got, want)] == want


def test_property_pairs_follow_the_properties_codec_on_random_bytes(monkeypatch):
    """Random properties strings over a small alphabet (separators, a duplicate-prone
    name, UTF-8 and invalid bytes): the compiled split and the numpy split both give
    decode_pairs + to_ordered_dict."""
    from rmqlab.format import properties as props
    from rmqlab.format.encode import encode_blank, encode_record

    rng = np.random.default_rng(3)
    alphabet = [b"a", b"K", b"\x01", b"\x02", b"\x02", b"\xc3\xa9", b"\xff"]
    cases = [b"".join(alphabet[i] for i in rng.integers(0, len(alphabet), rng.integers(0, 24))) for _ in range(400)]
    records, pos = [], 0
    for p in cases:
        rec = encode_record(topic=b"T", body=b"x", properties=p, physical_offset=pos)
        records.append(rec)
        pos += len(rec)
    size = pos + 64
    data = b"".join(records) + encode_blank(size - pos) + bytes(size - pos - 8)
    want = [list(props.to_ordered_dict(props.decode_pairs(p)).items()) for p in cases]
    for split_from in (1 << 40, 1):  # split: half on a worker thread
        monkeypatch.setattr(kernels, "_SPLIT_MIN_PROPERTY_BYTES", split_from)
        rows = [r for b in fd.decode_file(data, 0, batch_rows=50) for r in b.to_pylist() if r["kind"] == "MESSAGE"]
        assert [list(r["properties"]) for r in rows] == want


def test_crc32_slices_equal_zlib_and_the_per_slice_path(monkeypatch):
    """The batch put's CRCs: the compiled loop, and the per-slice C calls it replaces."""
    from rmqlab.scan import crc

    rng = np.random.default_rng(11)
    src = rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    starts = np.sort(rng.integers(0, len(src) - 5000, 3000))
    ends = starts + rng.integers(0, 5000, len(starts))
    ends[::50] = starts[::50]  # empty slices
    want = [zlib.crc32(src[a:b]) for a, b in zip(starts.tolist(), ends.tolist())]
    assert crc.crc32_slices(src, starts, ends).tolist() == want
    monkeypatch.setattr(crc, "KERNEL_FROM", 1 << 62)
    assert crc.crc32_slices(src, starts, ends).tolist() == want
    with pytest.raises(ValueError):
        kernels.crc32_slices(np.frombuffer(src, np.uint8), np.array([len(src) - 3]), np.array([4]))


def test_the_crc_loops_load_from_numbas_disk_cache():
    """They call ISA-L by symbol name, so a second process compiles nothing (a ctypes
    pointer made numba compile them in every process)."""
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from rmqlab.scan import kernels as k\n"
        "src = np.arange(4096, dtype=np.uint8)\n"
        "k.bodies_and_crcs(src, np.array([0, 100]), np.array([50, 60]))\n"
        "k.crc32_slices(src, np.array([0, 100]), np.array([50, 60]))\n"
        "print(sum(k._KERNEL.stats.cache_misses.values()), sum(k._CRCS.stats.cache_misses.values()))\n"
    )
    for _ in range(2):  # the first run may compile (a fresh checkout); the second must not
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "0"]


def _records_with_properties(cases: list[bytes], names) -> tuple[bytes, list[int], dict]:
    """A log of one record per properties bytes of ``cases``, where each starts, and per
    name the value Java's map holds in each (rmqlab.format.properties.to_java_map)."""
    from rmqlab.format import properties as props
    from rmqlab.format.encode import encode_record

    records, positions, pos = [], [], 0
    for p in cases:
        rec = encode_record(topic=b"T", body=b"x", properties=p, physical_offset=pos)
        records.append(rec)
        positions.append(pos)
        pos += len(rec)
    want = {name: [props.to_java_map(props.decode_pairs(p)).get(name) for p in cases] for name in names}
    return b"".join(records), positions, want


def test_java_property_columns_follow_javas_map_on_random_bytes(monkeypatch):
    """decode_positions(java_properties=...): per name, the value RocketMQ's own map
    holds (empty names and values skipped, a later pair wins; U+FFFD for invalid
    UTF-8) - compiled, and record by record for a batch with invalid UTF-8."""
    rng = np.random.default_rng(5)
    alphabet = [b"TAGS", b"KEYS", b"K", b"\x01", b"\x02", b"\x02", b"v", b"\xc3\xa9", b"UNIQ_KEY", b"\xff"]
    names = ("TAGS", "KEYS", "UNIQ_KEY", "DELAY")
    for invalid in (False, True):  # one invalid byte sends a batch to the Python reading
        cases = [b"".join(alphabet[i] for i in rng.integers(0, len(alphabet) - (not invalid), rng.integers(0, 20))) for _ in range(500)]
        data, positions, want = _records_with_properties(cases, names)
        batches = fd.decode_positions(data, positions, columns=["physical_offset"], java_properties=names, batch_rows=64)
        table = pa.Table.from_batches(list(batches))
        assert table.schema == fd.java_schema(names)
        assert {name: table.column(fd.JAVA_PROPERTY_PREFIX + name).to_pylist() for name in names} == want
        assert table.column("properties").null_count == len(cases)  # not asked for


def test_more_java_property_names_than_one_pass_looks_for():
    """Past the 63 names one compiled pass matches at once (a bit each), the columns are
    still each name's value in Java's map, names sharing a first byte told apart."""
    rng = np.random.default_rng(11)
    names = tuple(f"N{i}" for i in range(70)) + ("TAGS", "T")
    cases = [b"".join(b"%s\x01v%d\x02" % (names[i].encode(), k) for k, i in enumerate(rng.integers(0, len(names), 4))) for _ in range(300)]
    data, positions, want = _records_with_properties(cases, names)
    table = pa.Table.from_batches(list(fd.decode_positions(data, positions, columns=["physical_offset"], java_properties=names)))
    assert {name: table.column(fd.JAVA_PROPERTY_PREFIX + name).to_pylist() for name in names} == want
    assert sum(v is not None for v in want["N69"]) > 0


@pytest.mark.parametrize("case", ["clean", "crash-torn", "v2ipv6", "clean-damaged"])
def test_walking_in_pieces_gives_the_rows_of_one_walk(case, monkeypatch):
    """The chain walked in pieces, the next on another thread (tiny pieces here, so a
    file takes many, and damage falls inside some) decodes to the same rows."""
    f = REFERENCE / case.replace("-damaged", "") / "store" / "commitlog" / "00000000000000000000"
    data = bytearray(f.read_bytes())
    if case.endswith("-damaged"):
        data[len(data) // 3 : len(data) // 3 + 40] = bytes(40)  # zeros inside a record: the walk stops there
    data = bytes(data)
    rows = {}
    for piece in (1 << 40, 4096, 777):
        monkeypatch.setattr(kernels, "WALK_PIECE", piece)
        rows[piece] = pa.Table.from_batches(list(fd.decode_file(data, 0, file=str(f), mode="lenient", batch_rows=64))).to_pylist()
    assert len(rows[1 << 40]) > 10
    assert rows[4096] == rows[1 << 40] and rows[777] == rows[1 << 40]


def test_crcs_are_checked_without_the_body_column():
    """A scan that does not want the bodies still checks their CRCs (compiled: straight
    from the buffer, no body column built): the same crc_ok and kinds as a full scan."""
    f = REFERENCE / "clean" / "store" / "commitlog" / "00000000000000000000"
    data = bytearray(f.read_bytes())
    rows = [r for r in pa.Table.from_batches(list(fd.decode_file(bytes(data), 0))).to_pylist() if r["kind"] == "MESSAGE" and r["body"]]
    for r in rows[3 :: len(rows) // 4]:
        data[data.index(r["body"], r["physical_offset"])] ^= 0x5A  # the body's first byte
    data = bytes(data)
    full = pa.Table.from_batches(list(fd.decode_file(data, 0, mode="lenient", batch_rows=64)))
    narrow = pa.Table.from_batches(list(fd.decode_file(data, 0, mode="lenient", batch_rows=64, columns=["physical_offset", "crc_ok", "kind"])))
    assert narrow.column("body").null_count == narrow.num_rows
    cols = ["physical_offset", "crc_ok", "kind"]
    assert narrow.select(cols).to_pylist() == full.select(cols).to_pylist()
    assert "BODY_CRC" in full.column("kind").to_pylist()


def test_one_thread_gives_the_rows_of_two(monkeypatch):
    """set_threads(1) (what Spark's readers use) decodes the same rows as the threaded
    paths, with every threshold low enough that two threads would take part."""
    monkeypatch.setattr(kernels, "_WORKERS", kernels._WORKERS)  # restored after the test
    monkeypatch.setattr(kernels, "WALK_PIECE", 4096)
    monkeypatch.setattr(kernels, "_SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(kernels, "_SPLIT_MIN_PROPERTY_BYTES", 1)
    data = (REFERENCE / "v2ipv6" / "store" / "commitlog" / "00000000000000000000").read_bytes()
    rows = {}
    kernels.set_threads(2)
    for n in (2, 1):
        before = kernels.set_threads(n)
        assert kernels._WORKERS == n and before == 2  # the number to put back
        rows[n] = pa.Table.from_batches(list(fd.decode_file(data, 0, batch_rows=16))).to_pylist()
    assert len(rows[1]) > 10 and rows[1] == rows[2]


def test_without_the_loops_a_bulk_pass_says_why(monkeypatch):
    """No slower copy runs in their place: the loader refuses with the reason."""
    from rmqlab.scan import crc

    monkeypatch.setattr(kernels, "AVAILABLE", False)
    monkeypatch.setattr(kernels, "UNAVAILABLE_BECAUSE", "numba cannot be imported")
    monkeypatch.setattr(fd, "SMALL_RANGE", -1)  # a range too large to read record by record
    with pytest.raises(ImportError, match="needs numba and isal.*numba cannot be imported"):
        list(fd.decode_file(b"\0" * 64, 0))
    with pytest.raises(ImportError, match="numba cannot be imported"):
        crc.compiled_kernels()


_GUARDED_WALK = """
import ctypes, mmap, sys
import numpy as np
from rmqlab.scan import kernels
from rmqlab.scan.decode import _MIN_SIZE, cl

records = open(sys.argv[1], "rb").read()
page = mmap.PAGESIZE
m = mmap.mmap(-1, 2 * page)
m[:page] = records[:page]
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
assert libc.mprotect(base + page, page, 0) == 0, ctypes.get_errno()  # PROT_NONE: a read there is SIGSEGV
a = np.frombuffer(m, np.uint8)
positions, end = kernels.walk(a, 0, page, page, 0, _MIN_SIZE, (cl.MAGIC_V1, cl.MAGIC_V2))
print(len(positions), end)
"""


def test_the_walk_reads_nothing_at_or_past_its_limit():
    """The walk reads ahead of the record it is on (a byte per cache line, so that the
    chain of positions finds its lines cached): never at or past ``limit``, even when
    the buffer goes on.  Here the page past the limit cannot be read at all (in a
    process of its own: a read there ends it with SIGSEGV)."""
    import mmap
    import subprocess
    import sys

    f = REFERENCE / "clean" / "store" / "commitlog" / "00000000000000000000"
    done = subprocess.run([sys.executable, "-c", _GUARDED_WALK, str(f)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"the walk read past its limit (exit {done.returncode}): {done.stderr[-2000:]}"
    n, end = map(int, done.stdout.split())
    want = fd.decode_file(f.read_bytes()[: mmap.PAGESIZE], 0, mode="lenient")
    assert n == sum(1 for b in want for k in b.column("kind").to_pylist() if k == "MESSAGE") > 1 and 0 < end <= mmap.PAGESIZE


def test_the_index_loops_give_the_same_answers_interpreted_and_compiled(monkeypatch):
    """The index loops run interpreted while a process has given them little to do (a
    small store's verify loads no numba) and compiled after, from one source: on random
    chains, sorted columns, keys and strings both ways answer alike, and the hashes are
    Java's."""
    rng = np.random.default_rng(7)

    def both(fn, *args):
        # as in a new process: the loops not loaded, nothing run interpreted yet
        monkeypatch.setattr(kernels, "_LOADED", False)
        monkeypatch.setattr(kernels, "_INTERPRETED", {})
        monkeypatch.setattr(kernels, "INTERPRETED_BELOW", 1 << 60)
        slow = fn(*args)
        assert not kernels._LOADED and kernels._INTERPRETED  # it ran interpreted
        monkeypatch.setattr(kernels, "INTERPRETED_BELOW", 0)
        fast = fn(*args)
        assert kernels._LOADED
        return slow, fast

    words = [b"", b"a", b"KEY-12345", bytes(rng.integers(32, 127, 300).astype(np.uint8)), b"~" * 40]
    data = np.frombuffer(b"".join(words), np.uint8)
    offs = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)

    def java(w: bytes) -> int:
        h = 0
        for c in w:
            h = (31 * h + c) & 0xFFFFFFFF
        return h

    slow, fast = both(kernels.ascii_hashes, data, offs)
    assert slow.tolist() == fast.tolist() == [java(w) for w in words]
    numpy_s, _ = both(lambda d, o: kernels.ascii_hashes(d, o, plain=hashes.ascii_hashes_vectorised), data, offs)  # what the small stores run
    assert numpy_s.tolist() == [java(w) for w in words]
    a, q = np.unique(rng.integers(0, 2000, 600)), np.sort(rng.integers(0, 2000, 500))
    slow, fast = both(kernels.merge_find, a, q)
    assert slow.tolist() == fast.tolist() and (slow >= 0).sum() > 10
    slots, prev = rng.integers(0, 90, 80).astype(np.int64), rng.integers(0, 90, 90).astype(np.int32)
    slow, fast = both(kernels.index_chains, slots, prev, 85)
    assert slow[0].tolist() == fast[0].tolist() and slow[1].tolist() == fast[1].tolist() and slow[2] == fast[2] > 0
    rec = np.unique(rng.integers(0, 5000, 300))
    pair_row = np.sort(rng.integers(0, len(rec), 500))
    pair_hash = rng.integers(0, 8, 500)
    ent = np.sort(rng.choice(np.concatenate([rec, rng.integers(0, 5000, 50)]), 400))
    slow, fast = both(kernels.join_keys, rec, pair_row, pair_hash, ent, rng.integers(0, 8, 400), rng.random(400) < 0.7)
    assert all(s.tolist() == f.tolist() for s, f in zip(slow, fast)) and slow[1].any() and slow[2].any()


def test_many_small_calls_share_one_interpreted_budget(monkeypatch):
    """A large store calls the index loops many times on small pieces: the budget for
    running them interpreted is the process's, so past it every call is compiled."""
    monkeypatch.setattr(kernels, "_LOADED", False)
    monkeypatch.setattr(kernels, "_INTERPRETED", {})
    monkeypatch.setattr(kernels, "INTERPRETED_BELOW", 1000)
    a = np.arange(0, 200, 2)
    for _ in range(4):  # 4 x 150 elements: within the budget
        kernels.merge_find(a, np.arange(50))
    assert not kernels._LOADED and kernels._INTERPRETED["_MERGE_FIND"] == 600
    for _ in range(3):
        kernels.merge_find(a, np.arange(50))
    assert kernels._LOADED and kernels._INTERPRETED["_MERGE_FIND"] < 1000
