"""A :class:`~rmqlab.report.StoreReport` as one HTML file that needs nothing else: the
styles inline, the pictures inline SVG, no script, and a Content-Security-Policy that
forbids the page any request (a mail client or a browser opening the attachment fetches
nothing).  The same page every run for the same report."""

from __future__ import annotations

from html import escape

from ..render.storemap import PALETTE, SEVERITY
from ..render.text import fmt_time
from .parts import SECTIONS

#: nothing may be loaded: inline styles, inline SVG and data: images only
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1180px;padding:0 20px 40px;color:#1d1d1f;line-height:1.45}
header{border-bottom:3px solid #0072b2;margin-bottom:8px}
h1{font-size:1.5em;margin:18px 0 4px}h2{font-size:1.2em;margin:28px 0 8px;border-bottom:1px solid #ddd}h3{font-size:1em;margin:14px 0 4px}
nav a{margin-right:14px}.meta{color:#555;font-size:.9em}
.verdict{font-size:1.05em;padding:12px 16px;border-left:6px solid #2e7d32;background:#f1f8f1}
.verdict.bad{border-color:#c62828;background:#fdf1f1}.verdict.warn{border-color:#f9a825;background:#fffbe8}.verdict.unknown{border-color:#ef6c00;background:#fff6ec}
table{border-collapse:collapse;font-size:.88em;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre,.hex{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.86em}pre{background:#f7f7f7;padding:8px;overflow-x:auto}
.sev{display:inline-block;color:#fff;border-radius:3px;padding:0 6px;font-size:.8em;text-transform:uppercase}
.unavailable{color:#8a4b00;font-style:italic}.broker{margin:2px 0 6px;color:#333}
details summary{cursor:pointer}svg{max-width:100%;height:auto}
"""


def _t(ms) -> str:
    return fmt_time(ms) if ms else "—"


def _table(head: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td class='n'>{c}</td>" if i in numeric else f"<td>{c}</td>" for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _facts(rows: list[list]) -> str:
    """A table of (what, value) rows, no heading."""
    return "<table>" + "".join(f"<tr><th>{a}</th><td>{b}</td></tr>" for a, b in rows) + "</table>"


def _n(v) -> str:
    return "—" if v is None else f"{v:,}" if isinstance(v, int) else escape(str(v))


# -- sections ---------------------------------------------------------------------------------------
def _verdict(v: dict) -> str:
    cls = {"good": "", "warn": "warn", "bad": "bad"}.get(v.get("level"), "unknown")
    cause = v.get("cause") or {}
    facts = [["what the next start means", escape(v.get("consequence") or "—")],
             ["the cause", escape(f"{cause['kind']} at {cause['file']} @ {cause['file_offset']}") if cause else "—"],
             ["end of the log", _n(v.get("commitlog_end"))],
             ["clean", {True: "yes", False: "no", None: "unknown"}[v.get("clean")]], ["written by", escape(v.get("writer") or "—")],
             ["last exit clean", {True: "yes", False: "no (abort file present)", None: "unknown"}[v.get("clean_exit")]],
             ["errors / warnings", f"{_n(v.get('errors'))} / {_n(v.get('warnings'))}"], ["records recovery would cut", _n(v.get("records_cut"))]]
    facts += [[f"&nbsp;&nbsp;of topic {escape(t)}", _n(n)] for t, n in (v.get("cut_per_topic") or {}).items()]
    return f"<p class='verdict {cls}'>{escape(v['text'])}</p>" + _facts(facts)


def _timeline_svg(t: dict) -> str:
    series = t.get("series") or {}
    if not series or not t.get("first_store_timestamp"):
        return "<p>No record in the log: nothing to draw.</p>"
    width, height, left, top, bottom = 1100, 260, 70, 16, 46
    bucket = t["bucket_ms"]
    lo = t["first_store_timestamp"] - t["first_store_timestamp"] % bucket
    hi = t["last_store_timestamp"] - t["last_store_timestamp"] % bucket + bucket
    n_buckets = max(1, (hi - lo) // bucket)
    # at most one column per two pixels: wider columns merge buckets
    per = max(1, -(-n_buckets * 2 // (width - left - 10)))
    cols = -(-n_buckets // per)
    colw = (width - left - 10) / cols
    topics = list(series)
    stacks = [[0] * cols for _ in topics]
    for i, tp in enumerate(topics):
        for start, n in series[tp].items():
            stacks[i][(int(start) - lo) // bucket // per] += n
    peak = max(1, max(sum(s[c] for s in stacks) for c in range(cols)))
    plot_h = height - top - bottom
    x_of = lambda ms: left + (ms - lo) / (per * bucket) * colw  # noqa: E731
    # the legend names every topic whole: three columns, or one where a name is long
    per_row = 1 if max(len(tp) for tp in topics) > 48 else 3
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height + 22 * (-(-len(topics) // per_row))}' font-family='sans-serif' font-size='11' role='img'>",
           f"<title>records stored per {_width_words(bucket * per)}, by topic</title>"]
    for c in range(cols):
        y = top + plot_h
        for i, tp in enumerate(topics):
            n = stacks[i][c]
            if not n:
                continue
            h = n / peak * plot_h
            y -= h
            when = lo + c * per * bucket
            out.append(f"<rect x='{left + c * colw:.1f}' y='{y:.1f}' width='{max(colw - 0.5, 0.6):.1f}' height='{h:.1f}' fill='{PALETTE[min(i, len(PALETTE) - 1)]}'>"
                       f"<title>{escape(tp)}: {n:,} record(s) from {_t(when)}</title></rect>")
    cw = t.get("crash_window")
    if cw and cw["records"]:
        x0, x1 = x_of(cw["from"]), x_of(cw["to"])
        out.append(f"<rect x='{x0:.1f}' y='{top}' width='{max(x1 - x0, 2):.1f}' height='{plot_h}' fill='#c62828' fill-opacity='0.12' stroke='#c62828' stroke-dasharray='4 3'>"
                   f"<title>the crash's window: {cw['records']:,} record(s) stored after the last flush the checkpoint records ({_t(cw['from'])})</title></rect>")
    for label, ms, colour in (("checkpoint: physicMsgTimestamp", (t.get("checkpoint") or {}).get("physic_msg_timestamp"), "#6a1b9a"),
                              ("last record", t.get("last_store_timestamp"), "#333")):
        if ms and lo <= ms <= hi:
            x = x_of(ms)
            out.append(f"<line x1='{x:.1f}' y1='{top}' x2='{x:.1f}' y2='{top + plot_h}' stroke='{colour}' stroke-width='1.5'><title>{escape(label)} {_t(ms)}</title></line>")
    out.append(f"<line x1='{left}' y1='{top + plot_h}' x2='{width - 10}' y2='{top + plot_h}' stroke='#555'/>")
    out.append(f"<text x='{left - 6}' y='{top + 8}' text-anchor='end'>{peak:,}</text><text x='{left - 6}' y='{top + plot_h}' text-anchor='end'>0</text>")
    for k in range(5):
        ms = lo + (hi - lo) * k // 4
        anchor = "start" if k == 0 else "end" if k == 4 else "middle"
        out.append(f"<text x='{x_of(ms):.1f}' y='{top + plot_h + 15}' text-anchor='{anchor}'>{_t(ms)}</text>")
    out.append(f"<text x='{left}' y='{top + plot_h + 32}' fill='#555'>records stored per {_width_words(bucket * per)} (UTC), stacked by topic</text>")
    for i, tp in enumerate(topics):
        x, y = left + (i % per_row) * 340, height + 8 + 22 * (i // per_row)
        out.append(f"<rect x='{x}' y='{y - 9}' width='10' height='10' fill='{PALETTE[min(i, len(PALETTE) - 1)]}'/><text x='{x + 14}' y='{y}'>{escape(tp)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def _width_words(ms: int) -> str:
    for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1_000)):
        if ms % size == 0:
            n = ms // size
            return unit if n == 1 else f"{n} {unit}s"
    return f"{ms} ms"


def _timeline(t: dict) -> str:
    out = [_timeline_svg(t)]
    rows = [["first record stored", _t(t.get("first_store_timestamp"))], ["last record stored", _t(t.get("last_store_timestamp"))],
            ["records", _n(t.get("records"))]]
    cp = t.get("checkpoint") or {}
    names = {"physic_msg_timestamp": "commitlog flushed up to (physicMsgTimestamp)", "logics_msg_timestamp": "consume queues flushed up to (logicsMsgTimestamp)",
             "index_msg_timestamp": "index flushed up to (indexMsgTimestamp)", "master_flushed_offset": "master flushed offset (masterFlushedOffset)",
             "confirm_phy_offset": "confirmed offset (confirmPhyOffset)", "logics_physical_offset": "consume queues flushed up to offset (logicsPhysicalOffset, 5.5+)"}
    rows += [[escape(names.get(k, k)), _t(v) if k.endswith("timestamp") else f"{v:,}"] for k, v in cp.items()]
    cw = t.get("crash_window")
    if cw and not cw["records"]:
        rows.append(["the crash's window", f"empty: no record was stored after the last flush the checkpoint records ({_t(cw['from'])})"])
    elif cw:
        per = ", ".join(f"{escape(k)}: {v:,}" for k, v in cw["per_topic"].items())
        rows.append(["the crash's window", f"{cw['records']:,} record(s) stored after the last flush the checkpoint records ({_t(cw['from'])} to {_t(cw['to'])})"
                     + (f": {per}" if per else "") + "; with the OS still up they were in the page cache, after a power loss they can be gone"])
    cu = t.get("cleaned_up")
    if cu:
        files = f" ({cu['files']:,} file(s) of the log)" if cu.get("files") is not None else ""
        rows.append(["clean-up", f"the log starts at offset {cu['below_offset']:,}: everything before it{files} was deleted (RocketMQ's CleanCommitLogService deletes "
                     "the oldest files past fileReservedTime, or they were removed by hand)"])
    per_topic = "".join(f"<tr><td>{escape(k)}</td><td class='n'>{v:,}</td></tr>" for k, v in (t.get("per_topic") or {}).items())
    out.append(_facts(rows))
    out.append(f"<details><summary>records per topic ({len(t.get('per_topic') or {}):,} topics)</summary><table><tr><th>topic</th><th>records</th></tr>{per_topic}</table></details>")
    return "".join(out)


def _findings(f: dict) -> str:
    c = f["counts"]
    out = [f"<p>{c['error']:,} error(s), {c['warning']:,} warning(s), {c['info']:,} note(s); "
           + ", ".join(f"{escape(k)} {_n(v)}" for k, v in (f.get("stats") or {}).items()) + ".</p>"]
    if not f["groups"]:
        out.append("<p>No finding: every record, queue unit, index entry and state file checked agrees.</p>")
    for g in f["groups"]:
        colour = SEVERITY.get(g["severity"], "#555")
        rows = [[escape(x["file"]), _n(x["offset"]), f"<span class='hex'>{escape(x['hex'] or '')}</span>", escape(x["message"])] for x in g["listed"]]
        more = g["count"] - len(g["listed"])
        out.append(f"<h3><span class='sev' style='background:{colour}'>{escape(g['severity'])}</span> {escape(g['kind'])} — {escape(g['title'])} ({g['count']:,})</h3>"
                   + (f"<p class='broker'><b>What the broker does:</b> {escape(g['broker'])}</p>" if g["broker"] else "")
                   + _table(["file", "offset", f"bytes there (hex, {32} at most)", "finding"], rows, {1})
                   + (f"<p>… and {more:,} more of this kind (<code>rmqlab verify --json</code> lists each).</p>" if more else ""))
    return "".join(out)


def _recovery(r: dict) -> str:
    if r["mode"] == "not modelled":
        return (f"<p>rmqlab does not model what RocketMQ's start-up does with this store: {escape(r['mode_reason'])}.</p><ul>"
                + "".join(f"<li>{escape(p)}</li>" for p in r["not_modelled"]) + "</ul>")
    out = [f"<p>Start-up would run <b>{escape(r['mode'])}</b> recovery: {escape(r['mode_reason'])}.</p>"]
    if not r["load_ok"]:
        out.append("<p><b>RocketMQ would refuse to load this store:</b> " + escape("; ".join(r["load_problems"])) + "</p>")
    if r.get("start_hangs"):
        out.append("<p><b>RocketMQ's start-up would never end:</b> " + escape(r["start_hangs"]) + "</p>")
    if r["not_modelled"]:
        out.append("<p>rmqlab does not model what start-up does with: " + escape("; ".join(r["not_modelled"])) + ".</p>")
    def rebuilt(c: dict) -> str:
        if c["queues_changed"] is None:
            return "—"
        index = ", ".join(f"{escape(i['action'])} {escape(i['file'])}" for i in c["index"]) or "none"
        return f"{c['queues_changed']:,} queue(s); index files: {index}"

    rows = [[escape(c["release"]), escape(c["start_file"]) + f"<br><small>{escape(c['start_reason'])}</small>", _n(c["commitlog_end"]), _n(c["records_scanned"]),
             _n(c["records_lost"]), rebuilt(c), f"<code>{escape(c['command'])}</code>"] for c in r["candidates"]]
    out.append(_table(["release", "start file", "end of the log", "records scanned", "records cut", "rebuilt", "apply it to a copy"], rows, {2, 3, 4}))
    if r["releases_differ"]:
        out.append("<p>The store's bytes do not say which release wrote it and the releases above would recover it differently: pick the broker's release.</p>")
    facts = [["end of the log", f"{r['commitlog_end']:,}" + (f" (data-like bytes went up to {r['commitlog_end_before']:,})" if r["commitlog_end_before"] > r["commitlog_end"] else "")]]
    if r["stop"]:
        s = r["stop"]
        facts.append(["the walk stops at", f"{escape(s['file'])} @ {s['file_offset']:,} — " + ("the end of the data (zeros)" if s["zero_tail"] else escape(f"{s['kind']}: {s['message']}"))])
    facts.append(["records cut", f"{r['records_lost']:,} ({r['records_lost_readable']:,} readable in the cut bytes: <code>rmqlab salvage</code>)"
                  + "".join(f"<br>{escape(t)}: {n:,}" for t, n in r["lost_per_topic"].items())])
    facts.append(["non-zero bytes past the end", _n(r["cut_bytes"])])
    facts += [["commitlog file deleted", escape(n)] for n in r["deleted_commitlog_files"]]
    facts.append(["consume queues changed", f"{r['queues_changed']:,}"])
    facts += [["queue left short", f"{escape(q['queue'])}: {q['missing']:,} record(s) not put back (re-dispatch starts at {q['redispatch_from']:,})"] for q in r["queues_short"]]
    facts += [["index file " + escape(i["action"]), escape(i["file"]) + (f" ({i['entries_added']:,} entries)" if i["entries_added"] else "")] for i in r["index"]]
    if r["index_unfindable"]:
        facts.append(["unfindable by key", f"{r['index_unfindable']:,} record(s)"])
    if r["timers_cut"]:
        facts.append(["timer messages cut", f"{r['timers_cut']:,} pending timer message(s) never fire"])
    out.append(_facts(facts))
    if r["queues"]:
        qrows = [[escape(q["queue"]), _n(q["cut_entries"]), _n(q["added_entries"]), "cannot be: no directory can have its name" if q["unmakeable"] else "yes" if q["created"] else "", f"{q['max_offset_before']:,} → {q['max_offset_after']:,}"] for q in r["queues"]]
        out.append(f"<details><summary>the {r['queues_changed']:,} queue(s) recovery changes</summary>"
                   + _table(["queue", "units cut", "units re-dispatched", "rebuilt", "max offset"], qrows, {1, 2}) + "</details>")
    out.append(f"<details><summary>recovery's plan as <code>rmqlab recover</code> prints it</summary><pre>{escape(r['text'])}</pre></details>")
    return "".join(out)


def _consumers(c: dict) -> str:
    if c["source"] is None:
        return "<p>No <code>config/consumerOffset.json</code> (nor its .bak): no consumer group has committed an offset on this store.</p>"
    out = [f"<p>Committed offsets from <code>{escape(c['source'])}</code>.</p>"] + [f"<p>note: {escape(n)}</p>" for n in c["notes"]]
    out.append(_table(["group", "queues", "lag at the capture", "queues committed past their end: at the capture", "after recovery",
                       "cut messages not consumed yet"],
                      [[escape(g["group"]), _n(g["queues"]), _n(g["lag"]), _n(g["committed_past_end"]), _n(g["past_end_after_recovery"]), _n(g["lost_unconsumed"])]
                       for g in c["groups"]], {1, 2, 3, 4, 5}))
    for loss in c["losses"]:
        past = (f"; its committed offset {loss['committed_offset']:,} lies past the queue's new end {loss['new_max_offset']:,}: if it pulls before new "
                "messages reach that offset, the broker moves it back to the end (DefaultMessageStore.getMessage: OFFSET_OVERFLOW_BADLY, nextOffsetCorrection) "
                f"and it receives them; messages written at offsets [{loss['new_max_offset']:,}, {loss['committed_offset']:,}) before it pulls it skips "
                "(it resumes at its committed offset)") if loss["committed_past_end"] else ""
        out.append(f"<p><b>{escape(loss['group'])}</b> on {escape(loss['queue'])}: recovery cuts queue offsets [{loss['cut_from']:,}, {loss['cut_to']:,}); "
                   f"{loss['unconsumed_lost']:,} of them it had not consumed: it never sees them{past}.</p>")
    rows = [[escape(r["group"]), escape(r["topic"]), _n(r["queue_id"]), _n(r["committed_offset"]), _n(r["min_offset"]), _n(r["max_offset"]), _n(r["lag"]),
             _t(r["next_store_timestamp"]), escape(r["note"] or "")] for r in c["rows"]]
    more = f" ({c['rows_left_out']:,} more not listed)" if c["rows_left_out"] else ""
    out.append(f"<details><summary>each queue of each group{more}</summary>"
               + _table(["group", "topic", "queue", "committed", "min", "max", "lag", "next message stored", "note"], rows, {2, 3, 4, 5, 6}) + "</details>")
    return "".join(out)


def _evidence(e: dict, rep) -> str:
    rows = [[f"<code>{escape(f['path'])}</code>", _n(f["size"]), f"<code>{escape(f['sha256'] or f.get('error') or '')}</code>"] for f in e["files"]]
    return (_facts([["store", f"<code>{escape(rep.root)}</code>"], ["command", f"<code>{escape(rep.command)}</code>"],
                    ["rmqlab", escape(rep.version)], ["report made", escape(rep.made)], ["files", f"{len(e['files']):,} holding {e['bytes']:,} bytes"]])
            + f"<details open><summary>every file, its size and SHA-256</summary>{_table(['file', 'bytes', 'SHA-256'], rows, {1})}</details>")


def report_html(rep, *, inline: bool = False) -> str:
    """The report as a whole HTML page (``inline``: the body only, for a notebook)."""
    body = []
    render = {"verdict": _verdict, "timeline": _timeline, "findings": _findings, "recovery": _recovery, "consumers": _consumers}
    for key, heading in SECTIONS:
        part = rep.sections.get(key)
        why = part.get("unavailable") if isinstance(part, dict) else "could not be read because it was not computed"
        if why:
            html = f"<p class='unavailable'>This part {escape(why)}.</p>"
        elif key == "map":
            html = (rep.map_svg or "") + ("<p>Hover a mark for what it is: the strip is the log along its offsets, coloured by topic; triangles are findings "
                                          "(red errors, orange warnings); lines under it are the consume queues and index files over the part of the log they cover.</p>")
        elif key == "evidence":
            html = _evidence(part, rep)
        else:
            html = render[key](part)
        body.append(f"<section id='{key}'><h2>{escape(heading)}</h2>{html}</section>")
    nav = "".join(f"<a href='#{k}'>{escape(h)}</a>" for k, h in SECTIONS)
    head = (f"<header><h1>Store report: {escape(rep.root)}</h1><p class='meta'>made {escape(rep.made)} by rmqlab {escape(rep.version)} — "
            f"<code>{escape(rep.command)}</code></p><nav>{nav}</nav></header>")
    if inline:
        return f"<div class='rmqlab-report'><style>{STYLE.replace('body{', '.rmqlab-report{')}</style>{head}{''.join(body)}</div>"
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>rmqlab report: {escape(rep.root)}</title>"
            f"<style>{STYLE}</style></head><body>{head}{''.join(body)}</body></html>\n")
