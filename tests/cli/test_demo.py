"""``rmqlab demo`` (the README's first command): every step runs and shows what it says,
on the sample stores shipped in the package, and not one byte of them changes."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys

from rmqlab.lab.samples import shipped_dir


def _digest(root) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_demo_runs_every_step_and_changes_no_sample(tmp_path):
    samples = shipped_dir()
    before = _digest(samples)
    done = subprocess.run([sys.executable, "-m", "rmqlab", "demo", "--workdir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [int(n) for n in re.findall(r"^ (\d+)\. ", done.stdout, re.M)] == list(range(1, 8))
    assert "abnormal recovery" in done.stdout and "BODY_CRC" in done.stdout and "COLLISION" in done.stdout.upper()
    assert re.search(r"salvage: [1-9]\d* readable record\(s\) the next start cuts", done.stdout) and "rmqlab map" in done.stdout
    assert _digest(samples) == before
    assert (tmp_path).exists() and any(tmp_path.rglob("commitlog/*"))  # the write step's scratch store went where it was told
