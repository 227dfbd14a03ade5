"""The lessons' exercises: a question, the right answer computed from the store it
is about (never written down), hints one at a time, and a solution kept out of
sight until asked for.

In a lesson::

    from rmqlab.lab.exercises import check, hint, solution
    answer = None          # the learner replaces None
    check("01.payments", answer)

``check`` says right, not yet (with the first hint), or that no answer was given; it
never raises on a wrong or missing answer.  ``hint(id)`` gives the next hint each
time it is called, ``solution(id)`` one way to get there.  The answers are computed
from the sample and reference stores the lessons read, so a change to a store or a
rule that changes the answer changes what ``check`` expects, and the tests run every
solution against it.

Paths in solutions are the lessons' (run from the lesson folder).
"""

from __future__ import annotations

import html
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .samples import shipped_dir, reference_dir


@dataclass
class Exercise:
    id: str
    question: str | Callable[[], str]
    answer: Callable[[], Any]  # computes the right answer from the store
    hints: list[str]
    solution: str  # code, as a learner would type it in the lesson
    needs: str = ""  # "spark": the solution needs the lesson's Spark session
    given: Callable[[], Any] | None = None  # what the learner works on, when it comes from a store
    shown: int = field(default=0, repr=False)  # hints given so far

    @property
    def text(self) -> str:
        return self.question() if callable(self.question) else self.question


EXERCISES: dict[str, Exercise] = {}


def exercise(id: str, question, hints: list[str], solution: str, needs: str = "", given=None):
    def register(fn):
        EXERCISES[id] = Exercise(id, question, fn, hints, solution.strip(), needs, given)
        return fn

    return register


def _get(id: str) -> Exercise:
    try:
        return EXERCISES[id]
    except KeyError:
        raise KeyError(f"no exercise {id!r}; the exercises are {', '.join(EXERCISES)}") from None


@dataclass
class CheckResult:
    """What :func:`check` found; true when the answer is right."""

    id: str
    status: str  # "right", "wrong", "missing"
    message: str

    def __bool__(self) -> bool:
        return self.status == "right"

    def __str__(self) -> str:
        mark = {"right": "✓", "wrong": "✗", "missing": "…"}[self.status]
        return f"{mark} {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = {"right": "#2e7d32", "wrong": "#c62828", "missing": "#555"}[self.status]
        return f"<div style='color:{colour}'><b>{html.escape(str(self).split(' ', 1)[0])}</b> {html.escape(self.message)}</div>"


def _same(given, expected) -> bool:
    if isinstance(expected, str):
        return isinstance(given, str) and given.strip() == expected
    if isinstance(expected, bool):
        return given is expected
    if isinstance(expected, int):
        return isinstance(given, int) and not isinstance(given, bool) and given == expected
    return given == expected


def given(id: str):
    """The value an exercise hands the learner (a msgId to decode, ...)."""
    ex = _get(id)
    if ex.given is None:
        raise KeyError(f"exercise {id!r} hands nothing over: its question says what to use")
    return ex.given()


def question(id: str) -> str:
    """The exercise's question (some are made from the store, e.g. a msgId to decode)."""
    return _get(id).text


def check(id: str, answer) -> CheckResult:
    """Is ``answer`` right?  ``None`` means not answered yet."""
    ex = _get(id)
    if answer is None:
        return CheckResult(id, "missing", f"no answer yet: replace None with yours. {ex.text}")
    if _same(answer, ex.answer()):
        return CheckResult(id, "right", "right.")
    tip = ex.hints[0] if ex.hints else ""
    return CheckResult(id, "wrong", f"not yet ({answer!r}). Hint: {tip} (hint({id!r}) for more, solution({id!r}) to see one way)")


def hint(id: str) -> str:
    """The next hint, one per call (the last one repeats)."""
    ex = _get(id)
    if not ex.hints:
        return "no hints for this one"
    h = ex.hints[min(ex.shown, len(ex.hints) - 1)]
    ex.shown += 1
    return h


