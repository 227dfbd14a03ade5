"""A :class:`~rmqlab.forensics.storemap.StoreMap` as a picture: SVG (``rmqlab map -o
store.svg``; the ``StoreMap`` view in notebooks, the ``StoreMapViewer`` widget) or PNG
(``-o store.png``), both drawn from one list of :class:`Shape` s.

Top to bottom: the log as a strip along its physical offsets — each pixel column
stacked by topic (the share of the pixel's bytes each topic's records fill), BLANK ends
grey, damaged records red, bytes never written pale, dead bytes (past where RocketMQ
serves the log) shaded, file boundaries as ticks with their names; above it, verify's
findings as triangles by severity; through it, the ends as lines (where RocketMQ serves
the log to, where recovery would end it, and what it would cut); below it, one line per
consume queue and index file over the range of the log it covers, and each consumer
group's committed position on its queue (at most :data:`MAX_TRACKS` of them, what
recovery changes first).  Hovering anything shows what it is (SVG ``<title>``); the same
picture every run for the same store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from .. import reprs
from ..errors import RmqlabError

#: topic colours (colour-blind-safe, then greys for "other")
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#7f3c8d", "#999999")
SEVERITY = {"error": "#c62828", "warning": "#ef6c00", "info": "#1565c0"}
STRIP_H, TOP, RIGHT, TRACK_H = 80, 70, 20, 14
#: the left margin holds the tracks' names: at least this, at most MAX_LEFT (a longer
#: name is cut there, whole in its hover title); CHAR_W is a character's width, roughly
MIN_LEFT, MAX_LEFT, CHAR_W = 170, 420, 7.2


def left_of(m) -> int:
    """The strip's x: room for the longest track name (queues, index files)."""
    names = [q["name"] for q in m.queues] + [f["name"] for f in m.index_files]
    return int(min(MAX_LEFT, max(MIN_LEFT, CHAR_W * max(map(len, names), default=0) + 24)))


