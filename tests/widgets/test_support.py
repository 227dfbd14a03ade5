"""Lesson support code: scratch directories, the JVM output redirection, ``rmqlab samples``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from rmqlab.cli import main
from rmqlab.lab.samples import sample_files
from rmqlab.widgets import scratch_dir
from rmqlab.spark.session import _jvm_output_to


def test_scratch_dirs_are_per_run_and_a_dead_kernels_are_pruned():
    a, b = scratch_dir("test-run"), scratch_dir("test-run")
    assert a != b and a.parent == b.parent and list(a.iterdir()) == []
    (a / "x").write_text("mine")
    # another run of the same lesson (here: a process that has since exited) left one
    child = subprocess.run([sys.executable, "-c", "from rmqlab.widgets import scratch_dir; import os, atexit; d = scratch_dir('test-run'); atexit._clear(); print(d)"], capture_output=True, text=True, check=True)
    theirs = Path(child.stdout.strip())
    assert theirs.is_dir() and theirs.parent == a.parent  # its exit handler did not run: a killed kernel
    c = scratch_dir("test-run")
    assert not theirs.exists()  # pruned: its process is gone
    assert (a / "x").read_text() == "mine"  # ours, live, untouched
    for x in (a, b, c):
        shutil.rmtree(x)


def test_child_output_goes_to_the_log_and_descriptors_come_back(tmp_path):
    log = tmp_path / "jvm.log"
    before = os.fstat(2).st_ino
    with _jvm_output_to(log):
        subprocess.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"], check=True)
    assert os.fstat(2).st_ino == before
    # both streams land in the log (their order is not defined: the child's stdout is
    # block-buffered and flushed at exit, after its unbuffered stderr)
    assert sorted(log.read_text().split()) == ["err", "out"]


def test_samples_command(tmp_path, capsys):
    assert main(["samples", str(tmp_path)]) == 0
    assert "clean" in capsys.readouterr().out
    first = sample_files(tmp_path)
    assert main(["samples", str(tmp_path)]) == 2  # refuses to overwrite shipped data
    assert "--force" in capsys.readouterr().err
    assert main(["samples", str(tmp_path), "--force"]) == 0
    assert sample_files(tmp_path) == first
