"""rmqlab as a user gets it: the sdist and wheel this repository builds (``python -m
build``), the wheel installed into a new virtual environment in a temporary folder with
no source tree on its path, and there the demo, the lessons, one lesson under nbval, the
samples in the per-user data folder, and ``--help``.

The environment installs from the package index as ``pip install`` does (pip's cache
makes it quick once ``make`` has installed the same packages).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SANITIZE = ROOT / "tests" / "notebooks" / "nbval_sanitize.cfg"

pytestmark = pytest.mark.slow


def _run(cmd, *, cwd, env, timeout=600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv bin dir, a clean environment, the folder a user works in, dist dir)."""
    base = tmp_path_factory.mktemp("install")
    dist = base / "dist"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    _run([sys.executable, "-m", "build", "--outdir", dist, ROOT], cwd=base, env=env)
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=base, env=env)
    wheel = next(dist.glob("rmqlab-*.whl"))
    # the notebook extra and nbval: what a learner installs to run a lesson (without
    # byte-compiling every module of JupyterLab's ~100 packages up front: the tests import
    # a few of them, which Python compiles as it imports; 26 s instead of 41 s here)
    _run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-compile", f"{wheel}[notebook]", "nbval"], cwd=base, env=env)
    home = base / "home"
    work = home / "work"
    work.mkdir(parents=True)
    env = dict(env, HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    return venv / "bin", env, work, dist


def test_the_sdist_and_wheel_carry_the_lessons_and_pass_twine(installed):
    _, env, _, dist = installed
    wheel = next(dist.glob("rmqlab-*.whl"))
    sdist = next(dist.glob("rmqlab-*.tar.gz"))
    names = zipfile.ZipFile(wheel).namelist()
    assert sum(n.startswith("rmqlab/lessons/") and n.endswith(".ipynb") for n in names) == 11
    assert "rmqlab/lessons/stores/damaged/damage.json" in names
    assert any(n.startswith("rmqlab/lessons/stores/reference/crash-torn/store/commitlog/") for n in names)
    assert any(n.endswith("/licenses/LICENSE") for n in names)
    # the stores other writers wrote, as one archive the build packed (setup.py); not the test tree
    assert "rmqlab/lessons/stores/other-writers.tar.gz" in names and not any(n.startswith("tests/") for n in names)
    members = tarfile.open(sdist).getnames()
    assert any(m.endswith("/LICENSE") for m in members) and any(m.endswith("rmqlab/engine/_put.c") for m in members)
    assert any(m.endswith("notebooks/09_forensics.ipynb") for m in members) and any(m.endswith("sample_stores/damaged/damage.json") for m in members)
    done = _run([sys.executable, "-m", "twine", "check", "--strict", wheel, sdist], cwd=dist, env=env)
    assert done.stdout.count("PASSED") == 2


def test_rmqlab_is_imported_from_the_environment_not_the_checkout(installed):
    bin_, env, work, _ = installed
    where = _run([bin_ / "python", "-c", "import rmqlab; print(rmqlab.__file__)"], cwd=work, env=env).stdout.strip()
    assert "site-packages" in where and not where.startswith(str(ROOT))


def test_help_lists_every_command(installed):
    from rmqlab.cli import COMMANDS

    bin_, env, work, _ = installed
    out = _run([bin_ / "rmqlab", "--help"], cwd=work, env=env).stdout
    for name in COMMANDS:
        assert re.search(rf"^\s+{name}\s", out, re.M), name


def test_the_demo_runs_from_any_folder(installed):
    bin_, env, work, _ = installed
    here = work / "demo"
    here.mkdir()
    done = _run([bin_ / "rmqlab", "demo"], cwd=here, env=env, timeout=300)
    assert [int(n) for n in re.findall(r"^ (\d+)\. ", done.stdout, re.M)] == list(range(1, 8))
    assert "abnormal recovery" in done.stdout and "BODY_CRC" in done.stdout
    assert list(here.iterdir()) == []  # nothing left where the user stood


def test_samples_go_to_the_users_data_folder(installed):
    bin_, env, work, _ = installed
    _run([bin_ / "rmqlab", "samples"], cwd=work, env=env, timeout=300)
    data = Path(env["XDG_DATA_HOME"]) / "rmqlab" / "samples"
    assert all((data / name / "commitlog").is_dir() for name in ("clean", "crashed", "damaged"))
    # the same bytes as the copy the package ships
    site = Path(_run([bin_ / "python", "-c", "import rmqlab, os; print(os.path.dirname(rmqlab.__file__))"], cwd=work, env=env).stdout.strip())
    shipped = site / "lessons" / "stores" / "damaged" / "commitlog"
    for f in shipped.iterdir():
        assert (data / "damaged" / "commitlog" / f.name).read_bytes() == f.read_bytes()
    # and beside them the stores rocketmq-rust wrote, out of the wheel's archive, as the checkout holds them
    for case in ("clean", "killed", "timers"):
        theirs = ROOT / "tests" / "stores" / "rocketmq-rust" / case / "store"
        for f in (p for p in theirs.rglob("*") if p.is_file() and p.stat().st_size < 1 << 20):
            assert (data / "rocketmq-rust" / case / f.relative_to(theirs)).read_bytes() == f.read_bytes(), f


def test_the_lessons_copy_out_and_one_runs_under_nbval(installed):
    bin_, env, work, _ = installed
    out = _run([bin_ / "rmqlab", "lab", "--copy-only"], cwd=work, env=env).stdout
    lessons = work / "rmqlab-lessons"
    assert "11 lessons" in out and len(list(lessons.glob("[0-9][0-9]_*.ipynb"))) == 11
    # lesson 5 reads a sample store and one RocketMQ wrote, both relative to itself
    done = _run([bin_ / "python", "-m", "pytest", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env", "--nbval-sanitize-with", SANITIZE,
                 "-q", lessons / "05_hash_chains.ipynb"], cwd=lessons, env=env)
    assert re.search(r"\b\d+ passed\b", done.stdout) and "failed" not in done.stdout


def test_a_missing_extra_is_named(installed):
    # the environment has the notebook extra, not the spark one
    bin_, env, work, _ = installed
    done = subprocess.run([str(bin_ / "python"), "-c", "import rmqlab.spark"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "pip install 'rmqlab[spark]'" in done.stderr
