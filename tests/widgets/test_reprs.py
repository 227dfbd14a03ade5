"""Rich notebook displays (``_repr_html_``) show what the objects hold."""

from __future__ import annotations

from rmqlab.forensics.diff import diff_stores
from rmqlab.forensics.hexview import HexView
from rmqlab.forensics.verify import verify_store
from rmqlab.lookup import query_by_key
from rmqlab.recovery import recover
from rmqlab.lab.samples import shipped_dir
from rmqlab.store import open_store
from rmqlab.store.summary import summarize
from tests.support import REFERENCE

SAMPLES = shipped_dir()


def test_record_summary_checkpoint_and_reader(dumps):
    with open_store(REFERENCE / "clean" / "store") as s:
        first = dumps["clean"]["commitLogWalk"][1]
        rec = s.commitlog.read(first["physicalOffset"])
        html = rec._repr_html_()
        assert f"record at {first['physicalOffset']}" in html and first["topic"] in html
        assert "BLANK" in s.commitlog.read(65514)._repr_html_()
        assert "628 messages" in summarize(s)._repr_html_()
        assert "checkpoint" in s.checkpoint()._repr_html_()
        assert "20261121" in s._repr_html_()  # index files listed without a full scan


def test_key_query_and_hexview():
    with open_store(SAMPLES / "clean") as s:
        res = query_by_key(s, "Orders", "Aa")
        html = res._repr_html_()
    assert html.count("COLLISION") == len(res.collisions) == 2
    assert html.count("key confirmed") == len(res.records)
    hv = HexView(SAMPLES / "clean" / "commitlog" / "00000000000000000000", 0, 64)
    assert "totalSize" in hv._repr_html_()


def test_reports():
    rep = recover(SAMPLES / "crashed")
    assert "abnormal recovery" in rep._repr_html_() and str(rep.commitlog_end) in rep._repr_html_()
    v = verify_store(SAMPLES / "damaged")
    html = v._repr_html_()
    for kind in {f.kind for f in v.findings}:
        assert kind in html
    d = diff_stores(SAMPLES / "crashed", SAMPLES / "damaged")
    assert "3 file(s) differ" in d._repr_html_() and "BODY CRC FAILS" in d._repr_html_()


def test_record_view_escapes_property_names_once():
    with open_store(SAMPLES / "clean") as s:
        rec = next(r for r in s.commitlog.iter_records() if r.keys)
    html = rec._repr_html_()
    assert "property &#x27;KEYS&#x27;" in html  # renders as: property 'KEYS'
    assert "&amp;#x27;" not in html  # escaped twice renders as: property &#x27;KEYS&#x27;


def test_files_table_has_one_row_per_consume_queue_and_chains_summarise_skips():
    from rmqlab.render.notebook import file_rows, files_html, grouped_file_rows

    rows = grouped_file_rows(SAMPLES / "clean")
    cq_files = [r for r in file_rows(SAMPLES / "clean") if r[1] == "consume queue"]
    queues = [r for r in rows if r[1] == "consume queue"]
    assert len(queues) == len({r[0].rsplit("/", 1)[0] for r in cq_files}) < len(cq_files)
    assert sum(r[2] for r in queues) == sum(r[2] for r in cq_files)  # bytes add up
    assert files_html(SAMPLES / "clean").count("consumequeue/") == len(queues)
    with open_store(SAMPLES / "clean") as s:
        res = query_by_key(s, "Orders", "Aa")
        html = res._repr_html_()
        skipped = sum(1 for _, steps in res.walk for st in steps if not st.hash_matches)
    assert skipped > 1 and "entries of other keys sharing the slot, skipped" in html
    assert html.count("another key sharing the slot") + html.count("other keys sharing the slot") < skipped


def _maps(html):
    """The store maps drawn in a view: each one's header line (the end of the log; the recovery and what it means)."""
    import re

    return re.findall(r"bytes; the next start ends the log at ([\d,]+)(?: \((\w+) recovery\): ([\w ,]+))?", html)


def test_info_verify_and_recovery_views_draw_the_store_map(tmp_path, monkeypatch):
    from rmqlab.render import storemap

    with open_store(SAMPLES / "crashed") as s:
        assert len(_maps(summarize(s)._repr_html_())) == 1  # info's view: the map under the tables
        assert _maps(s._repr_html_()) == []  # the reader's view reads metadata only: no pass over the log
    v = verify_store(SAMPLES / "damaged")
    html = v._repr_html_()
    on_log = [f for f in v.findings if f.offset is not None and "/commitlog/" in f.file]
    assert len(_maps(html)) == 1 and on_log and html.count("h8l-4,8z") == len(on_log)  # each finding on the log, marked
    dry = recover(SAMPLES / "crashed")
    (before,) = _maps(dry._repr_html_())
    assert before[1] == "abnormal" and int(before[0].replace(",", "")) == dry.commitlog_end and before[2] == dry.consequence
    assert "a dry run changed nothing" in dry._repr_html_()
    copy = recover(SAMPLES / "crashed", out=tmp_path / "copy")
    before, after = _maps(copy._repr_html_())
    # the copy's map: its next start ends the log where the recovery ended it
    assert int(before[0].replace(",", "")) == copy.commitlog_end == int(after[0].replace(",", ""))
    monkeypatch.setattr(storemap, "INLINE_MAP_BYTES", 1000)  # a capture too large to draw inline: said, not drawn
    html = verify_store(SAMPLES / "damaged")._repr_html_()
    assert _maps(html) == [] and "not drawn inline" in html and "rmqlab map" in html


def test_file_timeline_draws_each_files_life():
    from matplotlib.collections import PolyCollection

    from rmqlab.render.plots import file_timeline

    a, b, c = "00000000000000000000", "00000000000000065536", "00000000000000131072"
    steps = [(0, [a, b], a), (1, [a, b], a), (2, [a, b, c], b), (3, [a, b, c], b), ("clean-up", [b, c], None)]
    fig = file_timeline(steps)
    ax = fig.axes[0]
    bars = [p for p in ax.collections if isinstance(p, PolyCollection)]
    spans = [[(round(v[:, 0].min(), 1), round(v[:, 0].max(), 1)) for v in (path.vertices for path in p.get_paths())] for p in bars]
    # per file: where it exists, then where it is written into (x of step i is i ± 0.5)
    assert spans == [[(-0.5, 3.5)], [(-0.5, 1.5)], [(-0.5, 4.5)], [(1.5, 3.5)], [(1.5, 4.5)], []]
    crosses = [line.get_xdata().tolist() for line in ax.lines if line.get_marker() == "x" and len(line.get_xdata())]
    assert crosses == [[4]]  # file a, gone at the clean-up
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "65536", "131072"]
