"""Consumer offsets, read side: ``config/consumerOffset.json`` (Java ``ConsumerOffsetManager``).

The broker persists, per ``topic@group``, the committed offset of each queue: the queue
offset of the next message the group will consume.  The file is fastjson's rendering
of the manager (``ConfigManager.persist`` → ``RemotingSerializable.toJson``)::

    {
        "dataVersion":{"counter":12,"stateVersion":0,"timestamp":1767261600000},
        "offsetTable":{
            "Orders@billing":{0:12,1:9,2:14,3:11}
        },
        ...
    }

Two things are not plain JSON: the queue ids are ``Integer`` map keys, which fastjson
writes unquoted; and ``ConfigManager`` keeps the previous file as ``.bak`` and writes
the new one to ``.tmp`` first (``MixAll.string2File``: write ``.tmp``, copy the old
file to ``.bak``, rename ``.tmp``).  RocketMQ's ``ConfigManager.load`` reads the file
and falls back to ``.bak`` when it is missing or cannot be decoded; a ``.tmp`` left
behind is a persist a crash interrupted.  Nothing here writes.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreFormatError
from ..rules import CONFIG_DIR

#: Java BrokerPathConfigHelper.getConsumerOffsetPath: STORE/config/consumerOffset.json
CONSUMER_OFFSET_FILE = "consumerOffset.json"
#: Java ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR
TOPIC_GROUP_SEPARATOR = "@"

# a map key fastjson leaves unquoted: an integer right after '{' or ',' and before ':'
_BARE_KEY = re.compile(r'([{,]\s*)(-?\d+)(\s*:)')


def parse_fastjson(text: str, path: str | os.PathLike = "<json>") -> dict:
    """fastjson's output as Python values: unquoted integer map keys become strings
    (strings are left alone: a key is only quoted outside them)."""
    out, pos = [], 0
    # quote bare keys only outside string literals
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"', text):
        out.append(_BARE_KEY.sub(r'\1"\2"\3', text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_BARE_KEY.sub(r'\1"\2"\3', text[pos:]))
    try:
        return json.loads("".join(out))
    except json.JSONDecodeError as exc:
        raise StoreFormatError(path, exc.pos, f"not a JSON document fastjson wrote: {exc.msg}") from None


@dataclass
class ConsumerOffsets:
    """``offsetTable`` of a consumerOffset.json: ``(topic, group) -> {queue id: offset}``,
    and where it was read from and what the files around it say."""

    table: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    source: str | None = None  # the file the table came from (None: no offsets file)
    data_version: dict | None = None
    notes: list[str] = field(default_factory=list)  # a torn or divergent .tmp/.bak, a fallback

    def groups(self) -> list[str]:
        return sorted({g for _, g in self.table})

    def committed(self, group: str, topic: str, queue_id: int) -> int | None:
        """Java ``ConsumerOffsetManager.queryOffset`` (None where Java answers -1)."""
        return self.table.get((topic, group), {}).get(queue_id)


def _read_table(path: Path) -> tuple[dict, dict | None]:
    doc = parse_fastjson(path.read_text(encoding="utf-8"), path)
    if not isinstance(doc, dict):
        raise StoreFormatError(path, 0, "the document is not a JSON object")
    table: dict[tuple[str, str], dict[int, int]] = {}
    raw = doc.get("offsetTable") or {}
    if not isinstance(raw, dict):
        raise StoreFormatError(path, None, "offsetTable is not an object")
    for key, queues in raw.items():
        topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
        if not sep or not isinstance(queues, dict):
            continue  # Java's scans split on '@' and skip such keys too
        try:
            table[(topic, group)] = {int(q): int(o) for q, o in queues.items()}
        except (TypeError, ValueError):
            raise StoreFormatError(path, None, f"offsetTable[{key!r}] holds a queue id or offset that is not an integer") from None
    return table, doc.get("dataVersion")


def read_consumer_offsets(root: str | os.PathLike) -> ConsumerOffsets:
    """The committed offsets of a store root as RocketMQ loads them (Java
    ``ConfigManager.load``: the file, else its ``.bak``), with notes on a ``.tmp`` a
    crash left and on a ``.bak`` that differs from the file."""
    path = Path(root) / CONFIG_DIR / CONSUMER_OFFSET_FILE
    bak, tmp = path.with_name(path.name + ".bak"), path.with_name(path.name + ".tmp")
    out = ConsumerOffsets()
    main_err = None
    if path.exists():
        try:
            out.table, out.data_version = _read_table(path)
            out.source = str(path)
        except StoreFormatError as err:
            main_err = err
    if out.source is None and bak.exists():
        try:
            out.table, out.data_version = _read_table(bak)
            out.source = str(bak)
            out.notes.append(f"{path.name} " + (f"cannot be read ({main_err}); " if main_err else "is missing; ") + f"RocketMQ loads {bak.name}, as read here")
        except StoreFormatError as err:
            out.notes.append(f"{bak.name} cannot be read either: {err}")
    if out.source is None and main_err is not None:
        raise main_err
    if tmp.exists():
        try:
            t, _ = _read_table(tmp)
            same = t == out.table
            out.notes.append(f"{tmp.name} is left over (a persist a crash interrupted); it " + ("holds the same offsets" if same else "differs from the offsets RocketMQ loads"))
        except StoreFormatError as err:
            out.notes.append(f"{tmp.name} is left over and torn ({err}): a persist a crash interrupted; RocketMQ ignores it")
    if out.source == str(path) and bak.exists():
        try:
            b, _ = _read_table(bak)
            if b != out.table:
                moved = sum(1 for k in set(b) | set(out.table) for q in set(b.get(k, {})) | set(out.table.get(k, {})) if b.get(k, {}).get(q) != out.table.get(k, {}).get(q))
                out.notes.append(f"{bak.name} (the previous persist) differs in {moved} committed offset(s)")
        except StoreFormatError as err:
            out.notes.append(f"{bak.name} cannot be read ({err}); RocketMQ would have nothing to fall back to")
    return out
