"""The lessons' shape (the notebooks themselves run under nbval: see notebooks/README.md):
numbered, one topic each, no logic in cells, checked outputs, a closing "Try it"."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from tests.support import LESSONS as NOTEBOOKS
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def test_eleven_numbered_lessons_listed_in_the_readme():
    assert [p.name[:2] for p in LESSONS] == [f"{i:02d}" for i in range(1, 12)]
    readme = (NOTEBOOKS / "README.md").read_text()
    for p in LESSONS:
        assert f"({p.name})" in readme, f"notebooks/README.md does not list {p.name}"


def test_widget_cells_say_what_to_do_before_they_run():
    # a saved widget output is the one-line hint, not the children's reprs
    for path in LESSONS:
        nb = nbformat.read(path, as_version=4)
        for c in nb.cells:
            for o in c.get("outputs", []):
                text = o.get("data", {}).get("text/plain", "")
                assert "children=(" not in text, f"{path.name}: {text[:80]}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_lesson_shape(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    md = [c for c in nb.cells if c.cell_type == "markdown"]
    # a cell that needs a def means the code belongs in rmqlab
    for c in code:
        assert not re.search(r"^\s*(def|class|lambda)\b|\blambda\b", c.source, re.M), c.source
    # outputs that teach are compared by nbval --nbval-lax: cells tagged nbval-check-output
    # (a tag, not a comment in the code, so the site and JupyterLab show the code alone)
    assert sum("nbval-check-output" in c.metadata.get("tags", []) for c in code) >= 3
    assert not any("NBVAL" in c.source for c in code)
    # every cell was run and saved with its output (nbval compares against them)
    assert all(c.execution_count is not None for c in code)
    assert not any(o.get("output_type") == "error" for c in code for o in c.outputs)
    assert md[0].source.startswith(f"# {int(path.name[:2])} · ")
    assert md[-1].source.startswith("## Try it")
    # explains why, not only what
    assert sum(len(c.source) for c in md) > 1500


def test_sanitize_file_is_valid():
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).parent / "nbval_sanitize.cfg")
    assert cfg.sections()
    for s in cfg.sections():
        re.compile(cfg[s]["regex"])


def test_a_tagged_cell_whose_output_changed_fails(tmp_path):
    """The suite's nbval options check the cells tagged nbval-check-output: one whose
    saved output is not what it prints fails (were the tag not read, --nbval-lax would
    check nothing and pass)."""
    import subprocess
    import sys

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell("print(6 * 7)", metadata={"tags": ["nbval-check-output"]}, execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="41\n")]
    nb.cells.append(cell)
    nbformat.write(nb, tmp_path / "tampered.ipynb")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env", "-o", "addopts=",
                          str(tmp_path / "tampered.ipynb")], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 1 and "1 failed" in run.stdout, run.stdout[-2000:]
