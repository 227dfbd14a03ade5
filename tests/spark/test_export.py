"""The records as a Parquet dataset (rmqlab.scan.export): ``rmqlab export`` and
``rmqlab.spark.export`` write the rows the decoder reads — every column, damaged rows
too in lenient mode —, a second run appends only what the log gained, and a run killed
before its commit leaves the dataset as it was."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.engine import Message, MessageStore
from rmqlab.scan import export as ex
from rmqlab.scan.decode import ARROW_SCHEMA, decode_file, with_crc_errors
from rmqlab.store import open_store
from tests.spark.conftest import store_root


def cli(*argv):
    return subprocess.run([sys.executable, "-m", "rmqlab", *map(str, argv)], capture_output=True, text=True, timeout=300)


def _dataset_rows(out) -> list[dict]:
    t = ds.dataset(str(out), format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()
    t = t.select(ARROW_SCHEMA.names).sort_by("physical_offset")
    return t.to_pylist()


def _decoder_rows(root, mode="strict") -> list[dict]:
    """The decoder's rows up to where the log is served, a CRC mismatch saying so in
    ``error`` (the decoder's own batches leave it null)."""
    with open_store(root, strict=False) as st:
        end = st.commitlog.served_end()
        rows = []
        for f in st.commitlog.queue.files:
            for b in decode_file(f.buf, f.file_from_offset, file=str(f.path), mode=mode):
                b = with_crc_errors(b, str(f.path), f.file_from_offset)
                rows += [r for r in b.to_pylist() if r["kind"] != "BLANK" and r["physical_offset"] < end]
    return sorted(rows, key=lambda r: r["physical_offset"])


@pytest.mark.parametrize("case,mode", [("clean", "strict"), ("crash-torn", "lenient")])
def test_the_export_holds_the_decoders_rows(tmp_path, case, mode):
    done = cli("export", store_root(case), tmp_path / "out", "--mode", mode, "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    got = _dataset_rows(tmp_path / "out")
    assert got == _decoder_rows(store_root(case), mode) and run["rows"] == len(got) > 0
    # partitioned by topic and store hour: each file's rows share them
    for rel, _ in run["files"]:
        t = ds.dataset(str(tmp_path / "out" / rel), format="parquet").to_table()
        assert len(set(t.column("topic").to_pylist())) == 1 and f"topic_dir={ex.topic_dir(t.column('topic')[0].as_py())}/" in rel
    # what readers prune row groups by has min/max statistics; bodies are not dictionary-encoded
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(tmp_path / "out" / run["files"][0][0]).metadata
    cols = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i) for i in range(meta.num_columns)}
    for name in ("physical_offset", "store_timestamp", "queue_offset", "topic"):
        assert cols[name].statistics is not None and cols[name].statistics.has_min_max, name
    assert cols["body"].statistics is None or not cols["body"].statistics.has_min_max
    assert "PLAIN_DICTIONARY" in str(cols["topic"].encodings) or "RLE_DICTIONARY" in str(cols["topic"].encodings)
    assert not any("DICTIONARY" in str(e) for e in cols["body"].encodings)
    assert "RLE_DICTIONARY" in str(cols["properties.key_value.key"].encodings)  # names repeat; values mostly not


def test_a_crc_mismatch_inside_the_log_says_so_as_sparks_source_does(spark, tmp_path):
    """A record whose body CRC fails, before the end of the log (RocketMQ serves the
    records after it): its row in the export says the damage, in the words Spark's
    source gives the same row — one ``error`` in both."""
    from rmqlab.lab.samples import shipped_dir

    root = shipped_dir() / "damaged"
    done = cli("export", root, tmp_path / "out", "--mode", "lenient")
    assert done.returncode == 0, done.stderr
    rows = {r["physical_offset"]: r for r in _dataset_rows(tmp_path / "out")}
    bad = {p: (r["kind"], r["error"]) for p, r in rows.items() if r["kind"] != "MESSAGE"}
    assert bad.get(137674, ("", ""))[0] == "BODY_CRC" and "137674" in bad[137674][1]
    assert max(rows) > 137674  # rows after it: inside the log
    served = spark.read.format("rocketmq").option("columns", "physical_offset,kind,error").load(str(root)).collect()
    assert {r.physical_offset: (r.kind, r.error) for r in served if r.kind != "MESSAGE" and r.physical_offset in rows} == bad


