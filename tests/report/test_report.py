"""`rmqlab report`: the facts a report states are those the other commands and Apache
RocketMQ state of the same store, its HTML needs nothing outside the file, every part
that cannot be read says why, and the store is not touched."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from rmqlab.cli import main
from rmqlab.report import SECTIONS, build_report
from tests.support import ALL_CASES, REFERENCE, SAMPLES, load_json

STORES = {f"reference/{c}": REFERENCE / c / "store" for c in ALL_CASES} | {f"sample/{s}": SAMPLES / s for s in ("clean", "crashed", "damaged")}


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def tree_digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Each store's report, as JSON and HTML, made by the command."""
    out = {}
    base = tmp_path_factory.mktemp("reports")
    for name, store in STORES.items():
        before = tree_digest(store)
        stem = name.replace("/", "-")
        assert main(["report", str(store), "-o", str(base / f"{stem}.json")]) == 0
        assert main(["report", str(store), "-o", str(base / f"{stem}.html")]) == 0
        assert tree_digest(store) == before, f"{name}: the report changed the store"
        out[name] = (json.loads((base / f"{stem}.json").read_text()), (base / f"{stem}.html").read_text())
    return out


@pytest.mark.parametrize("name", STORES)
def test_verdict_counts_are_verify_and_recovery_dry_run(name, reports, capsys):
    rep, _ = reports[name]
    store = STORES[name]
    code, out, _ = run_cli(capsys, "verify", store, "--json")
    verified = json.loads(out)
    severities = Counter(f["severity"] for f in verified["findings"])
    assert rep["verdict"]["errors"] == severities["error"] and rep["verdict"]["warnings"] == severities["warning"]
    assert rep["findings"]["counts"] == {s: severities[s] for s in ("error", "warning", "info")}
    assert sum(g["count"] for g in rep["findings"]["groups"]) == len(verified["findings"])
    assert {(g["kind"], g["severity"]): g["count"] for g in rep["findings"]["groups"]} == Counter((f["kind"], f["severity"]) for f in verified["findings"])
    code, out, _ = run_cli(capsys, "recover", store, "--dry-run", "--json")
    dry = json.loads(out)
    assert rep["verdict"]["records_cut"] == len(dry["lost_records"]) == rep["recovery"]["records_lost"]
    assert rep["recovery"]["lost_per_topic"] == dict(Counter(r["topic"] for r in dry["lost_records"]))
    assert rep["recovery"]["commitlog_end"] == dry["commitlog_end"] and rep["recovery"]["mode"] == dry["mode"]
    assert rep["verdict"]["clean_exit"] == (not (store / "abort").exists())
    assert rep["verdict"]["clean"] == (verified["ok"] and not (store / "abort").exists() and not dry["lost_records"])


@pytest.mark.parametrize("case", ALL_CASES)
def test_recovery_ends_the_log_where_rocketmq_did(case, reports):
    """RocketMQ's own start-up on the same bytes (dump.json) ends the log where the
    report says recovery would."""
    rep, _ = reports[f"reference/{case}"]
    assert rep["recovery"]["commitlog_end"] == load_json(case, "dump.json")["recovery"]["commitLogMaxOffsetAfterRecovery"]


def buckets(pairs, width: int) -> dict:
    out = Counter()
    for topic, ts in pairs:
        out[(topic, ts - ts % width)] += 1
    return dict(out)


def span_width(stamps: list[int], topics: int) -> int:
    """The bucket a capture's span is drawn in: seconds for seconds, widening with it."""
    from rmqlab.forensics.timeline import width_for

    return width_for(min(stamps), max(stamps), topics)


@pytest.mark.parametrize("case", ["clean", "crash", "v2ipv6"])
def test_timeline_counts_are_rocketmq_s_records_per_bucket(case, reports):
    rep, _ = reports[f"reference/{case}"]
    walk = [r for r in load_json(case, "dump.json")["commitLogWalk"] if r["kind"] == "MESSAGE"]
    t = rep["timeline"]
    stamps = [r["storeTimestamp"] for r in walk]
    width = span_width(stamps, len({r["topic"] for r in walk}))
    # a capture of seconds is drawn by the second (these stores were written in under a minute)
    assert max(stamps) - min(stamps) < 60_000 and width == 1_000
    assert t["bucket_ms"] == width and t["records"] == len(walk)
    got = {(topic, int(start)): n for topic, series in t["series"].items() for start, n in series.items()}
    assert got == buckets(((r["topic"], r["storeTimestamp"]) for r in walk), width)
    assert t["per_topic"] == dict(Counter(r["topic"] for r in walk))
    assert t["first_store_timestamp"] == min(r["storeTimestamp"] for r in walk) and t["last_store_timestamp"] == max(r["storeTimestamp"] for r in walk)


