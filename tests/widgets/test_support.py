"""Lesson support code: scratch directories, the JVM output redirection, ``rmqlab samples``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from rmqlab.cli import main
from rmqlab.lab.samples import sample_files
from rmqlab.widgets import scratch_dir
from rmqlab.spark.session import _jvm_output_to


def test_scratch_dir_is_emptied_and_numbered():
    d = scratch_dir("test-support")
    (d / "x").write_text("old")
    again = scratch_dir("test-support")
    assert again == d and list(d.iterdir()) == []
    a, b = scratch_dir("test-n", numbered=True), scratch_dir("test-n", numbered=True)
    assert a != b and a.parent == b.parent == d.parent
    for x in (d, a, b):
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