@pytest.mark.parametrize("threads", [1, 2])
def test_small_row_groups_written_by_threads_hold_every_row_in_order(tmp_path, monkeypatch, threads):
    """Batches of five rows decoded ahead, row groups of seven written on the Parquet
    threads, each file's waiting for the one in flight before it, all of them when the
    rows gathered pass a few KiB: the dataset is still the decoder's rows, each file in
    log order in several row groups."""
    import pyarrow.parquet as pq

    from rmqlab.scan import kernels
    from rmqlab.scan.ahead import read_ahead

    monkeypatch.setattr(kernels, "_WORKERS", threads)
    monkeypatch.setattr(ex, "ROW_GROUP_ROWS", 7)
    monkeypatch.setattr(ex, "GATHERED_BYTES", 1 << 16)
    import threading
    import time

    writing, overlaps, write = set(), [], pq.ParquetWriter.write_table

    def slow_write(self, table, *a, **k):  # a row group that takes a while: a second one of the same file would overlap
        if id(self) in writing:
            overlaps.append(id(self))
        writing.add(id(self))
        time.sleep(0.002)
        try:
            return write(self, table, *a, **k)
        finally:
            writing.discard(id(self))

    monkeypatch.setattr(pq.ParquetWriter, "write_table", slow_write)
    root, out = store_root("clean"), tmp_path / "out"
    with open_store(root, strict=False) as st:
        lo, end = st.commitlog.min_offset, st.commitlog.served_end()
        small = (b.slice(i, 5) for f in st.commitlog.queue.files for b in decode_file(f.buf, f.file_from_offset, file=str(f.path))
                 for i in range(0, b.num_rows, 5))
        manifest, run = ex.begin(out, str(root), ex.settings_of("strict", True, True))
        r = ex.commit(out, manifest, run, lo, end, ex.write_batches(out, run, 0, read_ahead(small), start=lo, end=end))
    assert _dataset_rows(out) == _decoder_rows(root)
    assert any(n > 7 for _, n in r.files) and not overlaps
    for rel, n in r.files:
        f = pq.ParquetFile(out / rel)
        offsets = f.read(columns=["physical_offset"]).column(0).to_pylist()
        assert offsets == sorted(offsets) and len(offsets) == n and (n <= 7 or f.metadata.num_row_groups > 1)


def test_a_second_run_appends_only_what_the_log_gained(tmp_path):
    root = tmp_path / "s"
    cfg = MessageStoreConfig.from_mapping({"mappedFileSizeCommitLog": "65536"})
    with MessageStore.open(root, cfg) as st:
        for i in range(50):
            st.put(Message("A" if i % 2 else "B", b"x%d" % i, {"KEYS": f"k{i}"}))
    first = json.loads(cli("export", root, tmp_path / "out", "--json").stdout)
    with MessageStore.open(root, cfg) as st:
        for i in range(30):
            st.put(Message("C", b"y%d" % i, {}))
    second = json.loads(cli("export", root, tmp_path / "out", "--json").stdout)
    assert (first["rows"], second["rows"], second["start"]) == (50, 30, first["end"])
    assert _dataset_rows(tmp_path / "out") == _decoder_rows(root)
    assert [t for t in (json.loads((tmp_path / "out" / ex.MANIFEST).read_text())["runs"])][-1]["end"] == second["end"]


