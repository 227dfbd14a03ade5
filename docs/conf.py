"""Sphinx configuration of rmqlab's documentation site (``make docs``).

Sphinx because rmqlab's reference is generated from what the code already says: the
API from docstrings (autodoc; the docstrings are written in reStructuredText roles), the
CLI from the argparse parsers (sphinx-argparse), the byte layouts from the construct
schemas and the Spark options from their declarations (``_ext/rmqlab_docs.py``); MyST
for pages in Markdown and myst-nb for the lessons with their saved outputs; the PyData
theme, as PySpark's documentation uses.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

from rmqlab.lab.lessons import LESSONS_DIR  # noqa: E402
from rmqlab.version import SOURCE_URL  # noqa: E402

project = "rmqlab"
author = "The rmqlab authors"
copyright = "The rmqlab authors, Apache License 2.0"
try:
    from importlib.metadata import version as _version

    release = _version("rmqlab")
except Exception:  # a tree that was never installed
    release = "unknown"
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.extlinks",
    "rmqlab_docs",
    "offline_widgets",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "lessons/stores", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
# no typographic replacement: the pages hold flags and commands to copy (``--config``
# would become an en dash), and help text is the parser's, verbatim
smartquotes = False
myst_heading_anchors = 3
# {source}`tests/oracle/test_min_offset.py`: a file of the source, linked where it is
# published (a reader of the site has no checkout)
extlinks = {"source": (SOURCE_URL + "/blob/main/%s", "%s")}

# The lessons are rendered with the outputs saved in them (nbval checks those outputs in
# the suite); nothing is executed while the site builds.
nb_execution_mode = "off"
nb_merge_streams = True
# (nb_ipywidgets_js: set by _ext/offline_widgets.py, which serves the widget manager from
# the site itself and keeps each widget's picture until its live view is drawn)

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_mock_imports = []
napoleon_google_docstring = False

html_theme = "pydata_sphinx_theme"
html_title = "rmqlab"
html_static_path = ["_static"]
html_css_files = ["rmqlab.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}

# the lessons: one owner (the package's lesson folder); the site renders a copy made at
# every build, without the stores they open
_lessons = DOCS / "lessons"
if _lessons.exists():
    shutil.rmtree(_lessons)
shutil.copytree(LESSONS_DIR, _lessons, ignore=shutil.ignore_patterns("stores", ".ipynb_checkpoints"))
_index = (_lessons / "README.md").read_text()
(_lessons / "README.md").unlink()
_names = sorted(p.stem for p in _lessons.glob("[0-9][0-9]_*.ipynb"))
(_lessons / "index.md").write_text(_index + "\n```{toctree}\n:hidden:\n\n" + "\n".join([*_names, "GLOSSARY"]) + "\n```\n")
