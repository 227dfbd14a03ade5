"""The lessons' exercises: every solution, run as a learner would run it from
the lesson folder, is right; wrong and missing answers are told apart; each lesson has one."""

from __future__ import annotations

import re

import nbformat
import pytest

from rmqlab.lab import exercises as ex

from tests.support import LESSONS as NOTEBOOKS


def _namespace():
    from rmqlab.config import MessageStoreConfig
    from rmqlab.format.hashing import tags_code
    from rmqlab.format.msgid import decode_message_id
    from rmqlab.lookup import get_messages, query_by_key
    from rmqlab.recovery import recover
    from rmqlab.store import open_store
    from rmqlab.lab.live import LiveStore
    from rmqlab.widgets import CrashLab

    return dict(
        MessageStoreConfig=MessageStoreConfig, tags_code=tags_code, decode_message_id=decode_message_id, get_messages=get_messages,
        query_by_key=query_by_key, recover=recover, open_store=open_store, CrashLab=CrashLab, LiveStore=LiveStore, given=ex.given, question=ex.question,
    )


@pytest.mark.parametrize("ident", [i for i, e in ex.EXERCISES.items() if not e.needs], ids=str)
def test_every_solution_is_right(ident, monkeypatch):
    monkeypatch.chdir(NOTEBOOKS)
    ns = _namespace()
    if ident in ("04.tag3",):
        ns["store"] = ns["open_store"]("stores/reference/clean/store")
    if ident in ("05.bb_collisions",):
        ns["store"] = ns["open_store"]("stores/clean")
    answer = eval(ex.solution(ident), ns)
    assert ex.check(ident, answer), (ident, answer, ex.EXERCISES[ident].answer())


def test_wrong_and_missing_answers():
    right = ex.EXERCISES["01.payments"].answer()
    assert ex.check("01.payments", right)
    wrong = ex.check("01.payments", right + 1)
    assert not wrong and wrong.status == "wrong" and "Hint:" in str(wrong)
    assert ex.check("01.payments", str(right)).status == "wrong"  # a number, not its text
    missing = ex.check("01.payments", None)
    assert not missing and missing.status == "missing" and "Payments" in str(missing)
    assert "<div" in missing._repr_html_()
    first, second = ex.hint("07.file_name"), ex.hint("07.file_name")
    assert first != second and ex.hint("07.file_name") == second  # the last one repeats
    assert "```python" in ex.solution("07.file_name")._repr_markdown_()
    with pytest.raises(KeyError, match="no exercise"):
        ex.check("99.none", 1)


def test_given_values_come_from_the_store():
    msg_id = ex.given("02.msgid")
    assert re.fullmatch(r"[0-9A-F]{32}", msg_id)
    with pytest.raises(KeyError):
        ex.given("01.payments")


def test_each_lesson_has_an_exercise_and_a_prediction():
    lessons = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert lessons
    for path in lessons:
        nb = nbformat.read(path, as_version=4)
        number = path.name[:2]
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert re.search(rf'check\("{number}\.[a-z_0-9]+", answer\)', code), f"{path.name}: no exercise checked"
        for ident in re.findall(rf'check\("({number}\.[a-z_0-9]+)"', code):
            assert ident in ex.EXERCISES
        # a prediction question comes right before a cell that reveals the answer
        cells = nb.cells
        assert any(c.cell_type == "markdown" and "**Predict" in c.source and i + 1 < len(cells) and cells[i + 1].cell_type == "code" for i, c in enumerate(cells)), f"{path.name}: no prediction before a reveal"