def _fit(text: str, room: float) -> str:
    """``text`` cut to ``room`` pixels (roughly), with an ellipsis."""
    n = int(room // CHAR_W)
    return text if len(text) <= n else text[: max(1, n - 1)] + "…"


def _legend(m) -> list[tuple[float, int, str, str]]:
    """(x, row, label, colour) of each legend entry: entries as wide as their labels,
    wrapped at the picture's width."""
    left = left_of(m)
    out, x, row = [], left, 0
    for label, colour in zip(list(m.topics) + ["BLANK", "damaged", "not written", "dead"], _colours(m)):
        label = _fit(label, m.width - 20)
        w = 14 + CHAR_W * len(label) + 16
        if x > left and x + w > left + m.width:
            x, row = left, row + 1
        out.append((x, row, label, colour))
        x += w
    return out


#: the gap between the strip and the tracks under it (the file names sit in it)
GAP = 3 * 12
#: tracks drawn under the strip at most (a store of thousands of queues, LMQ's): those
#: recovery changes first, the rest by name; the JSON holds every one
MAX_TRACKS = 64


def _x(m, phy: int, left: int) -> float:
    """The x of offset ``phy`` on a strip starting at ``left`` (:func:`left_of`, found
    once per picture), held to the strip (a zoomed map draws what reaches past its file
    at the edge)."""
    return left + min(max(phy - m.lo, 0), m.hi - m.lo) * m.width / max(1, m.hi - m.lo)


def _shows(m, a: int, b: int | None = None) -> bool:
    """Whether ``[a, b]`` (or offset ``a``) falls in the drawn part of the log."""
    return a <= m.hi and (a if b is None else b) >= m.lo


def strip_box(m) -> tuple[int, int, int, int]:
    """(x, y, width, height) of the log's strip in the picture: pixel ``i`` of the map
    is the column ``x + i`` (the widget turns the pointer's place into a pixel)."""
    return left_of(m), TOP, m.width, STRIP_H


#: a notebook view (info's, verify's, the recovery report's) draws the store inline up to
#: this many commitlog bytes: past it the map is one more pass over a capture, asked for
#: by name (``rmqlab map``, ``StoreMapViewer``)
INLINE_MAP_BYTES = 2 << 30


def map_of_store(root, *, config=None, width: int = 1200, verify: bool = True, findings=None, recovery=None, file: str | None = None, progress=None, timeline=None, pixels=None):
    """The map ``rmqlab map`` draws: ``verify``'s findings (unless ``verify=False`` or
    ``findings`` are given), recovery's dry run (a store recovery cannot plan for is
    still drawn, without recovery's end), then the one pass of
    :func:`~rmqlab.forensics.storemap.build_map` (which feeds ``timeline`` too, when
    given), or none where ``pixels`` were fed another pass.  Read-only."""
    from ..forensics.storemap import build_map

    findings, recovery = map_inputs(root, config=config, verify=verify, findings=findings, recovery=recovery)
    return build_map(root, config=config, width=width, findings=findings, recovery=recovery, progress=progress, file=file, timeline=timeline, pixels=pixels)


def map_inputs(root, *, config=None, verify: bool = True, findings=None, recovery=None) -> tuple[list, object]:
    """(verify's findings, recovery's dry-run report or None) for the map of ``root``,
    each run unless given (a caller drawing the map again, zoomed, passes them back)."""
    from ..forensics.verify import verify_store
    from ..recovery import recover

    if recovery is None:
        try:
            recovery = recover(root, config=config)
        except RmqlabError:
            recovery = None  # a store recovery cannot plan for: the map still draws the rest
    if findings is None:
        findings = verify_store(root, config, recovery=recovery).findings if verify else []
    return findings, recovery


def inline_map(root, *, title: str, width: int = 900, **kwargs) -> str:
    """The map of ``root`` inside another view (a heading, then the picture), or a line
    saying how to draw it when the log is larger than :data:`INLINE_MAP_BYTES` or the
    store has no log."""
    from ..store.reader import StoreReader

    try:
        with StoreReader(root, strict=False) as store:
            size = sum(f.file_size for f in store.commitlog.queue.files)
    except (RmqlabError, OSError) as err:
        return f"<div><i>{escape(title)}: not drawn ({escape(str(err))})</i></div>"
    if size == 0:
        return ""
    if size > INLINE_MAP_BYTES:
        return (f"<div><i>{escape(title)}: not drawn inline ({size:,} commitlog bytes is one more pass); "
                f"<code>StoreMapViewer({escape(repr(str(root)))})</code> or <code>rmqlab map</code> draws it</i></div>")
    try:
        m = map_of_store(root, width=width, **kwargs)
    except (RmqlabError, OSError) as err:
        return f"<div><i>{escape(title)}: not drawn ({escape(str(err))})</i></div>"
    return f"<details open><summary><b>{escape(title)}</b></summary>{storemap_html(m)}</details>"


@reprs.view("storemap")
def storemap_html(m) -> str:
    """The picture inline (notebooks: ``StoreMap._repr_html_``), scaled to the cell's width."""
    return f"<div style='max-width:100%'>{storemap_svg(m)}</div>"


# -- what is drawn, once: shapes in the picture's pixels, then SVG or PNG -----------------------
@dataclass
class Shape:
    """One mark of the picture.  ``kind``: ``rect`` (x, y, w, h), ``columns`` (many
    rects of one colour: ``boxes``), ``line`` (x, y to x2, y2), ``triangle`` (pointing
    down, its tip at x, y), ``circle`` (centre x, y), ``text`` (at x, y: ``text``,
    ``anchor``).  ``title`` is what hovering it says (SVG only)."""

    kind: str
    x: float = 0
    y: float = 0
    w: float = 0
    h: float = 0
    x2: float = 0
    y2: float = 0
    fill: str | None = None
    stroke: str | None = None
    width: float = 1
    dash: str = ""
    opacity: float = 1
    text: str = ""
    anchor: str = "start"
    size: int = 11
    weight: str = "normal"
    style: str = "normal"
    title: str = ""
    cls: str = ""
    boxes: list = field(default_factory=list)


def _tracks(m) -> tuple[list, list, int]:
    """(queues, index files) drawn, in their order, and how many are left out: at most
    :data:`MAX_TRACKS` in all, index files first (a store has few), those recovery
    changes before the rest."""
    changed = set(m.recovery.get("queues", {})) | set(m.recovery.get("dropped_index", ()))

    def keep(items, room):
        chosen = sorted(range(len(items)), key=lambda i: items[i]["name"] not in changed)[: max(0, room)]
        return [items[i] for i in sorted(chosen)]

    index_files = keep(m.index_files, MAX_TRACKS // 4)
    queues = keep(m.queues, MAX_TRACKS - len(index_files))
    return queues, index_files, len(m.queues) + len(m.index_files) - len(queues) - len(index_files)


#: space under the lowest mark (a text's descenders, a margin)
BOTTOM = 10


def size_of(m, marks: list[Shape] | None = None) -> tuple[int, int]:
    """(width, height) of the picture: the strip's margin, width and right edge across,
    and down to the lowest of its ``marks`` (:func:`shapes`, drawn again when not given)."""
    marks = shapes(m) if marks is None else marks
    return left_of(m) + m.width + RIGHT, int(max((s.y + s.h for s in marks), default=0)) + BOTTOM


def shapes(m) -> list[Shape]:
    """Everything the map shows, top to bottom (see the module)."""
    left = left_of(m)
    out = [Shape("text", left, 16, text=m.root, size=13, weight="bold"),
           Shape("text", left, 32, text=f"{len(m.files)} commitlog file(s), {m.hi - m.lo:,} bytes; the next start ends the log at {m.served_end:,}"
                 + (f" ({m.recovery.get('mode')} recovery): {m.recovery.get('consequence')}" if m.recovery else ""))]
    if m.recovery and m.recovery.get("cause"):
        out.append(Shape("text", left, 48, text=f"cause: {m.recovery['cause']}", fill="#c62828"))
    y0, y1 = TOP, TOP + STRIP_H
    out.append(Shape("text", left - 8, y0 + STRIP_H / 2, text="CommitLog", anchor="end"))
    out.append(Shape("rect", left, y0, m.width, STRIP_H, fill="#fafafa", stroke="#bbb", cls="strip"))
    per_px = (m.hi - m.lo) / max(1, m.width)
    # never-written bytes of each file
    for f in m.files:
        if f["data_end"] < f["base"] + f["size"]:
            a, b = _x(m, f["data_end"], left), _x(m, f["base"] + f["size"], left)
            out.append(Shape("rect", a, y0, max(b - a, 0.5), STRIP_H, fill=UNWRITTEN, title=f"{f['name']}: not written from {f['data_end']:,} ({f['kind']})"))
    # bytes by topic, stacked from the bottom of each pixel column
    if m.topic_bytes is not None and len(m.topic_bytes):
        stack = [0.0] * m.width
        for row, colour, name in zip(list(m.topic_bytes) + [m.blank_bytes, m.damage_bytes], _colours(m)[: len(m.topics) + 2], list(m.topics) + ["BLANK", "damaged"]):
            boxes = []
            for x in range(m.width):
                v = int(row[x])
                hpx = min(STRIP_H - stack[x], STRIP_H * v / per_px) if v > 0 else 0
                if hpx > 0:
                    boxes.append((left + x, y1 - stack[x] - hpx, 1, hpx))
                    stack[x] += hpx
            if boxes:
                out.append(Shape("columns", fill=colour, boxes=boxes, title=f"{name}: {int(row.sum()):,} bytes"))
    # dead bytes: past where RocketMQ serves the log, up to the furthest written byte
    written = max((f["data_end"] for f in m.files), default=m.lo)
    if written > m.served_end and _shows(m, m.served_end, written):
        a, b = _x(m, m.served_end, left), _x(m, written, left)
        out.append(Shape("rect", a, y0, max(b - a, 1), STRIP_H, fill="#000", opacity=0.25,
                         title=f"dead bytes: {written - m.served_end:,} bytes from {m.served_end:,}, not served by RocketMQ"))
    # file boundaries, named where the name fits after the last one named (~7 px a digit)
    named_to = float("-inf")
    for f in m.files:
        x = _x(m, f["base"], left)
        out.append(Shape("line", x, y0 - 4, x2=x, y2=y1 + 4, stroke="#555"))
        name = f["name"].lstrip("0") or "0"
        if x >= named_to:
            out.append(Shape("text", x + 2, y1 + 14, text=name, fill="#555"))
            named_to = x + 7 * len(name) + 12
    # the ends
    ends = [("the end of the log (where the next start ends it)", m.served_end, "#2e7d32", "")]
    if m.recovery:
        if m.recovery.get("end_before", 0) > m.recovery["end"] and _shows(m, m.recovery["end"], m.recovery["end_before"]):
            a, b = _x(m, m.recovery["end"], left), _x(m, m.recovery["end_before"], left)
            out.append(Shape("rect", a, y0, max(b - a, 1), STRIP_H, stroke="#c62828", dash="3,2",
                             title=f"recovery cuts {m.recovery['end_before'] - m.recovery['end']:,} bytes: {m.recovery['end']:,} to {m.recovery['end_before']:,}"))
    for name in ("confirm_phy_offset", "master_flushed_offset", "logics_physical_offset"):
        if m.checkpoint.get(name, 0) > 0:
            ends.append((f"checkpoint {name}", m.checkpoint[name], "#6a1b9a", "1,2"))
    for name, at, colour, dash in ends:
        if _shows(m, at):
            x = _x(m, at, left)
            out.append(Shape("line", x, y0 - 8, x2=x, y2=y1 + 8, stroke=colour, width=2, dash=dash, title=f"{name}: {at:,}"))
    # findings
    for f in m.findings:
        if f["phy"] is not None and _shows(m, f["phy"]):
            out.append(Shape("triangle", _x(m, f["phy"], left), y0 - 10, fill=SEVERITY.get(f["severity"], "#333"),
                             title=f"{f['kind']} ({f['severity']}) {f['file']} @ {f['offset']}: {f['message']}"))
    if m.findings_left_out:
        out.append(Shape("text", left + m.width, y0 - 24, text=f"+{m.findings_left_out} finding(s) not drawn", anchor="end"))
    # queues and index files, each over the range of the log it covers
    y = y1 + GAP
    out.append(Shape("text", left - 8, y - 10, text="covers", anchor="end", weight="bold"))
    groups = {}
    for g in m.groups:
        groups.setdefault(g["queue"], []).append(g)
    queues, index_files, left_out = _tracks(m)
    for kind, items in (("queue", queues), ("index", index_files)):
        if items:
            out.append(Shape("text", left - 8, y + 4, text="consume queues" if kind == "queue" else "index files", anchor="end", style="italic"))
            y += TRACK_H
        for it in items:
            # what recovery would do to it: an index file dropped is drawn dashed red; a
            # queue it cuts or re-dispatches into says so
            dropped = kind == "index" and it["name"] in m.recovery.get("dropped_index", ())
            change = m.recovery.get("queues", {}).get(it["name"]) if kind == "queue" else None
            said = "; recovery drops it (its endTimestamp is past the checkpoint's indexMsgTimestamp)" if dropped else ""
            if change:
                said = "; recovery " + ", ".join(w for w in (f"cuts {change['cut']} unit(s)" if change["cut"] else "",
                                                              f"re-dispatches {change['added']}" if change["added"] else "",
                                                              "rebuilds it" if change["created"] else "") if w)
            out.append(Shape("text", left - 8, y + 4, text=_fit(it["name"] + (" ✗" if dropped else (" *" if change else "")), left - 12), anchor="end",
                             fill="#c62828" if dropped or change else None, title=f"{it['name']}{said}"))
            if it["lo"] is not None and it["hi"] is not None and _shows(m, it["lo"], it["hi"]):
                a, b = _x(m, it["lo"], left), _x(m, it["hi"], left)
                what = f"{it['units']} unit(s)" if kind == "queue" else f"{it['entries']} entr(ies)"
                out.append(Shape("line", a, y, x2=max(b, a + 1), y2=y, stroke="#c62828" if dropped else ("#455a64" if kind == "queue" else "#8d6e63"),
                                 width=5, dash="4,2" if dropped else "", title=f"{it['name']}: {what}, the log from {it['lo']:,} to {it['hi']:,}{said}"))
            for g in groups.get(it["name"], []) if kind == "queue" else ():
                if g["phy"] is not None and _shows(m, g["phy"]):
                    out.append(Shape("circle", _x(m, g["phy"], left), y, w=4, fill="#fff", stroke="#000",
                                     title=f"group {g['group']} has consumed {g['queue']} up to offset {g['committed']} (lag {g['lag']})"))
            y += TRACK_H
    if left_out:
        out.append(Shape("text", left - 8, y + 4, text=f"+{left_out} more", anchor="end", style="italic",
                         title=f"{left_out} more queue(s) and index file(s) not drawn: rmqlab map --json lists them all"))
        y += TRACK_H
    # legend
    y += 16
    for x, row, label, colour in _legend(m):
        out.append(Shape("rect", x, y + row * 18 - 9, 10, 10, fill=colour, stroke="#999"))
        out.append(Shape("text", x + 14, y + row * 18, text=label))
    return out


UNWRITTEN = "#eef2f7"


def _colours(m) -> list[str]:
    """The topics', then BLANK's, damage's, never-written bytes' and dead bytes' colours."""
    return [PALETTE[min(i, len(PALETTE) - 1)] for i in range(len(m.topics))] + ["#bdbdbd", "#c62828", UNWRITTEN, "#9e9e9e"]


def storemap_svg(m) -> str:
    marks = shapes(m)
    w, h = size_of(m, marks)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' viewBox='0 0 {w} {h}' font-family='sans-serif' font-size='11' style='max-width:100%;height:auto'>",
           f"<title>{escape(m.root)}: the log from {m.lo:,} to {m.hi:,}</title>"]
    for s in marks:
        title = f"<title>{escape(s.title)}</title>" if s.title else ""
        paint = (f" fill='{s.fill}'" if s.fill else (" fill='none'" if s.kind in ("rect", "circle") else "")) + (f" stroke='{s.stroke}'" if s.stroke else "")
        paint += (f" stroke-width='{s.width:g}'" if s.width != 1 else "") + (f" stroke-dasharray='{s.dash}'" if s.dash else "")
        paint += f" fill-opacity='{s.opacity:g}'" if s.opacity != 1 else ""
        cls = f" class='{s.cls}'" if s.cls else ""
        if s.kind == "rect":
            out.append(f"<rect{cls} x='{s.x:.1f}' y='{s.y:g}' width='{s.w:.1f}' height='{s.h:g}'{paint}>{title}</rect>" if title
                       else f"<rect{cls} x='{s.x:.1f}' y='{s.y:g}' width='{s.w:.1f}' height='{s.h:g}'{paint}/>")
        elif s.kind == "columns":
            d = "".join(f"M{x:g},{y:.2f}h{w:g}v{h:.2f}h-{w:g}z" for x, y, w, h in s.boxes)
            out.append(f"<path d='{d}'{paint}>{title}</path>")
        elif s.kind == "line":
            out.append(f"<line x1='{s.x:.1f}' y1='{s.y:g}' x2='{s.x2:.1f}' y2='{s.y2:g}'{paint}>{title}</line>")
        elif s.kind == "triangle":
            out.append(f"<path d='M{s.x - 4:.1f},{s.y - 8:g}h8l-4,8z'{paint}>{title}</path>")
        elif s.kind == "circle":
            out.append(f"<circle cx='{s.x:.1f}' cy='{s.y:g}' r='{s.w:g}'{paint}>{title}</circle>")
        elif s.kind == "text":
            attrs = (f" text-anchor='{s.anchor}'" if s.anchor != "start" else "") + (f" font-size='{s.size}'" if s.size != 11 else "")
            attrs += (f" font-weight='{s.weight}'" if s.weight != "normal" else "") + (f" font-style='{s.style}'" if s.style != "normal" else "")
            attrs += f" fill='{s.fill}'" if s.fill else ""
            out.append(f"<text x='{s.x:.1f}' y='{s.y:g}'{attrs}>{title}{escape(s.text)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def storemap_png(m, path) -> None:
    """The same picture as a PNG file (matplotlib's Agg, no display needed): one image
    pixel per picture pixel, no hover titles."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PolyCollection
        from matplotlib.figure import Figure
        from matplotlib.patches import Circle, Polygon, Rectangle
    except ImportError as err:
        from ..errors import install_hint

        raise RmqlabError(f"{path}: a PNG needs matplotlib ({install_hint('notebook')}); or write .svg") from err
    marks = shapes(m)
    w, h = size_of(m, marks)
    fig = Figure(figsize=(w / 100, h / 100), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, w)
    ax.set_ylim(h, 0)  # the SVG's y: down
    ax.axis("off")

    def dashes(s):
        return (0, tuple(float(v) for v in s.dash.split(","))) if s.dash else "solid"

    for s in marks:
        if s.kind == "rect":
            ax.add_patch(Rectangle((s.x, s.y), s.w, s.h, facecolor=s.fill or "none", edgecolor=s.stroke or "none", alpha=s.opacity if s.fill else None,
                                   linestyle=dashes(s), linewidth=s.width * 0.75))
        elif s.kind == "columns":
            ax.add_collection(PolyCollection([[(x, y), (x + bw, y), (x + bw, y + bh), (x, y + bh)] for x, y, bw, bh in s.boxes],
                                             facecolors=s.fill, edgecolors="none", antialiased=False))
        elif s.kind == "line":
            ax.plot([s.x, s.x2], [s.y, s.y2], color=s.stroke, linewidth=s.width * 0.75, linestyle=dashes(s), solid_capstyle="butt")
        elif s.kind == "triangle":
            ax.add_patch(Polygon([(s.x - 4, s.y - 8), (s.x + 4, s.y - 8), (s.x, s.y)], facecolor=s.fill, edgecolor="none"))
        elif s.kind == "circle":
            ax.add_patch(Circle((s.x, s.y), s.w, facecolor=s.fill, edgecolor=s.stroke, linewidth=0.75))
        elif s.kind == "text":
            ax.text(s.x, s.y, s.text, ha={"start": "left", "end": "right"}.get(s.anchor, "center"), va="baseline", fontsize=s.size * 0.75,
                    fontweight=s.weight, fontstyle=s.style, color=s.fill or "#000")
    fig.savefig(path, format="png", dpi=100)
