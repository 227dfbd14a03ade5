"""Shared fixtures: the reference stores written by Apache RocketMQ, and copies of them."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REFERENCE = FIXTURES / "reference-stores"
UNDAMAGED = ["clean", "crash", "v2ipv6"]
DAMAGED = ["crash-torn", "crash-cqdeleted"]
ALL_CASES = UNDAMAGED + DAMAGED


def reference_case(name: str) -> Path:
    return REFERENCE / name


def load_json(case: str, name: str) -> dict:
    return json.loads((REFERENCE / case / name).read_text())


@pytest.fixture(scope="session")
def dumps() -> dict[str, dict]:
    """``dump.json`` of every case: what RocketMQ itself read back."""
    return {c: load_json(c, "dump.json") for c in ALL_CASES}


@pytest.fixture(scope="session")
def manifests() -> dict[str, dict]:
    """``manifest.json`` of every case: what was put and what the store answered."""
    return {c: load_json(c, "manifest.json") for c in ALL_CASES}


def copy_store(case: str, dest: Path) -> Path:
    """A writable copy of a reference case's ``store/`` (evidence stays untouched)."""
    target = dest / case
    shutil.copytree(REFERENCE / case / "store", target)
    for p in [target, *target.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return target


@pytest.fixture
def store_copy(tmp_path):
    """``store_copy("crash")`` → path of a fresh writable copy of that case's store."""
    return lambda case: copy_store(case, tmp_path)
