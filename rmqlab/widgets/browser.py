"""``StoreBrowser``: a store at a glance — summary, files, records page by page,
one record in detail with its bytes."""

from __future__ import annotations

import ipywidgets as widgets

from ..format.record import RecordError
from ..forensics.hexview import HexView
from ..render.notebook import files_html, record_html, records_html, summary_html
from ..store.summary import summarize
from .base import Panel, as_store, topics_of


class StoreBrowser(Panel):
    """Tabs over one store: ``summary``, ``files``, ``records``.

    The records tab lists ``page_size`` records from the ``start`` index (optionally
    one topic only); choosing one shows every field and its coloured bytes.  In a
    notebook the last line of a cell shows it; from code, set the controls' values:

    >>> from rmqlab.lab.samples import shipped_dir
    >>> browser = StoreBrowser(shipped_dir() / "clean")
    >>> browser.view.value = "records"
    >>> len(browser.page), browser.pick.options[0]
    (20, ('@0 Orders/1@0', 0))
    """

    VIEWS = ("summary", "files", "records")

    def __init__(self, store, page_size: int = 20):
        self.store = as_store(store)
        self.page_size = page_size
        self.view = widgets.ToggleButtons(options=self.VIEWS, value="summary", description="view")
        self.topic = widgets.Dropdown(options=["(all)", *topics_of(self.store)], value="(all)", description="topic")
        self.start = widgets.BoundedIntText(value=0, min=0, max=10**9, step=page_size, description="from #")
        self.pick = widgets.Dropdown(options=[], description="record")
        self.records_box = widgets.HBox([self.topic, self.start, self.pick])
        super().__init__([self.view, self.records_box], primary=self.view)
        self.page: list = []
        self._summary = None
        self._summary_html = None  # the summary with the store map: one pass, drawn once
        self._updating = False
        for w in (self.view, self.topic, self.start):
            w.observe(lambda _: self.refresh(), "value")
        self.pick.observe(lambda _: self._show_page(), "value")
        self.refresh()

    def summary(self):
        if self._summary is None:
            self._summary = summarize(self.store)
        return self._summary

    def load_page(self) -> list:
        """The records of the current page (damage ends the list, as a walk would)."""
        out, n = [], 0
        topic = None if self.topic.value == "(all)" else self.topic.value
        self.damage: RecordError | None = None
        for item in self.store.commitlog.walk(check_crc=True):
            if isinstance(item, RecordError):
                self.damage = item
                break
            if item.is_blank or (topic is not None and item.topic != topic):
                continue
            if n >= self.start.value:
                out.append(item)
                if len(out) >= self.page_size:
                    break
            n += 1
        return out

    def refresh(self) -> None:
        self.records_box.layout.display = "" if self.view.value == "records" else "none"
        if self.view.value == "summary":
            if self._summary_html is None:
                s = self.guarded(self.summary)
                self._summary_html = summary_html(s) if s is not None else None
            if self._summary_html is not None:
                self.show(self._summary_html)
        elif self.view.value == "files":
            self.show(files_html(self.store.root))
        else:
            page = self.guarded(self.load_page)
            if page is None:
                return
            self.page = page
            self._updating = True
            self.pick.options = [(f"@{r.physical_offset} {r.topic[:30]}/{r.queue_id}@{r.queue_offset}", i) for i, r in enumerate(page)]
            self.pick.value = None
            self._updating = False
            self._show_page()

    def _show_page(self) -> None:
        if self._updating or self.view.value != "records":
            return
        html = records_html(self.page, caption=f"records #{self.start.value}..#{self.start.value + len(self.page) - 1}")
        if self.damage is not None:
            html += f"<div style='color:#c62828'>the walk stopped at damage: {self.damage}</div>"
        if self.pick.value is not None:
            rec = self.page[self.pick.value]
            f = rec.file
            hv = self.guarded(HexView, f, rec.file_offset, rec.total_size)
            html += record_html(rec) + (hv._repr_html_() if hv is not None else "")
        self.show(html)
