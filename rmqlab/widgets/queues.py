"""``QueueExplorer``: read one consume queue the way a consumer does.

Three controls, three broker behaviours: a queue offset (``getMessage`` from an
offset), a tag (the tagsCode filter applied on the 20-byte entries *before* the
commitlog is read), and a time (``getOffsetInQueueByTime``'s binary search with
LOWER/UPPER boundaries).
"""

from __future__ import annotations

import ipywidgets as widgets

from ..format.hashing import tags_code
from ..lookup import BoundaryType, get_messages, offset_by_time
from ..render.notebook import esc, queue_page_html
from ..render.text import fmt_time
from .base import Panel, as_store


class QueueExplorer(Panel):
    """``QueueExplorer(store, "TopicA", 0)``; set ``.tag.value = "Tag1"`` to filter,
    ``.time.value = <ms>`` to search by store time.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> explorer = QueueExplorer(shipped_dir() / "clean", "Orders", 1)
    >>> explorer.tag.value = "paid"          # the broker's tag filter: on the queue's tagsCode
    >>> "tagsCode = Java hashCode" in explorer.output.value, explorer.topic_and_queue
    (True, ('Orders', 1))
    """

    def __init__(self, store, topic: str | None = None, queue_id: int = 0, count: int = 10):
        self.store = as_store(store)
        queues = [f"{q.topic}/{q.queue_id}" for q in self.store.queue_ids()]
        want = f"{topic}/{queue_id}" if topic else (queues[0] if queues else None)
        self.queue = widgets.Dropdown(options=queues, value=want if want in queues else None, description="queue")
        self.start = widgets.BoundedIntText(value=0, min=0, max=2**62, description="from offset")
        self.count = widgets.BoundedIntText(value=count, min=1, max=500, description="count")
        self.tag = widgets.Text(value="", description="tag", placeholder="empty: every message", continuous_update=False)
        self.time = widgets.IntText(value=0, description="time (ms)")
        self.boundary = widgets.ToggleButtons(options=[b.value for b in BoundaryType], value="LOWER", description="boundary")
        self.search = widgets.Button(description="search by time")
        super().__init__([widgets.HBox([self.queue, self.start, self.count]), self.tag, widgets.HBox([self.time, self.boundary, self.search])], primary=self.queue)
        self.pairs: list = []
        self.found_offset: int | None = None
        for w in (self.queue, self.start, self.count, self.tag):
            w.observe(lambda _: self.refresh(), "value")
        self.search.on_click(lambda _: self.search_time())
        self.refresh()

    @property
    def topic_and_queue(self) -> tuple[str, int]:
        topic, _, qid = self.queue.value.rpartition("/")
        return topic, int(qid)

    def refresh(self, highlight: set[int] | None = None) -> None:
        if self.queue.value is None:
            self.show("<div>no consume queues in this store</div>")
            return
        topic, qid = self.topic_and_queue
        code = tags_code(self.tag.value) if self.tag.value else None
        pairs = self.guarded(lambda: list(get_messages(self.store, topic, qid, self.start.value, self.count.value, tags_code=code)))
        if pairs is None:
            return
        self.pairs = pairs
        cq = self.store.consume_queue(topic, qid)
        lo, hi = cq.valid_range(self.store.commitlog.min_offset)
        head = f"<div>{esc(self.queue.value)}: offsets [{lo}, {hi})"
        if code is not None:
            head += f"; tag {esc(self.tag.value)!s} → tagsCode = Java hashCode = <b>{code}</b>: entries with another tagsCode are skipped without reading the commitlog"
        self.show(head + "</div>" + queue_page_html(pairs, highlight=highlight))

    def search_time(self) -> int | None:
        """Java ``getOffsetInQueueByTime``: show the page that starts at the answer."""
        topic, qid = self.topic_and_queue
        off = self.guarded(offset_by_time, self.store, topic, qid, self.time.value, self.boundary.value)
        if off is None:
            return None
        self.found_offset = off
        self.start.unobserve_all()
        self.start.value = max(0, off - 2)
        self.start.observe(lambda _: self.refresh(), "value")
        self.refresh(highlight={off})
        self.output.value = (
            f"<div>time {self.time.value} ({fmt_time(self.time.value)}), {self.boundary.value}: queue offset <b>{off}</b></div>" + self.output.value
        )
        return off
