"""The read-side widgets driven headlessly over stores written by RocketMQ: what a
widget shows must be what RocketMQ itself answered (``dump.json``)."""

from __future__ import annotations

import re

import pytest

from rmqlab.format.hashing import tags_code
from rmqlab.store import open_store
from rmqlab.widgets import ChainExplorer, HexViewer, QueueExplorer, StoreBrowser

from tests.support import REFERENCE


@pytest.fixture(scope="module")
def clean():
    s = open_store(REFERENCE / "clean" / "store")
    yield s
    s.close()


# -- ChainExplorer ------------------------------------------------------------------------------
def _queries(dump, n=40):
    qs = [q for q in dump["indexQueries"] if len(q["indexPhyOffsets"]) > 1]
    return qs[:n]


def test_chain_explorer_answers_as_rocketmq(clean, dumps):
    w = ChainExplorer(clean)
    checked = 0
    for q in _queries(dumps["clean"]):
        w.topic.value = q["topic"]
        w.key.value = q["key"]  # typing a key runs the lookup
        assert w.error is None
        assert w.result.raw_offsets == q["indexPhyOffsets"]
        assert [r.physical_offset for r in w.result.records] == q["queryMessagePhyOffsets"]
        for off in q["queryMessagePhyOffsets"]:
            assert f"<td style='border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top'>{off}</td>" in w.output.value
        checked += 1
    assert checked >= 10


def test_chain_explorer_button_and_slot_sharing(clean, dumps):
    # with 64 slots, every chain visits entries of other keys: they must be shown as
    # "hash differs" and not returned
    w = ChainExplorer(clean, topic="TopicA")
    w.key.unobserve_all()
    w.key.value = "shared"
    assert w.result is None  # nothing ran yet: only the button runs it now
    w.lookup.click()
    assert w.result is not None and w.result.key == "shared"
    assert "hash differs" in w.output.value
    steps = [s for _, ss in w.result.walk for s in ss]
    assert any(not s.hash_matches for s in steps)
    slot = re.search(r"slot = \d+ % 64 = <b>(\d+)</b>", w.output.value)
    assert slot is not None


def test_chain_explorer_unknown_key_and_bad_store(tmp_path, clean):
    w = ChainExplorer(clean, topic="TopicB", key="no-such-key")
    assert w.result.records == [] and w.result.raw_offsets == []
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / "00000000000000000000").write_bytes(b"\x00\x00\x00\x10\xde\xad\xbe\xef" + bytes(56))
    hv = HexViewer(tmp_path)
    assert "damage" in hv.output.value or "BAD_MAGIC" in hv.output.value


# -- QueueExplorer --------------------------------------------------------------------------------
@pytest.mark.parametrize("queue", ["TopicA/1", "TopicC/3"])
def test_queue_explorer_tag_filter_matches_rocketmq_units(clean, dumps, queue):
    cq = dumps["clean"]["consumeQueues"][queue]
    topic, qid = queue.split("/")
    w = QueueExplorer(clean, topic, int(qid), count=500)
    assert [e.queue_offset for e, _ in w.pairs] == [u["queueOffset"] for u in cq["cqUnits"]][:500]
    for tag in ("Tag1", "Tag3"):
        w.tag.value = tag
        want = [u["queueOffset"] for u in cq["cqUnits"] if u["tagsCode"] == tags_code(tag)]
        assert [e.queue_offset for e, _ in w.pairs] == want
        assert all(r.tags == tag for _, r in w.pairs)  # the tag filter did not hit a hash collision here
        assert str(tags_code(tag)) in w.output.value
    w.tag.value = ""
    w.start.value = 10
    w.count.value = 3
    assert [e.queue_offset for e, _ in w.pairs] == [10, 11, 12]


def test_queue_explorer_time_search_matches_rocketmq(clean, dumps):
    cq = dumps["clean"]["consumeQueues"]["TopicA/1"]
    w = QueueExplorer(clean, "TopicA", 1)
    for t, answers in cq["offsetInQueueByTime"].items():
        if int(t) > 2**62:
            continue
        for boundary in ("LOWER", "UPPER"):
            w.time.value = int(t)
            w.boundary.value = boundary
            w.search.click()
            assert w.found_offset == answers[boundary], (t, boundary)
            assert f"queue offset <b>{answers[boundary]}</b>" in w.output.value


# -- HexViewer / StoreBrowser -----------------------------------------------------------------------
def test_hex_viewer_record_jump_shows_fields(clean, dumps):
    walk = [w for w in dumps["clean"]["commitLogWalk"] if w["physicalOffset"] < 65536]
    hv = HexViewer(clean)
    assert [o[1][0] for o in hv.record.options] == [w["physicalOffset"] for w in walk]
    hv.record.index = 2
    assert hv.offset.value == walk[2]["physicalOffset"]
    html = hv.output.value
    assert f"record @{walk[2]['physicalOffset']}" in html
    for field in ("totalSize", "magicCode", "bodyCRC", "queueOffset", "propertiesLength"):
        assert f"Java {field}" in html
    blank = hv.record.options[-1]
    assert "BLANK" in blank[0]
    hv.record.value = blank[1]
    assert "BLANK 0xCBD43194" in hv.output.value
    hv.file.value = "checkpoint"
    assert hv.record.options == () and "physicMsgTimestamp" in hv.output.value


