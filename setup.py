"""Build of rmqlab's two optional C modules, the lessons and sample stores carried into the
package (``notebooks/``, ``sample_stores/``), and the archive of the stores other writers
wrote; everything else is in pyproject.toml.

``rmqlab.engine._put`` is MessageStore.put's common case in C, and
``rmqlab.engine._group_commit`` the SYNC_FLUSH group commit with a flusher thread that
does not take the GIL (see the comment at the top of each .c file).  Both are
optional: when one cannot be built (no compiler, no zlib headers) the install goes on
and the store uses its Python counterpart, which writes the same bytes.

The wheel carries the stores rocketmq-rust wrote (``tests/stores/rocketmq-rust``, for the
guide on other writers; ``rmqlab samples DIR`` writes them out) as one archive, made here
from the table ``rmqlab.lab.samples.OTHER_WRITERS`` (read from the source: the build does
not import rmqlab).
"""

import ast
import shutil
import tarfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _samples_table(name: str):
    """A module-level constant of rmqlab/lab/samples.py, read as a literal."""
    tree = ast.parse((ROOT / "rmqlab" / "lab" / "samples.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"rmqlab/lab/samples.py has no {name}")


class BuildPyWithStores(build_py):
    """build_py, then the lessons (``notebooks/``) as ``rmqlab/lessons/``, the sample stores
    (``sample_stores/``) as ``rmqlab/lessons/stores/`` and the other writers' stores as
    ``rmqlab/lessons/stores/<archive>``: where ``rmqlab.lab.lessons.LESSONS_DIR`` finds them
    in an installed package."""

    def run(self):
        super().run()
        lessons = Path(self.build_lib) / "rmqlab" / "lessons"
        if (ROOT / "notebooks").is_dir():
            if lessons.exists():
                shutil.rmtree(lessons)
            skip = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "stores")  # notebooks/stores: the link to sample_stores
            shutil.copytree(ROOT / "notebooks", lessons, ignore=skip)
            shutil.copytree(ROOT / "sample_stores", lessons / "stores", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        stores = ROOT / "tests" / "stores"
        if not stores.is_dir():
            return  # a tree without them (neither a checkout nor its sdist): nothing to carry
        target = lessons / "stores" / _samples_table("OTHER_WRITERS_ARCHIVE")
        target.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(target, "w:gz", format=tarfile.PAX_FORMAT) as tar:
            for writer, cases in _samples_table("OTHER_WRITERS").items():
                for case in cases:
                    store = stores / writer / case / "store"
                    for p in sorted(store.rglob("*")):
                        if p.is_file():
                            info = tarfile.TarInfo(f"{writer}/{case}/{p.relative_to(store).as_posix()}")
                            info.size, info.mode, info.mtime = p.stat().st_size, 0o644, 0
                            with open(p, "rb") as fh:
                                tar.addfile(info, fh)


setup(
    cmdclass={"build_py": BuildPyWithStores},
    ext_modules=[
        Extension(
            "rmqlab.engine._put",
            sources=["rmqlab/engine/_put.c"],
            libraries=["z"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "rmqlab.engine._group_commit",
            sources=["rmqlab/engine/_group_commit.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ],
)
