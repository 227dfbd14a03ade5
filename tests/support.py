"""Test support shared by every test module: where the reference stores are, and how
to copy one.  Import it as ``from tests.support import ...`` (pytest puts the project
root on ``sys.path``; ``conftest`` modules are not importable by name reliably, since
several directories have one)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import stat
import subprocess
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


def run_rmqlab(*argv) -> subprocess.CompletedProcess:
    """``rmqlab ARGV`` run in this process (:func:`rmqlab.cli.main`, what the console
    script runs), answered as a finished process: its exit status and what it printed.
    The checks are a subprocess's (an exception not turned into a refusal fails the test
    here) without an interpreter and its imports per call (~0.7 s of CPU each); the tests
    of the program itself (its start-up, a closed pipe, signals) run it as a process."""
    from rmqlab.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse: --help, --version, a usage error
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())
