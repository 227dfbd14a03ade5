"""``StoreMapViewer``: the store map (:mod:`rmqlab.forensics.storemap`) to point at.

Moving the pointer over the log's strip (or the ``position`` slider, or the arrow keys
on the map) names the pixel's bytes: the file, the offset in it, and the record there —
its topic, queue, queue offset, size, keys.  A click (Enter on the map, or ``show
bytes``) opens the hex viewer at that record's first byte; a double click (or the
``zoom`` list) draws one commitlog file alone, pixel by pixel finer.

The picture is the one ``rmqlab map`` draws; the strip's place in it comes from
:func:`rmqlab.render.storemap.strip_box`, so the pointer's x is a pixel of the map.
"""

from __future__ import annotations

from html import escape

import ipywidgets as widgets
import traitlets

from ..errors import RmqlabError
from ..format.record import RecordError
from ..render.storemap import map_inputs, map_of_store, storemap_svg, strip_box
from .base import Panel, as_store
from .hexview import HexViewer, window_length

try:  # the pointer needs a front-end part of its own; without anywidget the slider still works
    import anywidget
except ImportError:  # pragma: no cover - the notebook extra installs it
    anywidget = None

_ESM = r"""
function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "rmqlab-storemap";
  box.tabIndex = 0;
  box.setAttribute("role", "slider");
  box.setAttribute("aria-label", "store map: arrow keys move along the log, Enter shows the bytes, + zooms into the file");
  box.style.cssText = "max-width:100%;overflow-x:auto;outline-offset:2px";
  el.appendChild(box);
  let line = null;
  const place = () => {
    if (!line) return;
    const c = model.get("cursor"), [x] = model.get("strip");
    line.style.display = c < 0 ? "none" : "";
    line.setAttribute("x1", x + c + 0.5);
    line.setAttribute("x2", x + c + 0.5);
  };
  const pixelAt = (svg, ev) => {
    const [x, y, w, h] = model.get("strip");
    const pt = svg.createSVGPoint();
    pt.x = ev.clientX; pt.y = ev.clientY;
    const p = pt.matrixTransform(svg.getScreenCTM().inverse());
    const i = Math.floor(p.x - x);
    return i >= 0 && i < w && p.y >= y - 24 && p.y <= y + h + 8 ? i : -1;
  };
  const move = (i) => { if (i >= 0 && i !== model.get("cursor")) { model.set("cursor", i); model.save_changes(); } };
  const draw = () => {
    box.innerHTML = model.get("svg");
    const svg = box.querySelector("svg");
    if (!svg) return;
    const [x, y, w, h] = model.get("strip");
    line = document.createElementNS("http://www.w3.org/2000/svg", "line");
    line.setAttribute("y1", y - 12); line.setAttribute("y2", y + h + 12);
    line.setAttribute("stroke", "#000"); line.setAttribute("stroke-width", "1");
    line.setAttribute("pointer-events", "none");
    svg.appendChild(line);
    place();
    svg.addEventListener("mousemove", (ev) => move(pixelAt(svg, ev)));
    svg.addEventListener("click", (ev) => { const i = pixelAt(svg, ev); if (i >= 0) { move(i); model.send({ event: "pick", pixel: i }); } });
    svg.addEventListener("dblclick", (ev) => { const i = pixelAt(svg, ev); if (i >= 0) model.send({ event: "zoom", pixel: i }); });
  };
  box.addEventListener("keydown", (ev) => {
    const w = model.get("strip")[2];
    let c = Math.max(0, model.get("cursor"));
    const step = ev.shiftKey ? 10 : 1;
    if (ev.key === "ArrowRight") c = Math.min(w - 1, c + step);
    else if (ev.key === "ArrowLeft") c = Math.max(0, c - step);
    else if (ev.key === "Home") c = 0;
    else if (ev.key === "End") c = w - 1;
    else if (ev.key === "Enter" || ev.key === " ") { model.send({ event: "pick", pixel: c }); ev.preventDefault(); return; }
    else if (ev.key === "+") { model.send({ event: "zoom", pixel: c }); ev.preventDefault(); return; }
    else if (ev.key === "-") { model.send({ event: "zoom", pixel: -1 }); ev.preventDefault(); return; }
    else return;
    ev.preventDefault();
    model.set("cursor", c);
    model.save_changes();
  });
  model.on("change:svg", draw);
  model.on("change:strip", draw);
  model.on("change:cursor", place);
  draw();
}
export default { render };
"""

