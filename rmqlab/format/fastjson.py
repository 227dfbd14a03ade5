"""fastjson's JSON, as RocketMQ's broker writes its ``config/*.json``.

RocketMQ serialises its config managers with fastjson (``RemotingSerializable.toJson``),
which writes ``Integer`` map keys without quotes (``{"offsetTable":{"TopicA@g":{0:12,1:3}}}``):
not JSON that a plain parser takes.  Both directions live here, for the readers
(``rmqlab.store.metadata``) and the writers (``rmqlab.writers.metadata``) alike.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..errors import StoreFormatError

# a map key fastjson leaves unquoted: an integer right after '{' or ',' and before ':'
_BARE_KEY = re.compile(r'([{,]\s*)(-?\d+)(\s*:)')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def parse_fastjson(text: str, path: str | os.PathLike = "<json>") -> Any:
    """fastjson's output as Python values: unquoted integer map keys become strings
    (strings are left alone: a key is only quoted outside them).  A document that
    cannot be read raises :class:`StoreFormatError` naming ``path`` and the character."""
    out, pos = [], 0
    for m in _STRING.finditer(text):
        out.append(_BARE_KEY.sub(r'\1"\2"\3', text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_BARE_KEY.sub(r'\1"\2"\3', text[pos:]))
    try:
        return json.loads("".join(out))
    except json.JSONDecodeError as exc:
        raise StoreFormatError(path, exc.pos, f"not a JSON document fastjson wrote: {exc.msg}") from None


def to_fastjson(obj: Any) -> str:
    """JSON with integer map keys unquoted, as fastjson writes ``Map<Integer, …>``."""
    if isinstance(obj, dict):
        parts = []
        for k, v in obj.items():
            key = str(k) if isinstance(k, int) and not isinstance(k, bool) else json.dumps(str(k), ensure_ascii=False)
            parts.append(f"{key}:{to_fastjson(v)}")
        return "{" + ",".join(parts) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(to_fastjson(v) for v in obj) + "]"
    return json.dumps(obj, ensure_ascii=False)
