"""Every acceptance path says the same of a damaged log: which records RocketMQ's
``checkMessageAndReturnSize`` accepts, where the walk stops, and why.

The paths: the one-record decoder (:func:`rmqlab.format.record.decode_record`,
walked record by record as ``verify`` and ``salvage`` walk), the bulk decoder
(:func:`rmqlab.scan.decode.scan_range`, lenient: the first row that is not a message is
the stop), and recovery's pass (:func:`rmqlab.scan.acceptance.scan_file`), vectorised as on a small
file and compiled as on a large one.  Each case
is one commitlog file of a store RocketMQ wrote, damaged one seeded way: bit flips, a
zeroed 4 KiB page, a cut, or a lying length field (totalSize, bodyLength, topic or
properties length).  Every disagreement is collected and shown with its seed.
"""

from __future__ import annotations

import random
import struct

import pytest

from rmqlab.files import MappedFileQueue
from rmqlab.format import layout
from rmqlab.format.record import BODY_CRC, PROPERTY_CRC, RecordError, decode_record
from rmqlab.scan import acceptance
from rmqlab.scan import decode as bulk
from tests.support import REFERENCE

CASES_PER_KIND = 750
KINDS = ("flip", "zero_page", "cut", "lying_length")


def _files():
    out = []
    for case in ("crash", "v2ipv6", "crash-torn"):
        q = MappedFileQueue(REFERENCE / case / "store" / "commitlog")
        out += [(f"{case}/{f.path.name}", bytes(f.buf)) for f in q.files]
        q.close()
    return out


def _starts(data: bytes) -> list[int]:
    return acceptance.scan_file(data, check_crc=False).starts.tolist()