if anywidget is not None:

    class MapCanvas(anywidget.AnyWidget):
        """The picture with a pointer: ``cursor`` is the pixel under it (-1: none);
        a click sends ``{"event": "pick", "pixel": i}``, a double click ``"zoom"``."""

        _esm = _ESM
        svg = traitlets.Unicode("").tag(sync=True)
        strip = traitlets.List(traitlets.Int(), default_value=[0, 0, 1, 1]).tag(sync=True)
        cursor = traitlets.Int(-1).tag(sync=True)

else:  # pragma: no cover

    class MapCanvas(widgets.HTML):
        """Without anywidget: the picture alone (the slider moves the cursor)."""

        cursor = traitlets.Int(-1)
        strip = traitlets.List(traitlets.Int(), default_value=[0, 0, 1, 1])
        svg = traitlets.Unicode("")

        @traitlets.observe("svg")
        def _show(self, change):
            self.value = change["new"]

        def on_msg(self, _callback):
            pass


class StoreMapViewer(Panel):
    """``StoreMapViewer(store)``: the map of a store (verify's findings and recovery's
    dry run on it, as ``rmqlab map`` draws them), to point at.

    Driven from code as from the mouse: ``.position.value = i`` names pixel ``i``
    (:attr:`described`), :meth:`pick` opens the hex viewer there (:attr:`hex`),
    ``.zoom.value = "00000000000000000000"`` draws that file alone.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> viewer = StoreMapViewer(shipped_dir() / "damaged")
    >>> viewer.position.value = 10
    >>> print(viewer.described[:60])
    pixel 10: the log's bytes 4,370 to 4,806 (commitlog/00000000
    >>> viewer.pick().offset.value             # the record under it, in the hex viewer
    4496
    """

    def __init__(self, store, width: int = 900, verify: bool = True, findings=None, recovery=None, config=None):
        self.store = as_store(store)
        self.width = width
        names = [f.path.name for f in self.store.commitlog.queue.files]
        self.zoom = widgets.Dropdown(options=[("the whole log", "")] + [(f"file {n}", n) for n in names], value="", description="zoom")
        self.position = widgets.IntSlider(value=0, min=0, max=width - 1, description="pixel", continuous_update=True,
                                          layout=widgets.Layout(width="min(100%, 640px)"))
        self.bytes_button = widgets.Button(description="show bytes", tooltip="the record under the cursor in the hex viewer (Enter or a click on the map)",
                                           icon="search")
        self.canvas = MapCanvas()
        self.hex: HexViewer | None = None
        self.described = ""
        self.map = None
        super().__init__([widgets.HBox([self.zoom, self.bytes_button]), self.canvas, self.position], primary=self.canvas)
        widgets.jslink((self.canvas, "cursor"), (self.position, "value"))
        self.position.observe(lambda ch: self.describe(ch["new"]), "value")
        self.zoom.observe(lambda _: self.redraw(), "value")
        self.bytes_button.on_click(lambda _: self.pick())
        self.canvas.on_msg(self._on_msg)
        # verify and recovery's dry run once: a zoom draws the map again with their answers
        inputs = self.guarded(map_inputs, self.store.root, config=config, verify=verify, findings=findings, recovery=recovery) or ([], None)
        self._kw = {"config": config, "findings": inputs[0], "recovery": inputs[1]}
        self.redraw()

    def _on_msg(self, _widget, content, _buffers=None) -> None:
        pixel = int(content.get("pixel", -1))
        if content.get("event") == "pick":
            self.pick(pixel)
        elif content.get("event") == "zoom":
            self.zoom_at(pixel)

    # -- drawing -----------------------------------------------------------------------------
    def redraw(self) -> None:
        m = self.guarded(map_of_store, self.store.root, width=self.width, file=self.zoom.value or None, **self._kw)
        if m is None:
            return
        self.map = m
        self.canvas.svg = storemap_svg(m)
        self.canvas.strip = list(strip_box(m))
        self.position.value = 0
        self.describe(0)

    def zoom_at(self, pixel: int) -> None:
        """Into the file holding ``pixel`` (out to the whole log from a file, or for -1)."""
        if self.map is None:
            return
        if self.zoom.value or pixel < 0:
            self.zoom.value = ""
            return
        f = self.map.file_at(sum(self.map.span(pixel)) // 2)  # the file holding the pixel's middle
        if f is not None:
            self.zoom.value = f["name"]

    # -- pointing -----------------------------------------------------------------------------
    def record_under(self, pixel: int):
        """(file row of the map, the record shown for ``pixel`` or a RecordError / None, the
        pixel's first offset)."""
        m = self.map
        a, _ = m.span(pixel)
        f = m.file_at(a)
        at = m.record_at(pixel)
        if at is None:
            return f, None, a
        try:
            rec = self.store.commitlog.read(at, check_crc=False)
        except RmqlabError as err:
            return f, err, a
        if at + rec.total_size <= a:  # the last record ends before this pixel: bytes past it
            return f, None, a
        return f, rec, a

    def describe(self, pixel: int) -> str:
        if self.map is None or not self.map.files:
            self.show("<div>no commitlog files in this store</div>")
            return ""
        f, rec, a = self.record_under(pixel)
        lo, hi = self.map.span(pixel)
        head = f"pixel {pixel}: the log's bytes {lo:,} to {hi:,}"
        if f is not None:
            head += f" (commitlog/{f['name']} from {lo - f['base']:,})"
        if isinstance(rec, (RmqlabError, RecordError)):
            what = f"<span style='color:#c62828'>{escape(str(rec))}</span>"
        elif rec is None:
            what = "no record: bytes never written" if f is None or a >= f["data_end"] else "no record starts at or before here"
        elif rec.is_blank:
            what = f"BLANK end of file at {rec.physical_offset:,} ({rec.total_size:,} bytes)"
        else:
            what = (f"record at {rec.physical_offset:,} (file offset {rec.file_offset:,}): <b>{escape(rec.topic)}</b>/{rec.queue_id} "
                    f"@ queue offset {rec.queue_offset}, {rec.total_size:,} bytes"
                    + (f", keys {escape(rec.keys)}" if rec.keys else "") + (f", UNIQ_KEY {escape(rec.uniq_key)}" if rec.uniq_key else ""))
        n = int(self.map.records[pixel]) if self.map.records is not None else 0
        self.described = f"{head}: {what}; {n} record(s) start in this pixel"
        self.show(f"<div style='font-family:monospace;font-size:12px;white-space:normal'>{self.described}</div>")
        return self.described

    def pick(self, pixel: int | None = None) -> HexViewer | None:
        """The hex viewer at the record shown for ``pixel`` (the cursor's by default),
        or at the pixel's first byte where no record is."""
        if self.map is None or not self.map.files:
            return None
        if pixel is not None and pixel >= 0:
            self.position.value = pixel
        f, rec, a = self.record_under(self.position.value)
        if f is None:
            return None
        at, length = (rec.physical_offset, rec.total_size) if hasattr(rec, "physical_offset") else (a, 256)
        offset = (at - f["base"]) // 16 * 16  # from the start of its 16-byte row
        span = at - f["base"] - offset + length
        name = f"commitlog/{f['name']}"
        if self.hex is None:
            self.hex = HexViewer(self.store, file=name, offset=offset, length=window_length(span))
            self.children = [*self.children, self.hex]
        else:
            self.hex.goto(name, offset, span)
        return self.hex
