"""Plain-text renderings of records, queues and store summaries."""

from __future__ import annotations

import datetime as _dt

from ..format.commitlog import TRANSACTION_NAMES
from ..format.msgid import format_host
from ..format.record import Record


def fmt_time(ms: int) -> str:
    """Epoch milliseconds as UTC ISO text (ms kept)."""
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return f"{ms}ms"


def short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def record_line(rec: Record) -> str:
    """One line per record: where, what, which queue, CRC state, the key properties."""
    if rec.is_blank:
        return f"{rec.physical_offset:>14}  BLANK    {rec.total_size:>8}  (end of file: continue at the next file)"
    tx = TRANSACTION_NAMES[rec.transaction_type]
    crc = "ok" if rec.crc_ok else "BAD"
    p = rec.java_properties
    extras = " ".join(f"{k}={short(p[k], 40)}" for k in ("TAGS", "KEYS", "UNIQ_KEY") if k in p)
    return (
        f"{rec.physical_offset:>14}  {'MSG-V2' if rec.is_v2 else 'MSG'}{'':<3}{rec.total_size:>8}  "
        f"{short(rec.topic, 40)}/{rec.queue_id}@{rec.queue_offset}  {fmt_time(rec.store_timestamp)}  "
        f"crc={crc} tx={tx} body={len(rec.body)}B {extras}"
    ).rstrip()


def record_detail(rec: Record) -> str:
    """Every field of one record, one per line (``rmqlab lookup`` text output)."""
    if rec.is_blank:
        return record_line(rec)
    lines = [
        f"physical_offset            {rec.physical_offset}  ({rec.file} + {rec.file_offset})",
        f"total_size                 {rec.total_size}",
        f"magic                      0x{rec.magic:08X} ({'V2' if rec.is_v2 else 'V1'})",
        f"body_crc                   {rec.body_crc} ({'ok' if rec.body_crc_ok else 'MISMATCH'})",
        f"queue                      {rec.topic}/{rec.queue_id} offset {rec.queue_offset}",
        f"flag / sys_flag            {rec.flag} / 0x{rec.sys_flag:X} ({TRANSACTION_NAMES[rec.transaction_type]})",
        f"born                       {fmt_time(rec.born_timestamp)} from {format_host(*rec.born_host)}",
        f"stored                     {fmt_time(rec.store_timestamp)} at {format_host(*rec.store_host)}",
        f"reconsume_times            {rec.reconsume_times}",
        f"prepared_transaction_off   {rec.prepared_transaction_offset}",
        f"msg_id                     {rec.msg_id}",
    ]
    if rec.property_crc is not None:
        lines.append(f"__CRC32#                   {rec.property_crc} ({'ok' if rec.property_crc_ok else 'MISMATCH'})")
    for k, v in rec.property_pairs:
        lines.append(f"  property {k!r:<18} {v!r}")
    body = rec.body
    preview = body[:64].decode("utf-8", errors="replace") if body else ""
    lines.append(f"body ({len(body)} bytes)          {preview!r}{'…' if len(body) > 64 else ''}")
    return "\n".join(lines)