def test_timeline_of_a_sample_is_its_dumped_records(reports, capsys):
    rep, _ = reports["sample/clean"]
    code, out, _ = run_cli(capsys, "dump", SAMPLES / "clean", "--json")
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    got = {(topic, int(start)): n for topic, series in rep["timeline"]["series"].items() for start, n in series.items()}
    width = span_width([r["store_timestamp"] for r in rows], len({r["topic"] for r in rows}))
    assert rep["timeline"]["bucket_ms"] == width
    assert got == buckets(((r["topic"], r["store_timestamp"]) for r in rows), width) and rep["timeline"]["records"] == len(rows)


def test_crash_window_counts_the_records_stored_after_the_checkpoint_s_flush(reports):
    rep, _ = reports["reference/crash"]
    dump = load_json("crash", "dump.json")
    flushed = dump["beforeLoad"]["checkpoint"]["physicMsgTimestamp"]
    walk = [r for r in dump["commitLogWalk"] if r["kind"] == "MESSAGE"]
    window = rep["timeline"]["crash_window"]
    assert window["from"] == flushed
    assert window["records"] == sum(r["storeTimestamp"] > flushed for r in walk)
    assert rep["timeline"]["crash_window"] is not None and reports["reference/clean"][0]["timeline"]["crash_window"] is None


@pytest.mark.parametrize("name", ["reference/crash-torn", "sample/damaged"])
def test_findings_carry_file_offset_bytes_and_what_the_broker_does(name, reports):
    rep, _ = reports[name]
    store = STORES[name]
    groups = rep["findings"]["groups"]
    assert groups and groups[0]["severity"] == "error"
    for g in groups:
        assert g["title"] and g["broker"], g["kind"]
        for f in g["listed"]:
            if f["offset"] is not None and (store / f["file"]).is_file():
                data = (store / f["file"]).read_bytes()[f["offset"]: f["offset"] + 32]
                assert f["hex"] == (" ".join(f"{b:02x}" for b in data) or None)


@pytest.mark.parametrize("name", STORES)
def test_evidence_lists_every_file_with_its_sha256(name, reports):
    rep, _ = reports[name]
    assert {f["path"]: f["sha256"] for f in rep["evidence"]["files"]} == tree_digest(STORES[name])
    assert rep["rmqlab_version"] and rep["made"] and rep["command"].startswith("rmqlab report ")


def test_consumers_name_the_groups_that_lose_unconsumed_messages(reports, capsys):
    rep, _ = reports["sample/damaged"]
    code, out, _ = run_cli(capsys, "recover", SAMPLES / "damaged", "--json")
    losses = json.loads(out)["group_losses"]
    assert losses, "the damaged sample's recovery cuts messages groups had not consumed"
    lost = Counter()
    for g in losses:
        lost[g["group"]] += g["unconsumed_lost"]
    assert {g["group"]: g["lost_unconsumed"] for g in rep["consumers"]["groups"] if g["lost_unconsumed"]} == {k: v for k, v in lost.items() if v}
    assert rep["verdict"]["unconsumed_lost"] == sum(lost.values())
    code, out, _ = run_cli(capsys, "offsets", SAMPLES / "damaged", "--json")
    lags = Counter()
    for line in out.splitlines():
        row = json.loads(line)
        lags[row["group"]] += max(row["lag"], 0)
    assert {g["group"]: g["lag"] for g in rep["consumers"]["groups"]} == dict(lags)


