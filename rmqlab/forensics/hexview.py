"""Hex views annotated field by field (``rmqlab hexdump``, the anatomy lesson).

Field positions come from the construct schemas themselves: :func:`field_spans`
parses a ``Struct`` one subcon at a time and notes where each starts and ends, so
the annotation can never disagree with the layout declared in :mod:`rmqlab.format`.
The kind of file is told by its directory (``commitlog/``, ``consumequeue/…``,
``index/``, ``timerlog/``, ``dledger-<id>/data/``) or name (``checkpoint``, ``timerwheel``, ``timercheck``).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

from construct import Container, StreamError, Struct

from .. import reprs
from ..rules import BATCH_CONSUMEQUEUE_DIR, CHECKPOINT_FILE, COMMITLOG_DIR, COMPACTION_CQ_DIR, COMPACTION_LOG_DIR, CONSUMEQUEUE_DIR, INDEX_DIR, TIMER_CHECK_FILE, TIMER_LOG_DIR, TIMER_WHEEL_FILE
from ..errors import StoreFormatError
from ..files import MappedFile
from ..format import commitlog as cl
from ..format.checkpoint import CheckpointV5
from ..format.consumequeue import BCQ_STORE_UNIT_SIZE, CQ_STORE_UNIT_SIZE, BatchConsumeQueueUnit, ConsumeQueueEntry
from ..format.indexfile import HASH_SLOT_SIZE, INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, IndexEntry, IndexHeader
from ..format.msgid import format_host
from ..format.properties import decode_pairs, decode_text
from ..format.record import RecordError, decode_record
from ..store.reader import infer_index_sizes


@dataclass(frozen=True, slots=True)
class FieldSpan:
    """Bytes ``[start, end)`` of a file hold field ``name`` (Java name in ``doc``).

    >>> from rmqlab.lab.samples import shipped_dir
    >>> HexView(shipped_dir() / "clean" / "commitlog" / "00000000000000000000", 0, 32).span_at(5)
    FieldSpan(start=4, end=8, name='magic', doc='Java magicCode', value='V1 0xDAA320A7', group='record @0', colour=1)
    """

    start: int
    end: int
    name: str
    doc: str
    value: str
    group: str  # which structure: "record @123", "entry 5", "header" ...
    colour: int = 0  # index into the palette: same field, same colour


def field_spans(schema: Struct, data: bytes, base: int, group: str) -> list[FieldSpan]:
    """Parse ``schema`` from ``data`` subcon by subcon; a span per top-level field.
    Should ``data`` end inside a field (a file cut short), that field's bytes get a
    span saying so, and the fields after it none."""
    stream = io.BytesIO(data)
    top = Container(_parsing=True, _building=False, _sizing=False, _params=Container(), _io=stream)
    ctx = Container(_=top, _params=top._params, _root=None, _parsing=True, _building=False, _sizing=False, _subcons=schema._subcons, _io=stream, _index=None)
    ctx._root = ctx
    spans = []
    for i, sc in enumerate(schema.subcons):
        start = stream.tell()
        try:
            value = sc._parsereport(stream, ctx, "(hexview)")
        except StreamError:
            if start < len(data):
                spans.append(FieldSpan(base + start, base + len(data), sc.name or "", sc.docs or "", f"cut short: the file ends {len(data) - start} bytes into it", group, 99))
            break
        if sc.name:
            ctx[sc.name] = value
        spans.append(FieldSpan(base + start, base + stream.tell(), sc.name or "", sc.docs or "", _show(sc.name, value, ctx), group, i))
    return spans


def java_label(span: FieldSpan) -> str:
    """The Java field name from the schema doc (``"Java bodyCRC: ..."`` → ``bodyCRC``)."""
    if span.doc.startswith("Java "):
        return span.doc[5:].split()[0].rstrip(":")
    return span.name


def _show(name: str | None, value, ctx) -> str:
    if isinstance(value, Container) and "address" in value:
        return format_host(value.address, value.port)
    if name == "magic" and "first_pos" in ctx:
        return f"{value} (unused)"
    if name == "magic" and "prev_pos" in ctx:
        from ..format.timer import magic_names

        return f"0x{value & 0xFFFFFFFF:08X} ({magic_names(value)})"
    if name == "magic" and "chain_crc" in ctx._subcons:  # a DLedger entry (DLedgerEntryCoder)
        return {1: "1 (DLedger MAGIC_1)", -1: "-1 (DLedger blank)"}.get(value, f"{value} (unknown)")
    if name == "magic":
        return {cl.MAGIC_V1: f"V1 0x{cl.MAGIC_V1:08X}", cl.MAGIC_V2: f"V2 0x{cl.MAGIC_V2:08X}", cl.MAGIC_BLANK: f"BLANK 0x{cl.MAGIC_BLANK:08X}"}.get(value, f"0x{value:08X} (unknown)")
    if name == "topic":
        return repr(decode_text(value))
    if name == "properties":
        return " ".join(f"{k}={v!r}" for k, v in decode_pairs(value)) or "(none)"
    if name == "body":
        return f"{len(value)} bytes" + (" (compressed: sysFlag COMPRESSED)" if ctx.get("sys_flag", 0) & cl.FLAG_COMPRESSED else "")
    if name == "sys_flag":
        return f"0x{value:X} ({' | '.join(cl.sys_flag_names(value))})"
    return str(value)


# -- per file kind ---------------------------------------------------------------------------
#: how far before the requested offset a record holding it can start: the largest
#: record RocketMQ writes (maxMessageSize 4 MiB of body plus headers and properties)
RESYNC_WINDOW = 4 * 1024 * 1024 + 64 * 1024


def first_boundary(buf, file_base: int, start: int) -> int:
    """A record boundary at or before ``start`` to walk from.

    Records chain from position 0, but walking 1 GiB to show its last page is slow.
    Far into a file, take the first position in the window before ``start`` that
    resynchronisation accepts (magic, self-recorded offset = file base + position,
    sizes that recompute); from there the walk is the file's own chain.
    """
    from ..scan.decode import is_valid_position
    from .salvage import find_magic_positions

    if start <= RESYNC_WINDOW:
        return 0
    for pos in find_magic_positions(buf, start - RESYNC_WINDOW, start + 1):
        if is_valid_position(buf, pos, file_base=file_base):
            return pos
    return 0


def commitlog_spans(buf, file_base: int, start: int, end: int, path: str) -> list[FieldSpan]:
    """Spans of every record overlapping ``[start, end)``; records are found by
    walking the chain from a boundary at or before ``start``."""
    spans: list[FieldSpan] = []
    pos = first_boundary(buf, file_base, start)
    while pos < len(buf) and pos < end:
        try:
            rec = decode_record(buf, pos, file=path, file_base=file_base, check_crc=False, read_body=False)
        except RecordError as err:
            spans.append(FieldSpan(pos, len(buf), "damaged", "", str(err), f"damage @{file_base + pos}", 99))
            break
        if rec is None:
            if pos < end:
                spans.append(FieldSpan(pos, len(buf), "zero tail", "", "end of the log: never written", "tail", 98))
            break
        size = rec.total_size
        if pos + size > start:
            group = f"record @{file_base + pos}"
            schema = cl.BlankRecord if rec.is_blank else cl.MessageRecord
            data = bytes(buf[pos : pos + (8 if rec.is_blank else size)])
            spans += field_spans(schema, data, pos, group)
            if rec.is_blank:
                spans.append(FieldSpan(pos + 8, len(buf), "blank filler", "", "unused to the end of the file", group, 97))
        if rec.is_blank:
            break
        pos += size
    return spans


def dledger_spans(buf, file_base: int, start: int, end: int) -> list[FieldSpan]:
    """Spans of every DLedger entry overlapping ``[start, end)`` of a data file: its
    48-byte header (``DLedgerEntryCoder``), then the commitlog record it wraps; entries
    are walked from the file's start as ``DLedgerMmapFileStore.recover`` walks them."""
    import struct

    from ..format import dledger as dl

    spans: list[FieldSpan] = []
    pos = 0
    while pos + 8 <= len(buf) and pos < end:
        magic, size = struct.unpack_from(">ii", buf, pos)
        if magic == dl.BLANK_MAGIC_CODE:
            spans.append(FieldSpan(pos, len(buf), "blank", "", f"DLedger blank (magic -1, {size} bytes): the next entry did not fit", f"entry blank @{file_base + pos}", 97))
            break
        if size == 0:
            spans.append(FieldSpan(pos, len(buf), "zero tail", "", "end of the log: never written", "tail", 98))
            break
        if size <= dl.ENTRY_HEADER_SIZE or pos + size > len(buf):
            spans.append(FieldSpan(pos, len(buf), "damaged", "", f"entry size {size} is not a DLedger entry here", f"damage @{file_base + pos}", 99))
            break
        if pos + size > start:
            group = f"entry @{file_base + pos}"
            spans += field_spans(dl.DLedgerEntryHeader, bytes(buf[pos : pos + dl.ENTRY_HEADER_SIZE]), pos, group)
            r = pos + dl.ENTRY_HEADER_SIZE
            try:
                rec = decode_record(buf, r, file="", file_base=file_base, check_crc=False, read_body=False)
            except RecordError as err:
                rec = None
                spans.append(FieldSpan(r, pos + size, "damaged", "", str(err), f"record @{file_base + r}", 99))
            if rec is not None and not rec.is_blank:
                spans += field_spans(cl.MessageRecord, bytes(buf[r : r + min(rec.total_size, size - dl.ENTRY_HEADER_SIZE)]), r, f"record @{file_base + r}")
        pos += size
    return spans