def test_a_killed_run_leaves_the_dataset_as_it_was(tmp_path, monkeypatch):
    root = tmp_path / "s"
    shutil.copytree(store_root("clean"), root)
    out = tmp_path / "out"
    with open_store(root, strict=False) as st:
        files, lo, end = st.commitlog.queue.files, st.commitlog.min_offset, st.commitlog.served_end()
        half = files[len(files) // 2].file_from_offset
        ex.export_files(out, str(root), files, lo, half)  # a first run up to a file boundary
        before = _dataset_rows(out)

        def killed(*a, **k):
            raise KeyboardInterrupt  # the process dies after writing, before committing

        monkeypatch.setattr(ex, "commit", killed)
        with pytest.raises(KeyboardInterrupt):
            ex.export_files(out, str(root), files, lo, end)
        assert any(p.name.startswith("_part-") for p in out.rglob("*.parquet"))  # its files are there, staged
        assert _dataset_rows(out) == before  # and invisible
        monkeypatch.undo()
        r, _ = ex.export_files(out, str(root), files, lo, end)
    assert r.start == half and not any(p.name.startswith("_") for p in out.rglob("*.parquet"))
    assert _dataset_rows(out) == _decoder_rows(root)


def test_another_store_or_other_settings_are_refused(tmp_path):
    assert cli("export", store_root("clean"), tmp_path / "out").returncode == 0
    other = cli("export", store_root("crash"), tmp_path / "out")
    assert other.returncode == 2 and "holds an export of" in other.stderr
    lenient = cli("export", store_root("clean"), tmp_path / "out", "--mode", "lenient")
    assert lenient.returncode == 2 and "other settings" in lenient.stderr and "mode" in lenient.stderr


def test_topic_directories_a_file_system_takes():
    assert ex.topic_dir("TopicA") == "TopicA"
    long = ex.topic_dir("T" * 300)
    assert len(long.encode()) < 100 and long != ex.topic_dir("T" * 299)
    assert "/" not in ex.topic_dir("a/b") and ex.topic_dir(None) == "unknown"


@pytest.mark.spark
def test_spark_export_writes_the_same_dataset_from_the_workers(spark, tmp_path):
    import rmqlab.spark

    run, notes = rmqlab.spark.export(spark, str(store_root("crash-torn")), str(tmp_path / "out"), mode="lenient", split_size=64 << 10)
    assert not notes and run.files
    assert _dataset_rows(tmp_path / "out") == _decoder_rows(store_root("crash-torn"), "lenient")
    # and Spark's own Parquet reader reads it, values and all
    back = spark.read.parquet(str(tmp_path / "out")).select("physical_offset", "store_timestamp", "properties", "body").collect()
    assert sorted((r.physical_offset, r.store_timestamp, dict(r.properties or {}), bytes(r.body or b"")) for r in back) == [
        (r["physical_offset"], r["store_timestamp"], dict(r["properties"] or []), r["body"] or b"") for r in _dataset_rows(tmp_path / "out")]
    assert len(back) == sum(n for _, n in run.files)


@pytest.mark.spark
def test_a_strict_spark_export_fails_on_the_first_damage_in_the_log_as_the_local_one_does(spark, tmp_path):
    """Damage near the end of the first split and near the start of the second: the
    second split's task meets its damage first, and still the run fails on the first
    in the log, in the local command's words."""
    import rmqlab.spark
    from rmqlab.errors import RmqlabError
    from rmqlab.lab.samples import shipped_dir

    root = tmp_path / "store"
    shutil.copytree(shipped_dir() / "damaged", root)
    first = sorted((root / "commitlog").iterdir())[0]
    with open_store(root, strict=False) as st:
        f = st.commitlog.queue.files[0]
        late = max(r["physical_offset"] for b in decode_file(f.buf, f.file_from_offset, file=str(f.path), mode="lenient")
                   for r in b.select(["physical_offset", "kind"]).to_pylist() if r["kind"] == "MESSAGE")
    with open(first, "r+b") as fh:  # the record's stored body CRC (its third field) no longer matches
        fh.seek(late + 8)
        crc = fh.read(4)
        fh.seek(late + 8)
        fh.write(bytes(b ^ 0xFF for b in crc))
    local = cli("export", root, tmp_path / "local")
    assert local.returncode != 0 and f"physical offset {late})" in local.stderr, local.stderr
    with pytest.raises(RmqlabError) as err:
        rmqlab.spark.export(spark, str(root), str(tmp_path / "out"), split_size=64 << 10)
    assert str(err.value) in local.stderr


def test_a_batch_is_split_by_topic_and_hour_each_partition_in_batch_order_and_one_grouped_already_is_not_copied():
    hour = ex.HOUR_MS
    topics = ["a", "b", "a", None, "b", "a"]
    stamps = [5 * hour, 5 * hour, 6 * hour + 1, None, 5 * hour + 2, 5 * hour + 3]
    batch = pa.RecordBatch.from_pydict({"physical_offset": list(range(6)), "topic": topics, "store_timestamp": stamps},
                                       schema=pa.schema([("physical_offset", pa.int64()), ("topic", pa.string()), ("store_timestamp", pa.int64())]))
    parts = {key: rows.column("physical_offset").to_pylist() for key, rows in ex._partitions(batch)}
    assert parts == {("a", "1970-01-01", "05"): [0, 5], ("a", "1970-01-01", "06"): [2], ("b", "1970-01-01", "05"): [1, 4],
                     ("unknown", "unknown", "unknown"): [3]}
    grouped = batch.take(pa.array([0, 5, 2, 1, 4]))  # partition by partition already
    data = grouped.column("physical_offset").buffers()[1]
    seen = []
    for key, rows in ex._partitions(grouped):
        seen.append((key, rows.column("physical_offset").to_pylist()))
        assert rows.column("physical_offset").buffers()[1].address == data.address  # a slice of the batch, not a copy
    assert seen == [(k, v) for k, v in parts.items() if k[0] != "unknown"]


def test_a_parts_last_row_groups_are_written_while_the_next_parts_rows_are_gathered(tmp_path, monkeypatch):
    """Two pieces of work (as two commitlog files are): the first's files are finished
    on the Parquet threads while the second's batches go on, not before them; each
    piece has files of its own, and the dataset is the decoder's rows."""
    import threading

    import pyarrow.parquet as pq

    from rmqlab.scan import kernels

    monkeypatch.setattr(kernels, "_WORKERS", 2)
    root, out = store_root("clean"), tmp_path / "out"
    went_on, seen, write = threading.Event(), [], pq.ParquetWriter.write_table

    def first_part_waits(self, table, *a, **k):  # the first piece's row groups wait for the second piece to go on
        if "part-00001-00000" in str(self.where):
            seen.append(went_on.wait(10))
        return write(self, table, *a, **k)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", first_part_waits)
    with open_store(root, strict=False) as st:
        lo, end = st.commitlog.min_offset, st.commitlog.served_end()
        batches = [b.slice(i, 10) for f in st.commitlog.queue.files for b in decode_file(f.buf, f.file_from_offset, file=str(f.path))
                   for i in range(0, b.num_rows, 10)]
        half = len(batches) // 2

        def pieces():
            for i, b in enumerate(batches):
                if i == half + 1:
                    went_on.set()  # the second piece's first batch was taken in, its second asked for
                yield (0 if i < half else 1), b

        manifest, run = ex.begin(out, str(root), ex.settings_of("strict", True, True))
        r = ex.commit(out, manifest, run, lo, end, ex.write_pieces(out, run, pieces(), start=lo, end=end))
    assert seen and all(seen)
    assert {rel.rsplit("-", 1)[1] for rel, _ in r.files} == {"00000.parquet", "00001.parquet"}
    assert _dataset_rows(out) == _decoder_rows(root)
