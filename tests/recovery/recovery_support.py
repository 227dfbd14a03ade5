"""Helpers for the recovery tests (imported by module name: ``conftest`` is ambiguous
when the whole suite runs, since several test folders have one)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "reference-stores"
ALL_CASES = ["clean", "crash", "v2ipv6", "crash-torn", "crash-cqdeleted"]


def copy_store(case: str, dest: Path) -> Path:
    """A writable copy of a reference case's ``store/`` (evidence stays untouched)."""
    target = Path(dest) / case
    shutil.copytree(REFERENCE / case / "store", target)
    for p in [target, *target.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return target
