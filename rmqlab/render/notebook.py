"""HTML renderings for the lessons and widgets: records, store summaries, file
layouts, consume-queue pages, hash-chain walks.

Pure functions from values to HTML strings (the widgets put them in ``HTML``
widgets, ``_repr_html_`` methods return them).  Everything shown is read from the
values handed in; nothing here opens a file.  Paths are shown relative to the store
root so that a lesson's output is the same wherever the repository lives.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from .. import reprs
from ..format import commitlog as cl
from ..format.msgid import format_host
from .storemap import inline_map
from .text import body_preview, fmt_time, short

_TABLE = "border-collapse:collapse;font-size:12px"
_CELL = "border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top"
OK = "#2e7d32"
BAD = "#c62828"
MUTED = "#888"


def esc(value) -> str:
    return html.escape(str(value))


def table(headers: Sequence[str] | None, rows: Iterable[Sequence], *, caption: str | None = None, raw: bool = False, row_styles: Sequence[str] | None = None) -> str:
    """A small bordered table; cells are escaped unless ``raw``; ``headers=None``: no
    header row (a two-column list of name and value)."""
    head = "".join(f"<th style='{_CELL};background:#f4f4f4'>{esc(h)}</th>" for h in headers or ())
    body = []
    for i, row in enumerate(rows):
        style = f" style='{row_styles[i]}'" if row_styles and row_styles[i] else ""
        cells = "".join(f"<td style='{_CELL}'>{c if raw else esc(c)}</td>" for c in row)
        body.append(f"<tr{style}>{cells}</tr>")
    cap = f"<caption style='text-align:left;font-weight:bold'>{esc(caption)}</caption>" if caption else ""
    return f"<table style='{_TABLE}'>{cap}{f'<tr>{head}</tr>' if head else ''}{''.join(body)}</table>"


def badge(text: str, ok: bool | None) -> str:
    colour = MUTED if ok is None else (OK if ok else BAD)
    return f"<span style='color:{colour};font-weight:bold'>{esc(text)}</span>"


def rel(path, root) -> str:
    """``path`` relative to ``root`` when it is inside it (stable lesson output)."""
    try:
        return Path(os.path.relpath(path, root)).as_posix()
    except ValueError:
        return str(path)


# -- records ---------------------------------------------------------------------------------
@reprs.view("record")
def record_html(rec) -> str:
    """Every field of one CommitLog record with its Java name (``Record._repr_html_``)."""
    if rec.is_blank:
        return (
            f"<div><b>BLANK</b> end-of-file record at {rec.physical_offset}: totalSize {rec.total_size} = the bytes left "
            f"in file {esc(Path(rec.file).name)}; the log continues at the next file.</div>"
        )
    crc = badge("ok" if rec.body_crc_ok else "MISMATCH", rec.body_crc_ok)
    rows = [
        ("physicalOffset", f"{rec.physical_offset} ({esc(Path(rec.file).name)} + {rec.file_offset})"),
        ("totalSize", rec.total_size),
        ("magicCode", f"0x{rec.magic:08X} ({'V2' if rec.is_v2 else 'V1'})"),
        ("bodyCRC", f"{rec.body_crc} {crc}"),
        ("topic / queueId / queueOffset", esc(f"{rec.topic} / {rec.queue_id} / {rec.queue_offset}")),
        ("flag / sysFlag", f"{rec.flag} / 0x{rec.sys_flag:X} ({cl.TRANSACTION_NAMES[rec.transaction_type]})"),
        ("bornTimestamp / bornHost", esc(f"{fmt_time(rec.born_timestamp)} / {format_host(*rec.born_host)}")),
        ("storeTimestamp / storeHost", esc(f"{fmt_time(rec.store_timestamp)} / {format_host(*rec.store_host)}")),
        ("reconsumeTimes", rec.reconsume_times),
        ("preparedTransactionOffset", rec.prepared_transaction_offset),
        ("msgId (offset id)", rec.msg_id),
    ]
    if rec.property_crc is not None:
        rows.append(("__CRC32#", f"{rec.property_crc} {badge('ok' if rec.property_crc_ok else 'MISMATCH', rec.property_crc_ok)}"))
    for k, v in rec.property_pairs:
        rows.append((f"property {k!r}", esc(repr(v))))  # labels are escaped once, below
    rows.append((f"body ({len(rec.body)} bytes)", esc(body_preview(rec.body, 80))))
    return table(["field (Java name)", "value"], [(esc(a), b) for a, b in rows], raw=True, caption=f"record at {rec.physical_offset}")


def records_html(records: Iterable, *, caption: str | None = None) -> str:
    """One row per record: where, queue, time, tags, keys, CRC."""
    rows = []
    for r in records:
        if r.is_blank:
            rows.append((r.physical_offset, "BLANK", r.total_size, "", "", "", "", ""))
            continue
        rows.append(
            (
                r.physical_offset,
                "V2" if r.is_v2 else "V1",
                r.total_size,
                short(f"{r.topic}/{r.queue_id}@{r.queue_offset}", 50),
                fmt_time(r.store_timestamp),
                r.tags or "",
                short(r.keys or "", 30),
                "ok" if r.crc_ok else "BAD",
            )
        )
    return table(["physical offset", "kind", "size", "queue @ offset", "stored (UTC)", "TAGS", "KEYS", "CRC"], rows, caption=caption)


# -- store -------------------------------------------------------------------------------------
@reprs.view("summary")
def summary_html(s, with_map: bool = True) -> str:
    """A :class:`~rmqlab.store.summary.StoreSummary` as HTML (``rmqlab info``), the store
    map (with recovery's dry run) under it when ``with_map``."""
    parts = [f"<div><b>store</b> {esc(Path(s.root).name)}: " + ", ".join(f"{esc(k)}={esc(v)}" for k, v in s.config.items()) + "</div>"]
    line = f"commitlog: {len(s.commitlog_files)} file(s), min offset {s.commitlog_min_offset}"
    if s.commitlog_end_offset is not None:
        line += f", end of log {s.commitlog_end_offset}; {s.records} messages, {s.blanks} BLANK, {s.crc_failures} CRC failures"
    parts.append(f"<div>{esc(line)}</div>")
    if s.stopped_at:
        parts.append(f"<div>{badge('walk stopped at damage: ', False)}{esc(s.stopped_at)}</div>")
    if s.per_queue:
        parts.append(table(["queue", "messages"], [(short(q, 60), n) for q, n in s.per_queue.items()], caption="messages per queue"))
    if s.consume_queues:
        parts.append(
            table(
                ["consume queue", "files", "min offset", "max offset", "max physic offset"],
                [(short(q["queue"], 60), q["files"], q["min_offset"], q["max_offset"], q["max_physic_offset"]) for q in s.consume_queues],
                caption="consume queues",
            )
        )
    if s.index_files:
        parts.append(
            table(
                ["index file", "entries", "slots used", "phy offsets", "stored (UTC)"],
                [
                    (f["file"], f["index_count"] - 1, f["hash_slot_count"], f"{f['begin_phy_offset']} .. {f['end_phy_offset']}", f"{fmt_time(f['begin_timestamp'])} .. {fmt_time(f['end_timestamp'])}")
                    for f in s.index_files
                ],
                caption="index files",
            )
        )
    if s.checkpoint:
        parts.append(table(["checkpoint field", "value", "as time (UTC)"], [(k, v, fmt_time(v) if k.endswith("timestamp") and v else "") for k, v in s.checkpoint.items()], caption="checkpoint"))
    abort = "absent: the last exit was clean" if s.abort is None else f"PRESENT: the last exit was not clean (content {s.abort!r})"
    parts.append(f"<div>abort: {badge(abort, s.abort is None)}</div>")
    for p in s.problems:
        parts.append(f"<div>{badge('problem', False)} {esc(p)}</div>")
    if with_map:
        parts.append(inline_map(s.root, title="the store map", verify=False))
    return "<div>" + "".join(parts) + "</div>"


def file_rows(root) -> list[tuple[str, str, int, str]]:
    """``(path, kind, size, what the name means)`` for every file under a store root."""
    root = Path(root)
    rows = []
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        r = p.relative_to(root).as_posix()
        parts = p.relative_to(root).parts
        size = p.stat().st_size
        if parts[0] == "commitlog" and p.name.isdigit():
            rows.append((r, "commitlog", size, f"first byte is physical offset {int(p.name)}"))
        elif parts[0] == "consumequeue" and p.name.isdigit() and len(parts) == 4:
            rows.append((r, "consume queue", size, f"topic {parts[1]}, queue {parts[2]}; first entry is queue offset {int(p.name) // 20}"))
        elif parts[0] == "index" and p.name.isdigit():
            n = p.name
            rows.append((r, "index", size, f"created {n[0:4]}-{n[4:6]}-{n[6:8]} {n[8:10]}:{n[10:12]}:{n[12:14]}.{n[14:]} (broker local time)"))
        elif r == "checkpoint":
            rows.append((r, "checkpoint", size, "how far commitlog, consume queues and index were flushed (timestamps)"))
        elif r == "abort":
            rows.append((r, "abort", size, "present while the store is open: left behind by a crash"))
        elif r == "lock":
            rows.append((r, "lock", size, "the OS file lock that keeps a second broker out"))
        elif parts[0] == "config":
            rows.append((r, "config", size, "broker metadata (topics, consumer offsets)"))
        else:
            rows.append((r, "other", size, ""))
    return rows


def grouped_file_rows(root) -> list[tuple[str, str, int, str]]:
    """:func:`file_rows` with each consume queue's files on one row (a store has
    thousands of them; one line per queue says the same)."""
    rows: list[tuple[str, str, int, str]] = []
    queues: dict[str, list[tuple[str, int]]] = {}
    for path, kind, size, what in file_rows(root):
        if kind == "consume queue":
            folder, _, name = path.rpartition("/")
            if folder not in queues:
                queues[folder] = []
                rows.append((folder + "/", kind, 0, ""))  # filled in below, in place
            queues[folder].append((name, size))
        else:
            rows.append((path, kind, size, what))
    out = []
    for path, kind, size, what in rows:
        if kind == "consume queue":
            files = queues[path[:-1]]
            _, topic, qid = path[:-1].split("/", 2)
            firsts = ", ".join(str(int(n) // 20) for n, _ in files[:4]) + (", …" if len(files) > 4 else "")
            what = f"topic {topic}, queue {qid}: {len(files)} file(s), named by their first entry's byte (queue offsets {firsts})"
            size = sum(sz for _, sz in files)
        out.append((path, kind, size, what))
    return out


def sizes_html(config) -> str:
    """A store's file sizes beside RocketMQ's defaults (the lessons' stores are tiny)."""
    from ..config import MessageStoreConfig
    from ..format.consumequeue import CQ_STORE_UNIT_SIZE

    d = MessageStoreConfig()

    def sizes(c):
        return [
            f"{c.mapped_file_size_commit_log:,} B",
            f"{c.mapped_file_size_consume_queue // CQ_STORE_UNIT_SIZE:,} entries × {CQ_STORE_UNIT_SIZE} B",
            f"{c.max_hash_slot_num:,}",
            f"{c.max_index_num:,}",
        ]

    names = ["CommitLog file (mappedFileSizeCommitLog)", "consume-queue file (mappedFileSizeConsumeQueue)", "index slots per file (maxHashSlotNum)", "index entries per file (maxIndexNum)"]
    return table(["size", "this store", "RocketMQ's default"], [(n, a, b) for n, a, b in zip(names, sizes(config), sizes(d))])


def files_html(root) -> str:
    return table(["path", "kind", "bytes", "what the name says"], grouped_file_rows(root), caption="files")


@reprs.view("checkpoint")
def checkpoint_html(cp) -> str:
    if cp is None:
        return "<div>checkpoint: absent</div>"
    rows = [(k, v, fmt_time(v) if k.endswith("timestamp") and v else "") for k, v in cp.to_dict().items()]
    rows.append(("minTimestamp (recovery)", cp.min_timestamp, fmt_time(cp.min_timestamp) if cp.min_timestamp else ""))
    return table(["checkpoint field", "value", "as time (UTC)"], rows, caption="checkpoint")


# -- consume queues ------------------------------------------------------------------------------
def queue_page_html(pairs: Iterable, *, caption: str | None = None, highlight: set[int] | None = None) -> str:
    """``(CqEntry, Record)`` pairs: the 20-byte entry beside the record it points at."""
    rows, styles = [], []
    for e, r in pairs:
        rows.append((e.queue_offset, e.commitlog_offset, e.size, e.tags_code, r.tags or "", short(r.keys or "", 30), fmt_time(r.store_timestamp), body_preview(r.body, 40)))
        styles.append("background:#fff3c4" if highlight and e.queue_offset in highlight else "")
    return table(["queue offset", "commitLogOffset", "size", "tagsCode", "TAGS (from record)", "KEYS", "stored (UTC)", "body"], rows, caption=caption, row_styles=styles)


# -- hash chains -----------------------------------------------------------------------------------
def chain_html(result, *, slot_count: int, key_hash: int, record_keys: dict[int, str] | None = None) -> str:
    """A :class:`~rmqlab.lookup.KeyQueryResult` walk: every entry visited per file.

    ``record_keys`` maps a physical offset to the keys its record really carries,
    so a hash collision can be shown for what it is.
    """
    from ..format.hashing import java_string_hash
    from ..format.indexfile import index_key

    full = index_key(result.topic, result.key)
    found = {r.physical_offset for r in result.records}
    collided = set(result.collisions)
    record_keys = record_keys or {}
    h = java_string_hash(full)
    parts = [
        "<div>",
        f"<div>indexed key <code>{esc(full)}</code>: Java hashCode {h}, keyHash = abs = {key_hash}, "
        f"slot = {key_hash} % {slot_count} = <b>{key_hash % slot_count}</b></div>",
    ]
    for f, steps in result.walk:
        slot_value = int(f.slots()[key_hash % slot_count])
        head = f"index file {f.name}: slot {key_hash % slot_count} holds entry {slot_value}" + (" (empty)" if slot_value <= 0 else "")
        if not steps:
            parts.append(f"<div style='margin-top:6px'>{esc(head)}; nothing to walk</div>")
            continue
        rows, styles = [], []
        skipped: list = []  # a run of other keys sharing the slot: one row for the run

        def flush_skipped():
            if not skipped:
                return
            if len(skipped) == 1:
                t = skipped[0]
                rows.append((t.number, t.key_hash, t.phy_offset, fmt_time(t.timestamp), t.prev_index, "hash differs: another key sharing the slot, skipped"))
            else:
                rows.append((f"{skipped[0].number} … {skipped[-1].number}", "", "", "", skipped[-1].prev_index, f"{len(skipped)} entries of other keys sharing the slot, skipped"))
            styles.append(f"color:{MUTED}")
            skipped.clear()

        for s in steps:
            if not s.hash_matches:
                skipped.append(s)
                continue
            flush_skipped()
            if not s.time_matches:
                verdict, style = "hash matches, time outside the range", f"color:{MUTED}"
            elif s.phy_offset in found:
                verdict, style = "hash matches; record read, key confirmed ✓", "background:#e3f4e3"
            elif s.phy_offset in collided:
                real = record_keys.get(s.phy_offset)
                verdict = "hash matches but the record is another key: COLLISION ✗" + (f" (it carries {real})" if real else "")
                style = "background:#fde2e2"
            else:
                verdict, style = "hash matches (beyond max results)", ""
            rows.append((s.number, s.key_hash, s.phy_offset, fmt_time(s.timestamp), s.prev_index, verdict))
            styles.append(style)
        flush_skipped()
        parts.append(table(["entry", "keyHash", "phyOffset", "time (UTC)", "prevIndex", "verdict"], rows, caption=head, row_styles=styles))
    parts.append(
        f"<div style='margin-top:6px'>index answer (IndexService.queryOffset: hash matches, newest first): {esc(result.raw_offsets)}<br>"
        f"the store's queryMessage returns all of them, ascending: {esc(sorted(set(result.raw_offsets)))}<br>"
        f"the client's real-key check (MQAdminImpl.queryMessage) keeps {esc(sorted(found))}; collisions dropped: {esc(result.collisions)}</div>"
    )
    parts.append("</div>")
    return "".join(parts)


def key_hash_table(keys: Sequence[str], topic: str, slot_count: int) -> str:
    """Keys side by side: ``topic#key``, Java hashCode, keyHash, slot."""
    from ..format.hashing import index_key_hash, java_string_hash
    from ..format.indexfile import index_key

    rows = []
    for k in keys:
        full = index_key(topic, k)
        kh = index_key_hash(full)
        rows.append((k, full, java_string_hash(full), kh, kh % slot_count))
    return table(["key", "indexed as", "Java hashCode", "keyHash", f"slot (of {slot_count})"], rows)


# -- crash lab ---------------------------------------------------------------------------------------
CRASH_COLOURS = {"kept": "#66bb6a", "lost": "#e53935", "cut": "#fb8c00", "unacked": "#bdbdbd"}


def crash_strip_html(result, *, width: int = 60) -> str:
    """One square per put: kept (green), acknowledged but lost (red), intact on disk
    but cut by recovery (orange), never acknowledged (grey)."""
    kept = set(result.kept)
    on_disk = set(result.on_disk)
    cells = []
    for p in result.puts:
        if p.seq in kept:
            state = "kept"
        elif not p.acknowledged:
            state = "unacked"
        elif p.seq in on_disk:
            state = "cut"
        else:
            state = "lost"
        tip = esc(f"put #{p.seq} {p.topic}/{p.queue_id}@{p.queue_offset} at {p.physical_offset} ({p.size} B): {state}")
        cells.append(f"<span title='{tip}' style='display:inline-block;width:9px;height:9px;margin:1px;background:{CRASH_COLOURS[state]}'></span>")
        if (p.seq + 1) % width == 0:
            cells.append("<br>")
    legend = " ".join(
        f"<span style='display:inline-block;width:9px;height:9px;background:{c}'></span> {esc(n)}"
        for n, c in (("kept", CRASH_COLOURS["kept"]), ("acknowledged, lost", CRASH_COLOURS["lost"]), ("on disk, cut by recovery", CRASH_COLOURS["cut"]), ("never acknowledged (in flight)", CRASH_COLOURS["unacked"]))
    )
    return f"<div style='line-height:9px'>{''.join(cells)}</div><div style='font-size:12px;margin-top:4px'>{legend}</div>"


@reprs.view("crash_result")
def crash_result_html(result) -> str:
    """A :class:`~rmqlab.lab.crashlab.CrashResult`: counts, the strip, why each
    acknowledged record was lost, and recovery's decisions."""
    from ..lab.crashlab import seq_ranges
    rep = result.report
    acked = result.acknowledged
    rows = [
        ("puts", len(result.puts)),
        ("acknowledged to the producer", len(acked)),
        ("CommitLog written / forced to disk", f"{result.written_where} / {result.flushed_where} bytes"),
        ("records intact on disk after the crash", len(result.on_disk)),
        ("recovery", f"{rep.mode}; end of log {rep.commitlog_end}" + (f"; stopped by {rep.stop.kind}" if rep.stop and not rep.stop.zero_tail else "")),
        ("records kept", len(result.kept)),
        ("acknowledged but lost", len(result.lost)),
    ]
    if result.lost:
        lost = table(["puts", "how many", "why they were lost"], [(seq_ranges(seqs), len(seqs), why) for seqs, why in result.lost_by_reason()], caption="acknowledged, then lost")
    else:
        lost = f"<div>{badge('nothing that was acknowledged was lost', True)}</div>"
    return (
        f"<div><b>{esc(result.scenario)}</b> ({esc(result.flush_disk_type)}): {esc(result.description)}</div>"
        + table(None, rows)
        + crash_strip_html(result)
        + lost
        + f"<details><summary>recovery report</summary><pre style='font-size:11px'>{esc(rep.to_text())}</pre></details>"
    )


# -- reports -----------------------------------------------------------------------------------------
def pre(text: str) -> str:
    return f"<pre style='font-size:12px;line-height:1.3'>{esc(text)}</pre>"


@reprs.view("recovery_report")
def recovery_report_html(rep) -> str:
    """A :class:`~rmqlab.recovery.report.RecoveryReport`: the verdict, then its text."""
    lost = len(rep.lost_records)
    head = badge(f"{rep.mode} recovery", rep.mode == "normal") + f" — end of log {rep.commitlog_end}; "
    head += badge(f"{lost} readable record(s) in the cut bytes", lost == 0) if lost else badge("nothing readable cut", True)
    return f"<div>{head}</div>" + pre(rep.to_text()) + recovery_maps_html(rep)


def recovery_maps_html(rep) -> str:
    """Before and after on the store map: the store as recovery found it, its end and
    what it cuts marked (a dry run, or a recovered copy: the original is unchanged), and
    the recovered store (a copy or in place)."""
    out = []
    if rep.applied in ("dry-run", "copy"):
        out.append(inline_map(rep.root, title="before: where recovery ends the log and what it cuts", verify=False, recovery=rep))
    else:
        out.append("<div><i>before: recovered in place, the store as it was is gone (recover to a copy to see both)</i></div>")
    if rep.applied == "dry-run":
        out.append("<div><i>after: a dry run changed nothing (recover to a copy to see the recovered store)</i></div>")
    elif rep.target:
        out.append(inline_map(rep.target, title="after: the recovered store", verify=False))
    return "".join(out)


@reprs.view("verify_report")
def verify_report_html(report, limit: int = 200) -> str:
    """A :class:`~rmqlab.forensics.verify.VerifyReport`: counts, then every finding."""
    rows = [(f.severity, f.kind, f.file, "" if f.offset is None else f.offset, f.message) for f in report.findings[:limit]]
    styles = [f"color:{BAD}" if r[0] == "error" else "" for r in rows]
    more = f"<div>… {len(report.findings) - limit} more</div>" if len(report.findings) > limit else ""
    head = report.to_text().splitlines()[0]
    return (f"<div>{badge(head, report.ok)}</div>" + table(["severity", "kind", "file", "offset", "finding"], rows, row_styles=styles) + more
            + inline_map(report.root, title="the findings on the store map", findings=report.findings))


@reprs.view("diff_report")
def diff_report_html(report) -> str:
    """A :class:`~rmqlab.forensics.diff.DiffReport` as its text."""
    return f"<div>{badge('identical' if report.identical else f'{len(report.files)} file(s) differ', report.identical)}</div>" + pre(report.to_text())


@reprs.view("store")
def store_html(reader) -> str:
    """A store's summary from its files' metadata (no scan of the log)."""
    from ..store.summary import summarize

    return summary_html(summarize(reader, scan=False), with_map=False)


@reprs.view("key_query")
def key_query_html(result) -> str:
    """A key query: the chain walk, step by step, then the records returned."""
    from ..format.hashing import index_key_hash
    from ..format.indexfile import index_key

    slots = result.walk[0][0].max_hash_slot_num if result.walk else 1
    kh = index_key_hash(index_key(result.topic, result.key))
    return chain_html(result, slot_count=slots, key_hash=kh) + records_html(result.records, caption="records returned")


# -- a live store --------------------------------------------------------------------------------
def positions_html(p, *, caption: str | None = None) -> str:
    """A live store's positions (:class:`rmqlab.lab.live.Positions`) as bars along the
    log, each as far as it reached, and the queues and the index beside them."""
    end = max(1, p.written)
    bars = []
    for label, at in p.rows():
        pct = 100 * at / end
        bars.append(
            f"<div style='display:flex;align-items:center;gap:8px;margin:2px 0'><span style='width:190px;white-space:nowrap'>{esc(label)}</span>"
            f"<div role='meter' aria-label='{esc(label)}' aria-valuenow='{at}' aria-valuemax='{end}' style='flex:1;min-width:120px;background:#eee;height:14px'>"
            f"<div style='width:{pct:.1f}%;background:#1565c0;height:14px'></div></div><code style='width:90px;text-align:right'>{at:,}</code></div>"
        )
    queues = ", ".join(f"{esc(q)}: {n}" for q, n in p.queue_units.items()) or "none yet"
    facts = (f"<div>records appended, not dispatched: <b>{p.dispatch_behind}</b> · consume-queue units: {queues} · "
             f"index entries: {p.index_entries} · commitlog files: {p.files}</div>")
    head = f"<div><b>{esc(caption)}</b></div>" if caption else ""
    return f"<div>{head}{''.join(bars)}{facts}</div>"