@pytest.mark.parametrize("name", STORES)
def test_html_is_self_contained_and_holds_every_section(name, reports):
    _, page = reports[name]
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"<script|<link|<iframe|<object|<embed|\bsrc\s*=|url\(|@import", page, re.I)
    assert set(re.findall(r"https?://[^\s'\"<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    for key, heading in SECTIONS:
        assert f"<section id='{key}'><h2>{heading}</h2>" in page
    assert "could not be read because" not in page


def test_json_and_html_state_the_same_verdict(reports):
    rep, page = reports["sample/damaged"]
    from html import escape

    assert escape(rep["verdict"]["text"]) in page
    for g in rep["findings"]["groups"]:
        assert f"{escape(g['kind'])} — {escape(g['title'])} ({g['count']:,})" in page


def test_a_part_that_fails_says_why_and_the_others_stand(monkeypatch, tmp_path):
    from rmqlab.report import parts

    def broken(*args, **kwargs):
        raise OSError(5, "Input/output error", "config/consumerOffset.json")

    monkeypatch.setattr(parts, "consumers_part", broken)
    import rmqlab.report as report

    monkeypatch.setattr(report, "consumers_part", broken)
    rep = build_report(SAMPLES / "crashed")
    assert rep.sections["consumers"] == {"unavailable": "could not be read because [Errno 5] Input/output error: 'config/consumerOffset.json'"}
    page = rep.to_html()
    assert "This part could not be read because [Errno 5] Input/output error" in page
    assert all(isinstance(rep.sections[k], dict) and "unavailable" not in rep.sections[k] for k, _ in SECTIONS if k != "consumers")


def junk_stores(base: Path):
    """Stores whose bytes are anything but a store's."""
    empty = base / "empty"
    empty.mkdir()
    yield "an empty directory", empty
    noise = base / "noise"
    (noise / "commitlog").mkdir(parents=True)
    (noise / "commitlog" / "00000000000000000000").write_bytes(os.urandom(8192))
    (noise / "checkpoint").write_bytes(os.urandom(100))
    (noise / "config").mkdir()
    (noise / "config" / "consumerOffset.json").write_text("{not json")
    (noise / "index").mkdir()
    (noise / "index" / "20260101000000000").write_bytes(os.urandom(333))
    yield "random bytes in every file", noise
    cut = base / "cut"
    shutil.copytree(SAMPLES / "crashed", cut)
    for p in sorted((cut / "commitlog").iterdir())[:1]:
        p.write_bytes(p.read_bytes()[:1000])
    yield "a first commitlog file cut short", cut


def test_no_bytes_stop_the_report(tmp_path, capsys):
    for what, store in junk_stores(tmp_path):
        code, out, err = run_cli(capsys, "report", store, "-o", tmp_path / "r.html")
        assert code == 0, (what, err)
        assert "Traceback" not in err and err.startswith(str(tmp_path / "r.html")), (what, err)
        page = (tmp_path / "r.html").read_text()
        for key, heading in SECTIONS:
            assert f"<section id='{key}'><h2>{heading}</h2>" in page, what
        assert "error in rmqlab" not in page, (what, re.findall(r"could not be read because[^<]*", page))


def test_refuses_what_is_not_a_directory(tmp_path, capsys):
    code, out, err = run_cli(capsys, "report", tmp_path / "nothing", "-o", tmp_path / "r.html")
    assert code == 2 and "not a directory" in err and not (tmp_path / "r.html").exists()


LAYOUTS = ["dledger_converted", "batch_consume_queue", "consume_queue_ext", "lmq_unnamed", "extras", "rocksdb_consume_queue"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_production_layout_is_reported_or_says_why(layout, tmp_path):
    """The layouts a real broker leaves beyond the classic store (tests/layouts.py): each
    part is read or states why not, never an error of rmqlab's; where rmqlab does not
    model the start-up, the verdict does not claim what recovery cuts."""
    if layout == "rocksdb_consume_queue":
        pytest.importorskip("rocksdict")
    import tests.layouts as layouts

    root = getattr(layouts, layout)(tmp_path)
    rep = build_report(root)
    page = rep.to_html()
    assert "error in rmqlab" not in page
    for key, heading in SECTIONS:
        assert f"<section id='{key}'><h2>{heading}</h2>" in page
    recovery = rep.sections["recovery"]
    if recovery["mode"] == "not modelled":
        assert rep.sections["verdict"]["records_cut"] is None and rep.sections["verdict"]["clean"] is None
        assert "does not model" in rep.sections["verdict"]["text"] and "does not model" in page
    elif recovery["not_modelled"]:
        assert "does not model" in rep.sections["verdict"]["text"]


def test_releases_that_recover_differently_each_get_their_row(tmp_path):
    """A crashed store damaged far back, whose bytes leave 5.3.3 and 5.4+ possible and
    whose recoveries part there (tests/recovery/test_by_release.py): the report shows each
    release's start, end, records cut and what it rebuilds, as that release's own dry
    run says, with the command naming it."""
    from rmqlab.lab.crashlab import far_back_crash
    from rmqlab.recovery import recover
    from tests.recovery.test_by_release import FILE, N, _far_back_damage

    lab = far_back_crash(tmp_path / "store", messages=N, file_size=FILE)
    store, cfg = lab.root, lab.config
    _far_back_damage(store, lab.puts)
    rep = build_report(store, config=cfg)
    rows = rep.sections["recovery"]["candidates"]
    assert [c["release"] for c in rows] == ["5.3.3", "5.4.0 and 5.5.0"] and rep.sections["recovery"]["releases_differ"]
    for c in rows:
        own = recover(store, config=cfg, rocketmq_version=c["release"].split(" and ")[0])
        assert (c["start_file"], c["commitlog_end"], c["records_lost"]) == (own.start_file, own.commitlog_end, own.records_lost)
        assert c["queues_changed"] == len(own.changed_queues) and [i["action"] for i in c["index"]] == [i.action for i in own.index]
        assert c["command"].endswith(f"--rocketmq-version {c['release'].split(' and ')[0]}")
    assert "do not say which RocketMQ release" in rep.sections["verdict"]["text"]


def _zeroed_inside_the_first_file(tmp_path) -> Path:
    """The clean sample with ten records of its first file zeroed: verify's walk ends
    that file at the zeros, the scan reads on to the records after them."""
    from rmqlab.scan.decode import decode_file
    from rmqlab.store import open_store

    root = tmp_path / "zeroed"
    shutil.copytree(SAMPLES / "clean", root)
    with open_store(root, strict=False) as st:
        f = st.commitlog.queue.files[0]
        starts = [p for b in decode_file(f.buf, f.file_from_offset, file=str(f.path)) for p in b.column("physical_offset").to_pylist()]
        path = f.path
    with open(path, "r+b") as fh:
        fh.seek(starts[100])
        fh.write(bytes(starts[110] - starts[100]))
    return root


@pytest.mark.parametrize("name", ["sample/damaged", "reference/crash-torn", "zeroed"])
def test_the_map_and_timeline_counted_on_verifys_pass_are_the_maps_own(name, tmp_path, monkeypatch):
    """The report counts its map and timeline on verify's pass over the log (one decode
    for the three): they are what the map's own pass counts — records whose CRC fails
    (verify's pass checks CRCs, the map's does not), bytes that stop the decoder, and
    the records past a file's zeros, where verify's walk ends the file and the scan goes
    on."""
    from rmqlab.forensics import storemap, verify

    import functools

    root = _zeroed_inside_the_first_file(tmp_path) if name == "zeroed" else STORES[name]
    # batches of 16 rows: a file's scan goes on for batches after the one verify stops in
    monkeypatch.setattr(verify, "scan_range", functools.partial(verify.scan_range, batch_rows=16))
    told = []
    real = verify.verify_store
    monkeypatch.setattr(verify, "verify_store", lambda *a, **k: (told.append(k.get("on_batch")), real(*a, **k))[1])
    fed = build_report(root)
    assert told and told[0] is not None
    monkeypatch.setattr(storemap.LogPixels, "of_log", classmethod(lambda cls, *a, **k: None))
    own = build_report(root)
    assert told[-1] is None
    assert fed.map_svg == own.map_svg and fed.sections["map"] == own.sections["map"]
    assert fed.sections["timeline"] == own.sections["timeline"] and fed.sections["timeline"]["records"] > 0
    if name == "zeroed":  # verify's walk did stop short of records the map counts
        assert fed.sections["findings"]["stats"]["walk_end"] < max(f["data_end"] for f in fed.sections["map"]["files"][:1])


def test_a_map_pass_that_fails_on_verifys_thread_gets_a_pass_of_its_own(monkeypatch):
    """An error in the counts fed by verify's pass: the map and timeline are counted by
    the map's own pass instead, not drawn from counts that stopped part way."""
    from rmqlab.forensics import storemap

    root = STORES["sample/crashed"]
    want = build_report(root)
    real, calls = storemap.LogPixels.add, []

    def add(self, *a):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("boom")
        return real(self, *a)

    monkeypatch.setattr(storemap.LogPixels, "add", add)
    got = build_report(root)
    assert len(calls) > 2 and got.map_svg == want.map_svg and got.sections["timeline"] == want.sections["timeline"]


def test_the_evidence_of_sparse_files_and_of_what_is_not_a_file(tmp_path):
    """A sparse file's digest (holes hashed as the zeros they read as, without reading
    them) is its bytes'; a FIFO is listed, not opened (its open would wait for a
    writer); an empty file has the empty digest."""
    from rmqlab.report.parts import DIGEST_CHUNK, evidence_part

    with open(tmp_path / "sparse", "wb") as f:  # data, a hole longer than a chunk, data, a trailing hole
        f.write(b"a" * 100)
        f.seek(DIGEST_CHUNK + 4096 * 3)
        f.write(b"b" * 5000)
        f.truncate(2 * DIGEST_CHUNK + 12345)
    (tmp_path / "empty").write_bytes(b"")
    os.mkfifo(tmp_path / "fifo")
    got = {f["path"]: f for f in evidence_part(tmp_path)["files"]}
    assert got["sparse"]["sha256"] == hashlib.sha256((tmp_path / "sparse").read_bytes()).hexdigest()
    assert got["empty"]["sha256"] == hashlib.sha256(b"").hexdigest()
    assert got["fifo"]["sha256"] is None and "not a regular file" in got["fifo"]["error"]
