"""The bulk decoder's CRC checks against the one-record parser: records with and
without Java's ``__CRC32#`` property, some with a damaged property CRC or body, in
batches large and small (each batch's candidates are found by an 8-byte compare
before the full check)."""

from __future__ import annotations

import pytest

from rmqlab.scan import decode as fd
from rmqlab.format import properties as props
from rmqlab.format.encode import encode_record
from rmqlab.format.record import BODY_CRC, PROPERTY_CRC, RecordError, decode_record

pytestmark = pytest.mark.usefixtures("decoder_path")


def _store(n: int, damage: dict[int, str]) -> bytes:
    out = bytearray()
    for i in range(n):
        pairs = {"UNIQ_KEY": f"K{i:08d}", "WAIT": "true"}
        if i % 7 == 3:  # a value that ends like the property name, without being it
            pairs["X"] = "__CRC32#"
        rec = bytearray(
            encode_record(
                topic=f"T{i % 3}".encode(), body=bytes((i + j) % 251 for j in range(20 + i % 300)),
                properties=props.encode(pairs), queue_offset=i, physical_offset=len(out), append_prop_crc=i % 4 == 0,
            )
        )  # fmt: skip
        if damage.get(i) == "prop":
            rec[-3] = ord("0") + (rec[-3] - ord("0") + 1) % 10  # a digit of the stored CRC
        elif damage.get(i) == "body":
            rec[100] ^= 0xFF
        out += rec
    return bytes(out)


def _expected_kinds(buf: bytes) -> list[str]:
    kinds, pos = [], 0
    while pos < len(buf):
        rec = decode_record(memoryview(buf), pos, check_crc=True)
        kinds.append("MESSAGE" if rec.crc_ok else (BODY_CRC if not rec.body_crc_ok else PROPERTY_CRC))
        pos += rec.total_size
    return kinds


@pytest.mark.parametrize("batch_rows", [1, 7, 1 << 15])
def test_crc_kinds_equal_record_parser(batch_rows):
    buf = _store(120, {8: "prop", 9: "body", 40: "prop", 44: "prop", 77: "body"})
    want = _expected_kinds(buf)
    assert want.count(PROPERTY_CRC) == 3 and want.count(BODY_CRC) == 2
    rows = [r for b in fd.decode_file(buf, 0, mode="lenient", batch_rows=batch_rows) for r in b.to_pylist()]
    assert [r["kind"] for r in rows] == want
    assert [r["crc_ok"] for r in rows] == [k == "MESSAGE" for k in want]


def test_strict_mode_names_the_property_crc():
    buf = _store(30, {12: "prop"})
    with pytest.raises(RecordError) as err:
        for _ in fd.decode_file(buf, 0):
            pass
    assert err.value.kind == PROPERTY_CRC
