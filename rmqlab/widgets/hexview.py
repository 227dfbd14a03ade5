"""``HexViewer``: pick a file of a store, an offset and a length; see every byte
coloured by the field it belongs to (the anatomy lesson).

The field positions come from :class:`rmqlab.forensics.hexview.HexView`, which
parses the construct schemas subcon by subcon: what is coloured here is exactly
what the format layer declares.
"""

from __future__ import annotations

from pathlib import Path

import ipywidgets as widgets

from ..format.record import RecordError
from ..forensics.hexview import HexView
from ..render.notebook import file_rows
from .base import Panel, as_store


def record_choices(store, file_name: str, limit: int | None = None) -> list[tuple[str, tuple[int, int]]]:
    """``(label, (position, length))`` for the records of one commitlog file (the
    first ``limit`` of them: a 1 GiB file holds millions)."""
    f = next((m for m in store.commitlog.queue.files if m.path.name == file_name), None)
    if f is None:
        return []
    out = []
    base = f.file_from_offset
    for item in store.commitlog.walk(base, base + f.file_size, check_crc=False, read_body=False):
        if limit is not None and len(out) >= limit:
            break
        if isinstance(item, RecordError):
            out.append((f"@{item.offset} damage: {item.kind}", (item.offset, 64)))
            break
        if item.physical_offset >= base + f.file_size:
            break
        pos = item.physical_offset - base
        if item.is_blank:
            out.append((f"@{item.physical_offset} BLANK (end of file)", (pos, 16)))
            break
        out.append((f"@{item.physical_offset} {item.topic[:40]}/{item.queue_id}@{item.queue_offset} ({item.total_size} B)", (pos, item.total_size)))
    return out


def window_length(length: int) -> int:
    """The viewer's length for ``length`` bytes: whole 16-byte rows (the slider's
    step), 16 to 4096."""
    return max(16, min(4096, length + (-length % 16)))


class HexViewer(Panel):
    """Bytes of one store file with the field overlay.

    ``HexViewer("stores/clean")`` starts on the first commitlog file;
    ``file=`` picks another (a path relative to the root), ``record=`` jumps to the
    n-th record of a commitlog file.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> viewer = HexViewer(shipped_dir() / "clean")
    >>> viewer.file.value, viewer.offset.value, viewer.length.value
    ('commitlog/00000000000000000000', 0, 256)
    >>> viewer.goto("commitlog/00000000000000000000", 255, 32)    # the second record
    >>> "magicCode" in viewer.output.value
    True
    """

    def __init__(self, store, file: str | None = None, offset: int = 0, length: int = 256, record: int | None = None, max_records: int = 500):
        self.store = as_store(store)
        self.root = self.store.root
        names = [r[0] for r in file_rows(self.root) if r[1] in ("commitlog", "consume queue", "index", "checkpoint")]
        if file is None:
            file = next((n for n in names if n.startswith("commitlog/")), names[0] if names else None)
        self.max_records = max_records
        self.file = widgets.Dropdown(options=names, value=file, description="file")
        self.offset = widgets.BoundedIntText(value=offset, min=0, max=2**40, step=16, description="offset")
        self.length = widgets.IntSlider(value=length, min=16, max=4096, step=16, description="length")
        self.record = widgets.Dropdown(options=[], description="record")
        super().__init__([self.file, self.record, widgets.HBox([self.offset, self.length])], primary=self.record)
        self.view: HexView | None = None
        # observers first: choosing the record below must move the offset as a click would
        self.file.observe(self._on_file, "value")
        self.record.observe(self._on_record, "value")
        self.offset.observe(lambda _: self.refresh(), "value")
        self.length.observe(lambda _: self.refresh(), "value")
        self._fill_records()
        if record is not None and record < len(self.record.options):
            self.record.index = record
        self.refresh()

    @property
    def path(self) -> Path:
        return self.root / self.file.value

    def _fill_records(self) -> None:
        self._updating = True
        try:
            opts = []
            if self.file.value and self.file.value.startswith("commitlog/"):
                opts = self.guarded(record_choices, self.store, Path(self.file.value).name, self.max_records) or []
            self.record.options = opts
            self.record.value = None
            self.record.layout.display = "" if opts else "none"
        finally:
            self._updating = False

    def _on_file(self, _change) -> None:
        self._fill_records()
        self._updating = True
        self.offset.value = 0
        self._updating = False
        self.refresh()

    def _on_record(self, change) -> None:
        if self._updating or change["new"] is None:
            return
        pos, size = change["new"]
        self.goto(self.file.value, pos, size)

    def goto(self, file: str, offset: int, length: int) -> None:
        """Show ``file`` (a path relative to the root) from ``offset``, at least
        ``length`` bytes (:func:`window_length`)."""
        if self.file.value != file:
            self.file.value = file  # its records fill the record list
        self._updating = True
        self.offset.value, self.length.value = offset, window_length(length)
        self._updating = False
        self.refresh()

    def refresh(self) -> None:
        if getattr(self, "_updating", False) or not self.file.value:
            return
        view = self.guarded(HexView, self.path, self.offset.value, self.length.value, max_hash_slot_num=self.store.config.max_hash_slot_num)
        if view is not None:
            self.view = view
            self.show(view._repr_html_())
