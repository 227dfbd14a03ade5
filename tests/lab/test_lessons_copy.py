"""``copy_lessons`` (what ``rmqlab lab`` does before JupyterLab starts): the whole lesson
folder lands in the user's, lessons open their stores relative to themselves, and a
lesson the user changed is never overwritten unless forced."""

from __future__ import annotations

import hashlib
import json
import re

import nbformat
import pytest

from rmqlab.errors import RmqlabError
from rmqlab.lab.lessons import LESSONS_DIR, MANIFEST, copy_lessons, shipped_files


def test_the_copy_holds_every_lesson_and_every_store_they_open(tmp_path):
    rep = copy_lessons(tmp_path / "lessons")
    dest = tmp_path / "lessons"
    assert sorted(rep.copied) == sorted(shipped_files()) and not (rep.updated or rep.kept)
    assert len(rep.lessons()) == 11 and (dest / "GLOSSARY.md").is_file()
    assert rep.stores() == ["clean", "crashed", "damaged"] + [f"reference/{c}" for c in ("clean", "crash", "crash-cqdeleted", "crash-torn", "v2ipv6")]
    for rel in shipped_files():
        assert (dest / rel).read_bytes() == (LESSONS_DIR / rel).read_bytes()
    # every store path a lesson names exists beside the copy
    for nb_path in sorted(dest.glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(nb_path, as_version=4).cells:
            if cell.cell_type == "code":
                for path in re.findall(r'"(stores/[^"{}]+)"', cell.source):
                    assert (dest / path).exists(), (nb_path.name, path)


def test_a_changed_lesson_is_kept_an_untouched_one_updated(tmp_path):
    dest = tmp_path / "l"
    copy_lessons(dest)
    changed, untouched = dest / "01_tour.ipynb", dest / "02_anatomy.ipynb"
    changed.write_text(changed.read_text() + "\n")  # as saving it in JupyterLab changes it
    mine = changed.read_bytes()
    # an older release's copy of lesson 2 that the user never opened: the manifest says so
    untouched.write_bytes(b"{}")
    manifest = json.loads((dest / MANIFEST).read_text())
    manifest["files"]["02_anatomy.ipynb"] = hashlib.sha256(b"{}").hexdigest()
    (dest / MANIFEST).write_text(json.dumps(manifest))
    rep = copy_lessons(dest)
    assert rep.kept == ["01_tour.ipynb"] and rep.updated == ["02_anatomy.ipynb"]
    assert changed.read_bytes() == mine
    assert untouched.read_bytes() == (LESSONS_DIR / "02_anatomy.ipynb").read_bytes()
    assert "--force" in rep.to_text() and "01_tour.ipynb" in rep.to_text()
    # asked to, it replaces the user's lesson too
    rep = copy_lessons(dest, force=True)
    assert rep.replaced == ["01_tour.ipynb"] and changed.read_bytes() == (LESSONS_DIR / "01_tour.ipynb").read_bytes()


def test_files_there_before_any_copy_are_the_users(tmp_path):
    (tmp_path / "01_tour.ipynb").write_text("mine")
    (tmp_path / MANIFEST).write_text("not json")  # a damaged manifest trusts nothing
    rep = copy_lessons(tmp_path)
    assert rep.kept == ["01_tour.ipynb"] and (tmp_path / "01_tour.ipynb").read_text() == "mine"


def test_a_file_in_the_way_is_a_clear_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(RmqlabError, match="not a directory"):
        copy_lessons(tmp_path / "f")


def test_the_lab_command_without_jupyterlab_names_the_extra(tmp_path, monkeypatch, capsys):
    import importlib.util

    from rmqlab.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jupyterlab" else real(name, *a))
    assert main(["lab", str(tmp_path / "l")]) == 2
    assert "pip install 'rmqlab[notebook]'" in capsys.readouterr().err
    assert not (tmp_path / "l").exists()  # nothing copied when it cannot go on
    assert main(["lab", "--copy-only", str(tmp_path / "l")]) == 0
    assert (tmp_path / "l" / "11_live.ipynb").is_file()
