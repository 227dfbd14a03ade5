"""A :class:`~rmqlab.forensics.storemap.StoreMap` as an SVG picture (``rmqlab map -o
store.svg``; the ``StoreMap`` view in notebooks).

Top to bottom: the log as a strip along its physical offsets — each pixel column
stacked by topic (the share of the pixel's bytes each topic's records fill), BLANK ends
grey, damaged records red, bytes never written pale, dead bytes (past where RocketMQ
serves the log) shaded, file boundaries as ticks with their names; above it, verify's
findings as triangles by severity; through it, the ends as lines (where RocketMQ serves
the log to, where recovery would end it, and what it would cut); below it, one line per
consume queue and index file over the range of the log it covers, and each consumer
group's committed position on its queue.  Hovering anything shows what it is (SVG
``<title>``); the same picture every run for the same store.
"""

from __future__ import annotations

from html import escape

from .. import reprs

#: topic colours (colour-blind-safe, then greys for "other")
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#7f3c8d", "#999999")
SEVERITY = {"error": "#c62828", "warning": "#ef6c00", "info": "#1565c0"}
STRIP_H, TOP, LEFT, RIGHT, TRACK_H = 80, 70, 170, 20, 14
#: the gap between the strip and the tracks under it (the file names sit in it)
GAP = 3 * 12


def _x(m, phy: int) -> float:
    """The x of offset ``phy``, held to the strip (a zoomed map draws what reaches past
    its file at the edge)."""
    return LEFT + min(max(phy - m.lo, 0), m.hi - m.lo) * m.width / max(1, m.hi - m.lo)


def _shows(m, a: int, b: int | None = None) -> bool:
    """Whether ``[a, b]`` (or offset ``a``) falls in the drawn part of the log."""
    return a <= m.hi and (a if b is None else b) >= m.lo


def strip_box(m) -> tuple[int, int, int, int]:
    """(x, y, width, height) of the log's strip in the picture: pixel ``i`` of the map
    is the column ``x + i`` (the widget turns the pointer's place into a pixel)."""
    return LEFT, TOP, m.width, STRIP_H


#: a notebook view (info's, verify's, the recovery report's) draws the store inline up to
#: this many commitlog bytes: past it the map is one more pass over a capture, asked for
#: by name (``rmqlab map``, ``StoreMapViewer``)
INLINE_MAP_BYTES = 2 << 30


def map_of_store(root, *, config=None, width: int = 1200, verify: bool = True, findings=None, recovery=None, file: str | None = None, progress=None):
    """The map ``rmqlab map`` draws: ``verify``'s findings (unless ``verify=False`` or
    ``findings`` are given), recovery's dry run (a store recovery cannot plan for is
    still drawn, without recovery's end), then the one pass of
    :func:`~rmqlab.forensics.storemap.build_map`.  Read-only."""
    from ..errors import RmqlabError
    from ..forensics.storemap import build_map
    from ..forensics.verify import verify_store
    from ..recovery import recover

    if findings is None:
        findings = verify_store(root, config).findings if verify else []
    if recovery is None:
        try:
            recovery = recover(root, config=config)
        except RmqlabError:
            recovery = None
    return build_map(root, width=width, findings=findings, recovery=recovery, progress=progress, file=file)


def inline_map(root, *, title: str, width: int = 900, **kwargs) -> str:
    """The map of ``root`` inside another view (a heading, then the picture), or a line
    saying how to draw it when the log is larger than :data:`INLINE_MAP_BYTES` or the
    store has no log."""
    from ..errors import RmqlabError
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


