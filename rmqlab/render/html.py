"""HTML renderings for notebooks (``_repr_html_``): hex views with coloured fields,
records and tables.  Pure functions from values to strings; no widgets here."""

from __future__ import annotations

import html

from .. import reprs

#: one colour per field position in a schema; the same field gets the same colour
PALETTE = [
    "#fde2e4", "#e2ece9", "#dfe7fd", "#fff1e6", "#e8e8e4", "#f0efeb", "#d8e2dc", "#ece4db",
    "#ffe5d9", "#cddafd", "#bee1e6", "#fad2e1", "#e2ece9", "#c5dedd", "#f1e3d3", "#dbe7e4",
    "#eddcd2", "#fde2e4", "#e2ece9", "#dfe7fd",
]
SPECIAL = {97: "#eeeeee", 98: "#f7f7f7", 99: "#ffb3b3"}


def colour(index: int) -> str:
    return SPECIAL.get(index, PALETTE[index % len(PALETTE)])


@reprs.view("hexview")
def hexview_html(view, width: int = 16) -> str:
    """A table: offset, hex bytes coloured by field (tooltip = field and value), legend."""
    rows = []
    pos = view.offset - view.offset % width
    while pos < view.end:
        cells = []
        for p in range(pos, pos + width):
            if view.offset <= p < view.end:
                b = view.data[p - view.offset]
                s = view.span_at(p)
                if s is not None:
                    tip = html.escape(f"{s.group}: {s.name} ({s.doc}) = {s.value}")
                    cells.append(f'<span title="{tip}" style="background:{colour(s.colour)}">{b:02x}</span>')
                else:
                    cells.append(f"{b:02x}")
            else:
                cells.append("&nbsp;&nbsp;")
        rows.append(f"<tr><td style='color:#888'>{pos:016x}</td><td>{' '.join(cells)}</td></tr>")
        pos += width
    legend = []
    seen = set()
    for s in view.spans:
        key = (s.group, s.name)
        if key in seen:
            continue
        seen.add(key)
        legend.append(
            f"<tr><td>{html.escape(s.group)}</td><td style='background:{colour(s.colour)}'>{html.escape(s.name)}</td>"
            f"<td>{html.escape(s.doc)}</td><td>{s.start}&ndash;{s.end - 1}</td><td>{html.escape(s.value[:120])}</td></tr>"
        )
    return (
        f"<div><b>{html.escape(str(view.path))}</b> ({view.kind}) bytes {view.offset}&ndash;{view.end - 1}"
        f"<table style='font-family:monospace;font-size:12px'>{''.join(rows)}</table>"
        f"<details open><summary>fields</summary><table style='font-size:12px'><tr><th>structure</th><th>field</th><th>Java</th><th>bytes</th><th>value</th></tr>{''.join(legend)}</table></details></div>"
    )