class _Code(str):
    """Code that displays as code in a notebook."""

    def _repr_markdown_(self) -> str:
        return f"```python\n{self}\n```"


def solution(id: str) -> str:
    """One way to answer (the code a learner would run from the lesson folder)."""
    return _Code(_get(id).solution)


# -- the exercises, lesson by lesson ------------------------------------------------------------
def _open(path):
    from ..store import open_store

    return open_store(path, strict=False)


@exercise(
    "01.payments",
    "How many messages of topic Payments does stores/clean hold?",
    ["Walk the records with store.commitlog.iter_records() and look at each record's topic.", "Count, don't list: sum(1 for r in ... if ...)."],
    'sum(1 for r in open_store("stores/clean").commitlog.iter_records() if r.topic == "Payments")',
)
def _payments():
    with _open(shipped_dir() / "clean") as s:
        return sum(1 for r in s.commitlog.iter_records() if r.topic == "Payments")


def _msgid_record():
    with _open(reference_dir() / "clean" / "store") as s:
        return next(r for i, r in enumerate(s.commitlog.iter_records()) if i == 150)


@exercise(
    "02.msgid",
    'A broker log names the offset msgId given("02.msgid"). At which physical offset does its record start in the reference store `clean`?',
    ["An offset msgId is host, port and physical offset in hex: rmqlab.format.msgid.decode_message_id reads it.", "decode_message_id returns (host, port, offset): the answer is the last."],
    'decode_message_id(given("02.msgid"))[2]',
    given=lambda: _msgid_record().msg_id,
)
def _msgid():
    return _msgid_record().physical_offset


@exercise(
    "03.index_entries",
    "How many index entries do the index files of stores/clean hold in all? (More than there are messages: why?)",
    ["Each index file's header counts its entries in indexCount, which starts at 1.", "sum(f.index_count - 1 for f in store.index.files); every message has a UNIQ_KEY entry plus one per KEYS token."],
    'sum(f.index_count - 1 for f in open_store("stores/clean").index.files)',
)
def _index_entries():
    with _open(shipped_dir() / "clean") as s:
        return sum(f.index_count - 1 for f in s.index.files)


@exercise(
    "04.tag3",
    "How many messages of queue TopicC/3 in the reference store `clean` carry the tag Tag3?",
    ["get_messages(store, topic, queue, tags_code=...) filters on the 20-byte entries; tags_code('Tag3') is the number to filter on.", "A tagsCode can collide: keep only the records whose r.tags really is 'Tag3'."],
    'len([r for e, r in get_messages(store, "TopicC", 3, tags_code=tags_code("Tag3")) if r.tags == "Tag3"])',
)
def _tag3():
    from ..format.hashing import tags_code
    from ..lookup import get_messages

    with _open(reference_dir() / "clean" / "store") as s:
        return len([r for _, r in get_messages(s, "TopicC", 3, tags_code=tags_code("Tag3")) if r.tags == "Tag3"])


@exercise(
    "05.bb_collisions",
    "How many of the index's hash matches for Orders#BB in stores/clean are records of another key?",
    ["query_by_key keeps the hash matches in raw_offsets and the ones whose record carries another key in collisions.", "len(query_by_key(store, 'Orders', 'BB').collisions)"],
    'len(query_by_key(store, "Orders", "BB").collisions)',
)
def _bb():
    from ..lookup import query_by_key

    with _open(shipped_dir() / "clean") as s:
        return len(query_by_key(s, "Orders", "BB").collisions)


@exercise(
    "06.flush_bytes",
    "With RocketMQ's default settings and ASYNC_FLUSH, how many bytes must be dirty before the flush thread forces the CommitLog (when the 10 s thorough interval has not passed)?",
    ["The threshold is counted in pages: flushCommitLogLeastPages.", "MessageStoreConfig().flush_commit_log_least_pages pages of 4096 bytes."],
    "MessageStoreConfig().flush_commit_log_least_pages * 4096",
)
def _flush_bytes():
    from ..config import MessageStoreConfig
    from ..engine.flush import PAGE_SIZE

    return MessageStoreConfig().flush_commit_log_least_pages * PAGE_SIZE


