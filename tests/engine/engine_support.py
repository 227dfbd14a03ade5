"""Helpers for the engine tests: the reference stores' configs and records."""

from __future__ import annotations

import json
from pathlib import Path

from rmqlab.config import MessageStoreConfig
from rmqlab.store.reader import open_store

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "reference-stores"


def reference_config(case: str) -> MessageStoreConfig:
    """The settings RocketMQ used for ``case`` (its ``config.json``)."""
    values = json.loads((REFERENCE / case / "config.json").read_text())["storeConfig"]
    return MessageStoreConfig.from_mapping(values)


def reference_records(case: str):
    """Every MESSAGE record of the case's commitlog, as RocketMQ wrote it."""
    with open_store(REFERENCE / case / "store", reference_config(case)) as st:
        return [r for r in st.commitlog.walk() if not r.is_blank]


def store_files(root: Path, sub: str) -> dict[str, bytes]:
    base = root / sub
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