def consumequeue_spans(buf, start: int, end: int, file_base: int = 0, *, batch: bool = False) -> list[FieldSpan]:
    """Each unit's fields, grouped as ``unit n (queue offset q)``: ``file_base`` is the
    file's name (the byte offset of its first unit in the queue).  ``batch``: 46-byte
    batch-queue units (``BatchConsumeQueue``), whose queue offset is their msgBaseOffset."""
    schema, size = (BatchConsumeQueueUnit, BCQ_STORE_UNIT_SIZE) if batch else (ConsumeQueueEntry, CQ_STORE_UNIT_SIZE)
    spans = []
    # every entry starting before the end of the view, a last one cut short included
    for n in range(start // size, -(-min(len(buf), end) // size)):
        p = n * size
        group = f"unit {n}" if batch else f"unit {n} (queue offset {(file_base + p) // size})"
        spans += field_spans(schema, bytes(buf[p : p + size]), p, group)
    return spans


def index_spans(buf, max_hash_slot_num: int, start: int, end: int) -> list[FieldSpan]:
    spans = []
    if start < INDEX_HEADER_SIZE:
        spans += field_spans(IndexHeader, bytes(buf[:INDEX_HEADER_SIZE]), 0, "header")
    slots_end = INDEX_HEADER_SIZE + max_hash_slot_num * HASH_SLOT_SIZE
    for p in range(max(INDEX_HEADER_SIZE, start - start % 4), min(end, slots_end), HASH_SLOT_SIZE):
        slot = (p - INDEX_HEADER_SIZE) // HASH_SLOT_SIZE
        if p + HASH_SLOT_SIZE > len(buf):
            spans.append(FieldSpan(p, len(buf), f"slot[{slot}]", "hash slot: newest entry number", f"cut short: the file ends {len(buf) - p} bytes into it", f"slot {slot}", 99))
            break
        v = int.from_bytes(buf[p : p + 4], "big", signed=True)
        spans.append(FieldSpan(p, p + 4, f"slot[{slot}]", "hash slot: newest entry number", str(v), f"slot {slot}", 0))
    if end > slots_end:
        first = max(0, (start - slots_end) // INDEX_ENTRY_SIZE)
        # a last entry cut short included
        last = -(-(min(len(buf), end) - slots_end) // INDEX_ENTRY_SIZE)
        for n in range(first, last):
            p = slots_end + n * INDEX_ENTRY_SIZE
            spans += field_spans(IndexEntry, bytes(buf[p : p + INDEX_ENTRY_SIZE]), p, f"entry {n}")
    return spans


def checkpoint_spans(buf) -> list[FieldSpan]:
    return field_spans(CheckpointV5, bytes(buf[: CheckpointV5.sizeof()]), 0, "checkpoint")


def timerwheel_spans(buf, start: int, end: int) -> list[FieldSpan]:
    """Each slot's fields (Java ``Slot``), grouped ``slot i``; only the slots in view
    (the wheel is 37 MiB)."""
    from ..format.timer import SLOT_SIZE, TimerWheelSlot

    spans = []
    for n in range(start // SLOT_SIZE, -(-min(len(buf), end) // SLOT_SIZE)):
        p = n * SLOT_SIZE
        spans += field_spans(TimerWheelSlot, bytes(buf[p : p + SLOT_SIZE]), p, f"slot {n}")
    return spans


def timerlog_spans(buf, start: int, end: int, file_base: int = 0) -> list[FieldSpan]:
    """Each 52-byte unit (Java ``TimerLog``), grouped ``unit at <timer-log position>``;
    a file's closing blank is shown by its size and magic."""
    from ..format.timer import UNIT_SIZE, TimerLogUnit

    spans = []
    for n in range(start // UNIT_SIZE, -(-min(len(buf), end) // UNIT_SIZE)):
        p = n * UNIT_SIZE
        spans += field_spans(TimerLogUnit, bytes(buf[p : p + UNIT_SIZE]), p, f"unit at {file_base + p}")
    return spans


def timercheck_spans(buf) -> list[FieldSpan]:
    from ..format.timer import TimerCheck

    return field_spans(TimerCheck, bytes(buf[: TimerCheck.sizeof()]), 0, "timer checkpoint")


def file_kind(path: Path) -> str:
    parts = path.parts
    if path.name == CHECKPOINT_FILE:
        return "checkpoint"
    if path.name == TIMER_WHEEL_FILE:
        return "timerwheel"
    if path.name == TIMER_CHECK_FILE:
        return "timercheck"
    if len(parts) >= 2 and parts[-2] == TIMER_LOG_DIR:
        return "timerlog"
    if len(parts) >= 2 and parts[-2] == COMMITLOG_DIR:
        return "commitlog"
    if len(parts) >= 3 and parts[-2] == "data" and parts[-3].startswith("dledger-"):
        return "dledger"
    if len(parts) >= 4 and parts[-4] == CONSUMEQUEUE_DIR:
        return "consumequeue"
    if len(parts) >= 4 and parts[-4] in (BATCH_CONSUMEQUEUE_DIR, COMPACTION_CQ_DIR):
        return "batchconsumequeue"
    if len(parts) >= 4 and parts[-4] == COMPACTION_LOG_DIR:
        return "commitlog"  # a compaction log's records are commitlog records
    if len(parts) >= 2 and parts[-2] == INDEX_DIR:
        return "index"
    return "raw"


#: groups whose first field starts a "── group ──" note: one per record, unit, entry
_NUMBERED = ("record", "unit", "entry", "slot")


class HexView:
    """``length`` bytes of ``path`` from ``offset``, with the field spans over them
    (the kind of file told from its path: commitlog, consume queue, index, checkpoint,
    timer files); ``to_text()`` is what ``rmqlab hexdump`` prints.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> view = HexView(shipped_dir() / "clean" / "commitlog" / "00000000000000000000", 0, 32)
    >>> print(view.to_text())
    0000000000000000: 0000 00ff daa3 20a7 1b9e 703d 0000 0001  ...... ...p=....  ── record @0 ── | totalSize=255 | magicCode=V1 0xDAA320A7 | bodyCRC=463368253 | queueId=1
    0000000000000010: 0000 0000 0000 0000 0000 0000 0000 0000  ................  flag=0 | queueOffset=0 | physicalOffset=0
    """

    def __init__(self, path: str | os.PathLike, offset: int = 0, length: int = 256, *, kind: str | None = None, max_hash_slot_num: int | None = None):
        self.path = Path(path)
        mf = MappedFile(self.path)
        buf = mf.buf
        if offset < 0 or offset > len(buf):
            raise StoreFormatError(self.path, offset, f"offset is outside the {len(buf)}-byte file")
        self.offset = offset
        self.file_size = len(buf)
        self.end = min(len(buf), offset + max(0, length))
        self.data = bytes(buf[self.offset : self.end])
        self.kind = kind or file_kind(self.path)
        if self.kind == "commitlog":
            base = int(self.path.name) if self.path.name.isdigit() else 0
            self.spans = commitlog_spans(buf, base, self.offset, self.end, str(self.path))
        elif self.kind == "dledger":
            self.spans = dledger_spans(buf, int(self.path.name) if self.path.name.isdigit() else 0, self.offset, self.end)
        elif self.kind in ("consumequeue", "batchconsumequeue"):
            self.spans = consumequeue_spans(buf, self.offset, self.end, int(self.path.name) if self.path.name.isdigit() else 0, batch=self.kind == "batchconsumequeue")
        elif self.kind == "index":
            slots = max_hash_slot_num or infer_index_sizes(len(buf), self.path, hint="pass --max-hash-slot-num")[0]
            self.spans = index_spans(buf, slots, self.offset, self.end)
        elif self.kind == "checkpoint":
            self.spans = checkpoint_spans(buf)
        elif self.kind == "timerwheel":
            self.spans = timerwheel_spans(buf, self.offset, self.end)
        elif self.kind == "timerlog":
            self.spans = timerlog_spans(buf, self.offset, self.end, int(self.path.name) if self.path.name.isdigit() else 0)
        elif self.kind == "timercheck":
            self.spans = timercheck_spans(buf)
        else:
            self.spans = []
        self.spans = [s for s in self.spans if s.end > self.offset and s.start < self.end]
        mf.close()

    def span_at(self, pos: int) -> FieldSpan | None:
        for s in self.spans:
            if s.start <= pos < s.end:
                return s
        return None

    # -- text --------------------------------------------------------------------------
    def to_text(self, width: int = 16) -> str:
        if self.end <= self.offset:  # an empty file, or the view starts at its end
            return f"{self.path}: no bytes from offset {self.offset} (the file is {self.file_size} bytes long)"
        lines = []
        starts = {}
        firsts, group = set(), None  # the first field of each record, unit or entry
        for s in self.spans:
            starts.setdefault(max(s.start, self.offset), []).append(s)
            if s.group != group and s.group.startswith(_NUMBERED):
                firsts.add(id(s))
            group = s.group
        pos = self.offset - self.offset % width
        while pos < self.end:
            chunk_lo, chunk_hi = max(pos, self.offset), min(pos + width, self.end)
            hexes, text = [], []
            for p in range(pos, pos + width):
                if chunk_lo <= p < chunk_hi:
                    b = self.data[p - self.offset]
                    hexes.append(f"{b:02x}")
                    text.append(chr(b) if 32 <= b < 127 else ".")
                else:
                    hexes.append("  ")
                    text.append(" ")
            notes = []
            for p in range(chunk_lo, chunk_hi):
                for s in starts.get(p, []):
                    if id(s) in firsts:
                        notes.append(f"── {s.group} ──")
                    value = s.value if len(s.value) <= 60 else s.value[:59] + "…"
                    notes.append(f"{java_label(s)}={value}")
            grouped = " ".join("".join(hexes[i : i + 2]) for i in range(0, width, 2))
            lines.append(f"{pos:016x}: {grouped}  {''.join(text)}  {' | '.join(notes)}".rstrip())
            pos += width
        return "\n".join(lines)

    # -- notebook ----------------------------------------------------------------------
    def _repr_html_(self) -> str:
        return reprs.html("hexview", self)