@exercise(
    "07.file_name",
    "With RocketMQ's default 1 GiB CommitLog files, what is the name of the file that holds physical offset 5,000,000,000?",
    ["A file is named by the offset of its first byte; files start at multiples of the file size.", "Round down to a multiple of 2**30, then write it with 20 digits: f'{n:020d}'."],
    'f"{5_000_000_000 // MessageStoreConfig().mapped_file_size_commit_log * MessageStoreConfig().mapped_file_size_commit_log:020d}"',
)
def _file_name():
    from ..config import MessageStoreConfig
    from ..files.mapped_file_queue import file_name_for_offset

    size = MessageStoreConfig().mapped_file_size_commit_log
    return file_name_for_offset(5_000_000_000 - 5_000_000_000 % size)


def _crash(flush: str, crash_at: int, messages: int):
    from .crashlab import CrashLab, workload

    with tempfile.TemporaryDirectory(prefix="rmqlab-exercise-") as d:
        return CrashLab(Path(d)).power_loss(workload(messages), flush=flush, crash_after=crash_at)


@exercise(
    "08.lost_async",
    "In the crash lab (120 messages), a power loss after put 100 with ASYNC_FLUSH: how many acknowledged puts are lost?",
    ["lab.crash(...) returns the result; its lost list holds the acknowledged puts recovery did not keep.", "lab.crash(flush='ASYNC_FLUSH', scenario='power loss', crash_at=100) on CrashLab(messages=120), then len(result.lost)."],
    'len(CrashLab(messages=120).crash(flush="ASYNC_FLUSH", scenario="power loss", crash_at=100).lost)',
)
def _lost_async():
    return len(_crash("ASYNC_FLUSH", 100, 120).lost)


@exercise(
    "09.analytics_lost",
    "After recovery of stores/damaged, how many messages that group analytics had not consumed yet are lost to it?",
    ["recover(path) (a dry run) reports group_losses: one per group and queue the cut reaches.", "Add up unconsumed_lost over the losses whose group is 'analytics'."],
    'sum(loss.unconsumed_lost for loss in recover("stores/damaged").group_losses if loss.group == "analytics")',
)
def _analytics_lost():
    from ..recovery import recover

    return sum(loss.unconsumed_lost for loss in recover(shipped_dir() / "damaged").group_losses if loss.group == "analytics")


@exercise(
    "10.cq_entries",
    "How many consume-queue entries does stores/clean hold, all queues together? Count them with Spark.",
    ["spark.read.format('rocketmq.consumequeue') gives one row per entry.", "spark.read.format('rocketmq.consumequeue').load('stores/clean').count()"],
    'spark.read.format("rocketmq.consumequeue").load("stores/clean").count()',
    needs="spark",
)
def _cq_entries():
    with _open(shipped_dir() / "clean") as s:
        ranges = [s.consume_queue(q.topic, q.queue_id).valid_range() for q in s.queue_ids()]
        return sum(hi - lo for lo, hi in ranges)


@exercise(
    "11.behind",
    "Into a new LiveStore put 25 messages, then dispatch only the first 10 of them: how many records is dispatch behind the log?",
    ["LiveStore.scratch() gives a new store; put(25) and dispatch(10) return the store, so they chain.", "positions().dispatch_behind counts the records appended but not dispatched yet."],
    "LiveStore.scratch().put(25).dispatch(10).positions().dispatch_behind",
)
def _behind():
    from .live import LiveStore

    with tempfile.TemporaryDirectory() as d:
        live = LiveStore(d).put(25).dispatch(10)
        try:
            return live.positions().dispatch_behind
        finally:
            live.close()
