"""Test support shared by every test module: where the reference stores are, and how
to copy one.  Import it as ``from tests.support import ...`` (pytest puts the project
root on ``sys.path``; ``conftest`` modules are not importable by name reliably, since
several directories have one)."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

from rmqlab.lab.lessons import LESSONS_DIR
from rmqlab.lab.samples import reference_dir, shipped_dir

#: stores written by Apache RocketMQ 5.3.3 (copied from shared/reference-stores), shipped
#: in the package for the lessons that compare with them
REFERENCE = reference_dir()
#: the sample stores as shipped (clean/, crashed/, damaged/)
SAMPLES = shipped_dir()
#: the eleven lessons, as shipped
LESSONS = LESSONS_DIR
UNDAMAGED = ["clean", "crash", "v2ipv6"]
DAMAGED = ["crash-torn", "crash-cqdeleted"]
ALL_CASES = UNDAMAGED + DAMAGED


def load_json(case: str, name: str) -> dict:
    return json.loads((REFERENCE / case / name).read_text())


def copy_store(case: str, dest: str | Path) -> Path:
    """A writable copy of a reference case's ``store/`` under ``dest`` (evidence stays untouched)."""
    target = Path(dest) / case
    shutil.copytree(REFERENCE / case / "store", target)
    for p in [target, *target.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return target
