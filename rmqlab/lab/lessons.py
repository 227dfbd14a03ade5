"""The lessons as the package ships them, and their copy into a folder of the user's.

The eleven notebooks and their glossary live at the top of the source tree in
``notebooks/``, the stores they open in ``sample_stores/`` (the stores Apache RocketMQ
wrote in ``sample_stores/reference/``); the build carries both into the package
(``rmqlab/lessons/`` and ``rmqlab/lessons/stores/``, setup.py), so that an installed
rmqlab has them with no checkout anywhere. The lessons open their stores by paths
relative to themselves (``stores/clean``: in a checkout ``notebooks/stores`` links to
``../sample_stores``), so the folder works wherever it is copied. ``rmqlab lab`` copies
it with :func:`copy_lessons`.

A copy remembers what it wrote (:data:`MANIFEST`: each file's SHA-256), so that a
later copy into the same folder updates a lesson the user never touched and keeps
one the user changed (run, edited, answered) unless told ``force``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

#: the lesson folder: the package's, as the build put it there (a wheel, an sdist's
#: install), else the source tree's ``notebooks/`` (a checkout, an editable install)
_PACKAGED = Path(__file__).resolve().parents[1] / "lessons"
LESSONS_DIR = _PACKAGED if _PACKAGED.is_dir() else Path(__file__).resolve().parents[2] / "notebooks"
#: what a copy wrote, in the copy: relative path -> SHA-256 of the bytes written
MANIFEST = ".rmqlab-lessons.json"
#: written by tools, not lessons: never copied
_SKIPPED = {".ipynb_checkpoints", "__pycache__"}


@dataclass
class LessonCopy:
    """What :func:`copy_lessons` did, file by file (paths relative to ``dest``)."""

    dest: Path
    copied: list[str] = field(default_factory=list)  # new in the folder
    updated: list[str] = field(default_factory=list)  # as copied before, replaced by this release's
    unchanged: list[str] = field(default_factory=list)  # already equal to this release's
    kept: list[str] = field(default_factory=list)  # changed by the user: left as they are
    replaced: list[str] = field(default_factory=list)  # changed by the user, replaced (force)

    def lessons(self) -> list[str]:
        return sorted(p for p in self.copied + self.updated + self.unchanged + self.kept + self.replaced if p.endswith(".ipynb"))

    def stores(self) -> list[str]:
        """The stores the folder holds (``clean``, ``reference/crash``, …)."""
        names = set()
        for rel in self._all():
            parts = rel.split("/")
            if parts[0] == "stores" and len(parts) > 3 and parts[1] == "reference":
                names.add(f"reference/{parts[2]}")
            elif parts[0] == "stores" and len(parts) > 2 and parts[1] != "reference":
                names.add(parts[1])
        return sorted(names)

    def to_text(self) -> str:
        stores = self.stores()
        lines = [f"{self.dest}: {len(self.lessons())} lessons, the glossary and {len(stores)} stores ({', '.join(stores)})"]
        for what, names in (("copied", self.copied), ("updated", self.updated), ("unchanged", self.unchanged), ("replaced (--force)", self.replaced)):
            if names:
                lines.append(f"  {what}: {len(names)} file(s)")
        if self.kept:
            lines.append(f"  kept, changed since they were copied (--force replaces them): {', '.join(self.kept)}")
        return "\n".join(lines)

    def _all(self) -> list[str]:
        return self.copied + self.updated + self.unchanged + self.kept + self.replaced


def shipped_files(root: Path = LESSONS_DIR) -> list[str]:
    """Every file of the lesson folder, relative to it, in a stable order (through the
    link a checkout's ``notebooks/stores`` is)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED)
        for name in sorted(filenames):
            out.append((Path(dirpath) / name).relative_to(root).as_posix())
    return out


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def copy_lessons(dest: str | os.PathLike, *, force: bool = False, source: Path = LESSONS_DIR) -> LessonCopy:
    """Copy the lessons, the glossary and their stores into ``dest`` (made if missing).

    A file the user changed since an earlier copy (or that was there before any copy
    and differs) is kept unless ``force``; a file an earlier copy wrote and nobody
    touched is brought up to this release's. Nothing is ever deleted. Copies are
    writable by the user even where the installed files are not.
    """
    from ..errors import RmqlabError

    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise RmqlabError(f"{dest}: not a directory")
    if not source.is_dir():
        raise RmqlabError(f"{source}: the lessons are missing from this installation of rmqlab (reinstall it)")
    dest.mkdir(parents=True, exist_ok=True)
    manifest_path = dest / MANIFEST
    try:
        before = json.loads(manifest_path.read_text())["files"] if manifest_path.exists() else {}
    except (ValueError, KeyError, TypeError):
        before = {}  # a damaged manifest: every differing file counts as the user's
    report = LessonCopy(dest)
    written: dict[str, str] = dict(before)
    for rel in shipped_files(source):
        src, dst = source / rel, dest / rel
        new = _digest(src)
        if not dst.exists():
            bucket = report.copied
        else:
            have = _digest(dst)
            if have == new:
                report.unchanged.append(rel)
                written[rel] = new
                continue
            if before.get(rel) == have:
                bucket = report.updated
            elif force:
                bucket = report.replaced
            else:
                report.kept.append(rel)
                continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)  # the bytes only: an install folder's read-only modes stay behind
        written[rel] = new
        bucket.append(rel)
    manifest_path.write_text(json.dumps({"files": written}, indent=1, sort_keys=True) + "\n")
    return report