def storemap_svg(m) -> str:
    w = LEFT + m.width + RIGHT
    tracks = len(m.queues) + len(m.index_files)
    h = TOP + STRIP_H + 60 + (tracks + 2) * TRACK_H + 30 + 20 * ((len(m.topics) + 9) // 6)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' viewBox='0 0 {w} {h}' font-family='sans-serif' font-size='11' style='max-width:100%;height:auto'>",
           f"<title>{escape(m.root)}: the log from {m.lo:,} to {m.hi:,}</title>",
           f"<text x='{LEFT}' y='16' font-size='13' font-weight='bold'>{escape(m.root)}</text>",
           f"<text x='{LEFT}' y='32'>{len(m.files)} commitlog file(s), {m.hi - m.lo:,} bytes; RocketMQ serves the log up to {m.served_end:,}"
           + (f"; recovery ({escape(str(m.recovery.get('mode')))}) would end it at {m.recovery['end']:,}" if m.recovery else "") + "</text>"]
    y0, y1 = TOP, TOP + STRIP_H
    out.append(f"<text x='{LEFT - 8}' y='{y0 + STRIP_H / 2}' text-anchor='end'>CommitLog</text>")
    out.append(f"<rect class='strip' x='{LEFT}' y='{y0}' width='{m.width}' height='{STRIP_H}' fill='#fafafa' stroke='#bbb'/>")
    per_px = (m.hi - m.lo) / max(1, m.width)
    # never-written bytes of each file
    for f in m.files:
        if f["data_end"] < f["base"] + f["size"]:
            a, b = _x(m, f["data_end"]), _x(m, f["base"] + f["size"])
            out.append(f"<rect x='{a:.1f}' y='{y0}' width='{max(b - a, 0.5):.1f}' height='{STRIP_H}' fill='#eef2f7'>"
                       f"<title>{escape(f['name'])}: not written from {f['data_end']:,} ({f['kind']})</title></rect>")
    # bytes by topic, stacked from the bottom of each pixel column
    if m.topic_bytes is not None and len(m.topic_bytes):
        stack = [0.0] * m.width
        rows = list(m.topic_bytes) + [m.blank_bytes, m.damage_bytes]
        colours = [PALETTE[min(i, len(PALETTE) - 1)] for i in range(len(m.topics))] + ["#bdbdbd", "#c62828"]
        names = list(m.topics) + ["BLANK", "damaged"]
        for row, colour, name in zip(rows, colours, names):
            parts = []
            for x in range(m.width):
                v = int(row[x])
                if v <= 0:
                    continue
                hpx = min(STRIP_H - stack[x], STRIP_H * v / per_px)
                if hpx <= 0:
                    continue
                parts.append(f"M{LEFT + x},{y1 - stack[x] - hpx:.2f}h1v{hpx:.2f}h-1z")
                stack[x] += hpx
            if parts:
                out.append(f"<path d='{''.join(parts)}' fill='{colour}'><title>{escape(name)}: {int(row.sum()):,} bytes</title></path>")
    # dead bytes: past where RocketMQ serves the log, up to the furthest written byte
    written = max((f["data_end"] for f in m.files), default=m.lo)
    if written > m.served_end and _shows(m, m.served_end, written):
        a, b = _x(m, m.served_end), _x(m, written)
        out.append(f"<rect x='{a:.1f}' y='{y0}' width='{max(b - a, 1):.1f}' height='{STRIP_H}' fill='#000' fill-opacity='0.25'>"
                   f"<title>dead bytes: {written - m.served_end:,} bytes from {m.served_end:,}, not served by RocketMQ</title></rect>")
    # file boundaries
    for i, f in enumerate(m.files):
        x = _x(m, f["base"])
        out.append(f"<line x1='{x:.1f}' y1='{y0 - 4}' x2='{x:.1f}' y2='{y1 + 4}' stroke='#555'/>")
        if i == 0 or x - _x(m, m.files[i - 1]["base"]) > 120:
            out.append(f"<text x='{x + 2:.1f}' y='{y1 + 14}' fill='#555'>{escape(f['name'].lstrip('0') or '0')}</text>")
    # the ends
    ends = [("served end", m.served_end, "#2e7d32", "")]
    if m.recovery:
        ends.append(("recovery's end", m.recovery["end"], "#ef6c00", "4,3"))
        if m.recovery.get("end_before", 0) > m.recovery["end"] and _shows(m, m.recovery["end"], m.recovery["end_before"]):
            a, b = _x(m, m.recovery["end"]), _x(m, m.recovery["end_before"])
            out.append(f"<rect x='{a:.1f}' y='{y0}' width='{max(b - a, 1):.1f}' height='{STRIP_H}' fill='none' stroke='#c62828' stroke-dasharray='3,2'>"
                       f"<title>recovery cuts {m.recovery['end_before'] - m.recovery['end']:,} bytes: {m.recovery['end']:,} to {m.recovery['end_before']:,}</title></rect>")
    for name in ("confirm_phy_offset", "master_flushed_offset", "logics_physical_offset"):
        if m.checkpoint.get(name, 0) > 0:
            ends.append((f"checkpoint {name}", m.checkpoint[name], "#6a1b9a", "1,2"))
    for name, at, colour, dash in ends:
        if not _shows(m, at):
            continue
        x = _x(m, at)
        out.append(f"<line x1='{x:.1f}' y1='{y0 - 8}' x2='{x:.1f}' y2='{y1 + 8}' stroke='{colour}' stroke-width='2'"
                   + (f" stroke-dasharray='{dash}'" if dash else "") + f"><title>{escape(name)}: {at:,}</title></line>")
    # findings
    for f in m.findings:
        if f["phy"] is None or not _shows(m, f["phy"]):
            continue
        x = _x(m, f["phy"])
        colour = SEVERITY.get(f["severity"], "#333")
        out.append(f"<path d='M{x - 4:.1f},{y0 - 18}h8l-4,8z' fill='{colour}'><title>{escape(f['kind'])} ({escape(f['severity'])}) "
                   f"{escape(f['file'])} @ {f['offset']}: {escape(f['message'])}</title></path>")
    if m.findings_left_out:
        out.append(f"<text x='{LEFT + m.width}' y='{y0 - 24}' text-anchor='end'>+{m.findings_left_out} finding(s) not drawn</text>")
    # queues and index files, each over the range of the log it covers
    y = y1 + GAP
    out.append(f"<text x='{LEFT - 8}' y='{y - 10}' text-anchor='end' font-weight='bold'>covers</text>")
    groups = {}
    for g in m.groups:
        groups.setdefault(g["queue"], []).append(g)
    for kind, items in (("queue", m.queues), ("index", m.index_files)):
        if items:
            out.append(f"<text x='{LEFT - 8}' y='{y + 4}' text-anchor='end' font-style='italic'>{'consume queues' if kind == 'queue' else 'index files'}</text>")
            y += TRACK_H
        for it in items:
            label = it["name"]
            out.append(f"<text x='{LEFT - 8}' y='{y + 4}' text-anchor='end'>{escape(label)}</text>")
            if it["lo"] is not None and it["hi"] is not None and _shows(m, it["lo"], it["hi"]):
                a, b = _x(m, it["lo"]), _x(m, it["hi"])
                what = f"{it['units']} unit(s)" if kind == "queue" else f"{it['entries']} entr(ies)"
                colour = "#455a64" if kind == "queue" else "#8d6e63"
                out.append(f"<line x1='{a:.1f}' y1='{y}' x2='{max(b, a + 1):.1f}' y2='{y}' stroke='{colour}' stroke-width='5'>"
                           f"<title>{escape(label)}: {what}, the log from {it['lo']:,} to {it['hi']:,}</title></line>")
            for g in groups.get(it["name"], []) if kind == "queue" else ():
                if g["phy"] is not None and _shows(m, g["phy"]):
                    x = _x(m, g["phy"])
                    out.append(f"<circle cx='{x:.1f}' cy='{y}' r='4' fill='#fff' stroke='#000'><title>group {escape(g['group'])} has consumed "
                               f"{escape(g['queue'])} up to offset {g['committed']} (lag {g['lag']})</title></circle>")
            y += TRACK_H
    # legend
    y += 16
    for i, t in enumerate(list(m.topics) + ["BLANK", "damaged", "not written", "dead"]):
        colour = PALETTE[min(i, len(PALETTE) - 1)] if i < len(m.topics) else {"BLANK": "#bdbdbd", "damaged": "#c62828", "not written": "#eef2f7", "dead": "#9e9e9e"}[t]
        x = LEFT + (i % 6) * min(170, m.width // 6)
        yy = y + (i // 6) * 18
        out.append(f"<rect x='{x}' y='{yy - 9}' width='10' height='10' fill='{colour}' stroke='#999'/><text x='{x + 14}' y='{yy}'>{escape(t[:24])}</text>")
    out.append("</svg>")
    return "\n".join(out)
