"""Plain-text renderings of records, queues and store summaries."""

from __future__ import annotations

import datetime as _dt
import zlib

from ..format.commitlog import TRANSACTION_NAMES, compression_of, sys_flag_names
from ..format.msgid import format_host
from ..format.record import Record


def fmt_time(ms: int) -> str:
    """Epoch milliseconds as UTC ISO text (ms kept)."""
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return f"{ms}ms"


def short(text: str, width: int = 48) -> str:
    """``text`` safe for a terminal (:func:`printable`), cut to ``width`` characters."""
    text = printable(text)
    return text if len(text) <= width else text[: width - 1] + "…"


_CONTROL = {c: f"\\x{c:02x}" for c in list(range(0x20)) + list(range(0x7F, 0xA0))}  # not a layout: C0, DEL and C1 code points


def printable(text: str) -> str:
    """Control characters (C0, DEL, C1: a NUL, an escape sequence in a record) as
    ``\\xNN``: what a record holds must not drive the terminal it is shown on."""
    return text.translate(_CONTROL)


def body_preview(body: bytes, width: int = 40) -> str:
    """The first ``width`` bytes of a body: as text when they are UTF-8 text, else as
    hex (``hex 1f8b0800…``) — binary bodies (protobuf, compressed) decoded as text are
    mojibake that says nothing."""
    if not body:
        return ""
    head = body[:width]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as err:
        # a multi-byte character cut by the window is still text
        text = head[: err.start].decode("utf-8") if err.start >= len(head) - 3 and err.reason == "unexpected end of data" else None
    if text is not None and all(c.isprintable() or c in "\t\n\r" for c in text):
        return repr(text)[1:-1] + ("…" if len(body) > width else "")
    return "hex " + head[: width // 2].hex() + ("…" if len(body) > width // 2 else "")


def body_label(rec: Record) -> str:
    """``123B``, with the compression a sysFlag declares (``123B zlib``)."""
    comp = compression_of(rec.sys_flag)
    return f"{len(rec.body)}B" + (f" {comp.lower()}-compressed" if comp else "")


def record_line(rec: Record) -> str:
    """One line per record: where, what, which queue, CRC state, the key properties."""
    if rec.is_blank:
        return f"{rec.physical_offset:>14}  BLANK    {rec.total_size:>8}  (end of file: continue at the next file)"
    tx = TRANSACTION_NAMES[rec.transaction_type]
    crc = "ok" if rec.crc_ok else "BAD"
    p = rec.java_properties
    extras = " ".join(f"{k}={short(p[k], 40)}" for k in ("TAGS", "KEYS", "UNIQ_KEY") if k in p)  # Java's map: empty values dropped
    return (
        f"{rec.physical_offset:>14}  {'MSG-V2' if rec.is_v2 else 'MSG'}{'':<3}{rec.total_size:>8}  "
        f"{short(rec.topic, 40)}/{rec.queue_id}@{rec.queue_offset}  {fmt_time(rec.store_timestamp)}  "
        f"crc={crc} tx={tx} body={body_label(rec)} {extras}"
    ).rstrip()


def record_detail(rec: Record, *, raw: bool = False, decompress: bool = False) -> str:
    """Every field of one record, one per line (``rmqlab lookup`` text output): the
    properties as RocketMQ's map holds them (``raw``: every pair as on disk, those the
    map drops marked), control characters escaped, long values cut; a compressed body
    labelled (``decompress``: shown inflated)."""
    if rec.is_blank:
        return record_line(rec)
    lines = [
        f"physical_offset            {rec.physical_offset}  ({rec.file} + {rec.file_offset})",
        f"total_size                 {rec.total_size}",
        f"magic                      0x{rec.magic:08X} ({'V2' if rec.is_v2 else 'V1'})",
        f"body_crc                   {rec.body_crc} ({'ok' if rec.body_crc_ok else 'MISMATCH'})",
        f"queue                      {printable(rec.topic)}/{rec.queue_id} offset {rec.queue_offset}",
        f"flag / sys_flag            {rec.flag} / 0x{rec.sys_flag:X} ({' | '.join(sys_flag_names(rec.sys_flag))})",
        f"born                       {fmt_time(rec.born_timestamp)} from {format_host(*rec.born_host)}",
        f"stored                     {fmt_time(rec.store_timestamp)} at {format_host(*rec.store_host)}",
        f"reconsume_times            {rec.reconsume_times}",
        f"prepared_transaction_off   {rec.prepared_transaction_offset}",
        f"msg_id                     {rec.msg_id}",
    ]
    if rec.property_crc is not None:
        lines.append(f"__CRC32#                   {rec.property_crc} ({'ok' if rec.property_crc_ok else 'MISMATCH'})")
    java = rec.java_properties
    for k, v in (rec.property_pairs if raw else java.items()):
        dropped = raw and java.get(k) != v
        lines.append(f"  property {short(repr(k), 40):<18} {short(repr(v), PROPERTY_WIDTH)}" + ("   (not in RocketMQ's map: empty, or a later duplicate wins)" if dropped else ""))
    if not raw and len(java) != len(rec.property_pairs):
        lines.append(f"  ({len(rec.property_pairs) - len(java)} raw pair(s) RocketMQ's parser drops: empty names or values, duplicates; --raw shows them)")
    body = rec.body
    comp = compression_of(rec.sys_flag)
    if comp and decompress:
        try:
            body = decompressed_body(rec)
            comp = f"{comp}, shown decompressed: {len(body)} bytes"
        except (ValueError, ImportError) as exc:
            comp = f"{comp}, not decompressed: {exc}"
    preview = body[:64].decode("utf-8", errors="replace") if body else ""
    lines.append(f"body ({len(rec.body)} bytes{', ' + comp if comp else ''})  {short(repr(preview), 80)}{'…' if len(body) > 64 else ''}")
    return "\n".join(lines)


#: characters of a property value a text view shows (a 9,000-character value is cut)
PROPERTY_WIDTH = 120


def decompressed_body(rec: Record) -> bytes:
    """The body as the consumer gets it (Java ``MessageDecoder.decode`` with
    ``deCompressBody``): ZLIB inflated here; LZ4 and ZSTD need their libraries."""
    comp = compression_of(rec.sys_flag)
    if comp is None:
        return rec.body
    if comp != "ZLIB":
        raise ImportError(f"{comp} bodies need the {comp.lower()} library, which rmqlab does not install")
    try:
        return zlib.decompress(rec.body)
    except zlib.error as exc:
        raise ValueError(f"the body does not inflate as ZLIB ({exc})") from None