def test_store_browser_views(clean, dumps):
    b = StoreBrowser(clean, page_size=5)
    assert "628 messages" in b.output.value
    b.view.value = "files"
    assert "commitlog/00000000000000065536" in b.output.value
    assert "first byte is physical offset 65536" in b.output.value
    b.view.value = "records"
    msgs = [w for w in dumps["clean"]["commitLogWalk"] if w["kind"] == "MESSAGE"]
    assert [r.physical_offset for r in b.page] == [m["physicalOffset"] for m in msgs[:5]]
    b.topic.value = "TopicC"
    b.start.value = 5
    want = [m["physicalOffset"] for m in msgs if m["topic"] == "TopicC"][5:10]
    assert [r.physical_offset for r in b.page] == want
    b.pick.value = 1
    assert f"record at {want[1]}" in b.output.value and "Java bodyCRC" in b.output.value


def test_store_browser_damaged_store_shows_damage(tmp_path, store_copy):
    root = store_copy("crash-torn")
    b = StoreBrowser(root, page_size=1000)
    assert "walk stopped at damage" in b.output.value
    b.view.value = "records"
    assert len(b.page) == 639  # RocketMQ kept 639 records; the torn one is where the walk stops
    assert "the walk stopped at damage" in b.output.value


def test_hex_viewer_record_argument_shows_that_record(clean, dumps):
    # the constructor's record= must move the offset as choosing it in the dropdown does
    walk = [w for w in dumps["clean"]["commitLogWalk"] if w["physicalOffset"] < 65536]
    hv = HexViewer(clean, record=2)
    assert hv.record.value[0] == hv.offset.value == walk[2]["physicalOffset"]
    assert hv.view.offset == walk[2]["physicalOffset"]
    assert f"bytes {walk[2]['physicalOffset']}&ndash;" in hv.output.value


def test_chain_explorer_follows_a_topic_change(clean, dumps):
    q = next(q for q in dumps["clean"]["indexQueries"] if q["queryMessagePhyOffsets"])
    other = next(t for t in sorted({x["topic"] for x in dumps["clean"]["indexQueries"]}) if t != q["topic"])
    w = ChainExplorer(clean, topic=other, key=q["key"])
    before = w.result
    w.topic.value = q["topic"]  # no button: the chain of topic#key is another chain
    assert w.result is not before and w.result.topic == q["topic"]
    assert [r.physical_offset for r in w.result.records] == q["queryMessagePhyOffsets"]


def test_queue_explorer_shows_binary_bodies_as_hex(tmp_path):
    from rmqlab.engine import MessageStore
    from rmqlab.engine.message import Message

    with MessageStore(tmp_path / "s") as ms:
        ms.put(Message("Bin", bytes(range(200, 256)) + b"\x00\x01", queue_id=0))
        ms.put(Message("Bin", "plain text".encode(), queue_id=0))
        ms.reput()
    w = QueueExplorer(tmp_path / "s", "Bin", 0)
    assert "hex c8c9cacb" in w.output.value and "plain text" in w.output.value
    assert "\ufffd" not in w.output.value  # no replacement characters: mojibake


def test_widgets_say_in_one_line_what_to_do_when_not_live(clean):
    for w in (HexViewer(clean), ChainExplorer(clean), QueueExplorer(clean), StoreBrowser(clean)):
        text = repr(w)
        assert "\n" not in text and "children" not in text and text.startswith(type(w).__name__)
        assert w._repr_mimebundle_()["text/plain"] == text


def test_a_saved_widget_carries_a_picture_of_what_it_shows(clean):
    # where no widget manager runs, the saved output's text/html stands in: the same
    # output, every visible control by its label and value, disabled; hidden ones left out
    browser = StoreBrowser(clean)
    bundle = browser._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    picture = bundle["text/html"]
    assert browser.output.value in picture and "rmqlab-widget-picture" in picture
    assert "<button disabled aria-pressed='true' style='font-weight:bold'>summary</button>" in picture
    assert "from #" not in picture  # the records controls are hidden in the summary view
    browser.view.value = "records"
    picture = browser._repr_mimebundle_()["text/html"]
    assert "from #" in picture and "<select disabled>" in picture and browser.output.value in picture
    hv = HexViewer(clean)
    assert all(f">{w.description}<" in hv._repr_mimebundle_()["text/html"] for w in hv.children if getattr(w, "description", ""))


def test_every_saved_lesson_widget_carries_its_picture():
    import json

    from rmqlab.lab.lessons import LESSONS_DIR

    seen = 0
    for nb in sorted(LESSONS_DIR.glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "application/vnd.jupyter.widget-view+json" in data:
                    seen += 1
                    assert "rmqlab-widget-picture" in "".join(data.get("text/html", "")), (nb.name, cell["source"][:80])
    assert seen >= 10


def test_hex_viewer_and_verify_name_the_torn_record_by_one_offset(tmp_path, store_copy):
    from rmqlab.forensics.verify import verify_store

    root = store_copy("crash-torn")
    torn = [f for f in verify_store(root).findings if f.kind == "BODY_CRC"]
    assert len(torn) == 1
    hv = HexViewer(root, file="commitlog/" + torn[0].file.rsplit("/", 1)[1])
    damage = [o for o in hv.record.options if "damage" in o[0]]
    assert len(damage) == 1
    assert damage[0][1][0] == torn[0].offset  # the same record start, whichever reader says it