def _damage(data: bytes, kind: str, rng: random.Random) -> bytes:
    b = bytearray(data)
    starts = _starts(data) or [0]
    if kind == "flip":
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(min(len(b), starts[-1] + 512))
            b[at] ^= 1 << rng.randrange(8)
    elif kind == "zero_page":
        page = rng.randrange(max(1, min(len(b), starts[-1] + 1) // 4096 + 1))
        b[page * 4096 : page * 4096 + 4096] = bytes(len(b[page * 4096 : page * 4096 + 4096]))
    elif kind == "cut":
        del b[rng.randrange(1, min(len(b), starts[-1] + 600)) :]
    else:  # a length field that lies, with its neighbours intact
        pos = rng.choice(starts)
        sys_flag = struct.unpack_from(">i", b, pos + layout.SYS_FLAG_AT)[0]
        blp = pos + int(layout.LEN_BODY_AT[layout.host_kind(sys_flag)])
        body_len = struct.unpack_from(">i", b, blp)[0]
        v2 = struct.unpack_from(">I", b, pos + layout.MAGIC_AT)[0] != 0xDAA320A7  # not a layout  (V1's magic: V2 reads its topic length as 2 bytes)
        tl_at = blp + 4 + max(body_len, 0)
        field = rng.choice(["total", "body", "topic", "props"])
        value = rng.choice([-1, 0, 1, 7, 1 << 20, rng.randrange(-(1 << 31), 1 << 31)])
        if field == "total":
            struct.pack_into(">i", b, pos, value)
        elif field == "body":
            struct.pack_into(">i", b, blp, value)
        elif field == "topic" and tl_at + 2 <= len(b):
            struct.pack_into(">h" if v2 else ">b", b, tl_at, max(-128, min(127, value)) if not v2 else max(-32768, min(32767, value)))
        else:
            t_len = struct.unpack_from(">h" if v2 else ">b", b, tl_at)[0] if tl_at + 2 <= len(b) else 0
            pl_at = tl_at + (2 if v2 else 1) + max(t_len, 0)
            if pl_at + 2 <= len(b):
                struct.pack_into(">h", b, pl_at, max(-32768, min(32767, value)))
    return bytes(b)


def _by_decoder(data: bytes):
    """(accepted starts, stop position, why) walking decode_record with Java's rule."""
    pos, out = 0, []
    while True:
        try:
            rec = decode_record(data, pos, check_crc=True, read_body=False)
        except RecordError as err:
            return out, pos, err.kind
        if rec is None:
            return out, pos, "END"
        if rec.is_blank:
            return out, pos, "BLANK"
        if not rec.body_crc_ok:
            return out, pos, BODY_CRC
        out.append(pos)
        pos += rec.total_size


def _by_bulk(data: bytes):
    """The bulk decoder goes on past damage (lenient): its walk is the run of message
    rows from 0, each starting where the one before ends; the row after that run says
    why it ended (none, or one further on: the chain ran into zeros)."""
    out, pos = [], 0
    for batch in bulk.scan_range(data, mode="lenient", verify_crc=True, columns=("physical_offset", "total_size", "kind")):
        for off, size, kind in zip(*(batch.column(c).to_pylist() for c in ("physical_offset", "total_size", "kind"))):
            if off != pos:
                return out, pos, "END"
            # a property CRC that does not match is a finding, not a stop: RocketMQ's
            # recovery checks it only with forceVerifyPropCRC (scan_file's default is
            # off), as the decoder's walk above checks only the body CRC
            if kind not in (bulk.KIND_MESSAGE, PROPERTY_CRC):
                return out, off, kind
            out.append(off)
            pos = off + size
    return out, pos, "END"


def _by_recovery(data: bytes, compiled: bool = False):
    """Recovery's pass; ``compiled``: as on a large file, the walk, the CRCs and the
    whole rule in the compiled loops (kernels.walk, kernels.accept)."""
    before = acceptance.KERNEL_FROM
    acceptance.KERNEL_FROM = 0 if compiled else 1 << 62
    try:
        s = acceptance.scan_file(data, check_crc=True)
    finally:
        acceptance.KERNEL_FROM = before
    why = "BLANK" if s.blank else (s.stop.kind if s.stop is not None and not s.stop.ok else "END")
    return s.starts.tolist(), s.end, why


def _kind(data: bytes, stop: tuple[int, str]) -> str:
    """One vocabulary for why a walk stopped: the end of the data, a BLANK, or zeros
    where a record should start (decode_record's None; Java's illegal magic 0) are all
    the end of the log; damage keeps its kind."""
    at, why = stop
    if why in ("END", "BLANK") or not any(data[at : at + 8]):
        return "END"
    return why


@pytest.fixture(scope="module")
def files():
    return _files()


@pytest.mark.parametrize("kind", KINDS)
def test_every_acceptance_path_agrees_on_damaged_files(files, kind):
    rng = random.Random(f"acceptance-{kind}")
    differences = []
    for case in range(CASES_PER_KIND):
        name, data = files[rng.randrange(len(files))]
        seed = rng.randrange(1 << 30)
        damaged = _damage(data, kind, random.Random(seed))
        d = _by_decoder(damaged)
        b = _by_bulk(damaged)
        r = _by_recovery(damaged)
        c = _by_recovery(damaged, compiled=True)
        if not (d[0] == b[0] == r[0] == c[0]):
            differences.append(f"{name} seed {seed}: accepted {len(d[0])} (decoder) / {len(b[0])} (bulk) / {len(r[0])} (recovery) / {len(c[0])} (compiled)")
            continue
        # where and why the walk stops
        stops = {"decoder": d[1:], "bulk": b[1:], "recovery": r[1:], "compiled": c[1:]}
        kinds = {k: _kind(damaged, v) for k, v in stops.items()}
        places = {k: v[0] for k, v in stops.items() if kinds[k] != "END"}
        if len(set(kinds.values())) > 1 or len(set(places.values())) > 1:
            differences.append(f"{name} seed {seed}: stops {stops}")
    assert not differences, f"{len(differences)} of {CASES_PER_KIND} {kind} cases differ:\n" + "\n".join(differences[:20])
