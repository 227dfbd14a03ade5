"""The one door through which construct parses store bytes.

Every schema parse goes through :func:`parse_at`, which turns ``construct``'s errors
into :class:`~rmqlab.errors.StoreFormatError` carrying the file and the byte offset.
Compiled parsers are never used here: they skip checks, and these bytes may be damaged.
"""

from __future__ import annotations

from construct import Construct, ConstructError

from ..errors import StoreFormatError


def parse_at(schema: Construct, data, offset: int = 0, length: int | None = None, *, file: str = "<bytes>", what: str = ""):
    """Parse ``schema`` from ``data[offset:offset+length]``; errors name ``file`` and ``offset``.

    ``length`` bounds the slice (so a lying length field inside cannot read past the
    record); without it the schema's fixed size is used, or the rest of ``data``.
    """
    if length is None:
        try:
            length = schema.sizeof()
        except ConstructError:
            length = len(data) - offset
    if offset < 0 or offset + length > len(data):
        raise StoreFormatError(
            file, offset, f"{what or 'structure'} needs {length} bytes but only {max(0, len(data) - offset)} are left"
        )
    try:
        return schema.parse(bytes(data[offset : offset + length]))
    except ConstructError as exc:
        # construct reports positions inside the slice as "(parsing) -> field"; keep its words
        raise StoreFormatError(file, offset, f"cannot parse {what or 'structure'}: {exc}") from None


def field_offset(schema: Construct, name: str) -> int:
    """Where field ``name`` of a fixed-size ``Struct`` starts: the sizes of the fields
    before it (so a finding can name the byte of a header field without spelling it)."""
    at = 0
    for sub in schema.subcons:
        if sub.name == name:
            return at
        at += sub.sizeof()
    raise KeyError(f"{name!r} is not a field of this schema")
