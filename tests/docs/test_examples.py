"""Every example in the package's docstrings runs and prints what it shows (doctest),
on the stores the package ships, and every class and function the API pages document
has one: what a user calls first, as the API pages show it."""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
from pathlib import Path

import pytest

API_PAGES = Path(__file__).resolve().parents[2] / "docs" / "reference" / "api"
#: the examples that need a SparkSession run in tests/spark (the worker's session)
SPARK = ("rmqlab.spark",)


def documented() -> dict[str, object]:
    """``module.name`` -> object, for every class and function an API page renders
    (``automodule`` with its ``:members:``, or the module's ``__all__``, or what it defines)."""
    found = {}
    for page in sorted(API_PAGES.glob("*.md")):
        for m in re.finditer(r"\.\. automodule:: (\S+)((?:\n +:[\w-]+:.*)*)", page.read_text()):
            module = importlib.import_module(m.group(1))
            members = re.search(r":members: (.+)", m.group(2))
            if members:
                names = [n.strip() for n in members.group(1).split(",")]
            elif ":no-members:" in m.group(2):
                names = []
            else:
                names = list(getattr(module, "__all__", None) or [n for n, o in vars(module).items() if not n.startswith("_") and getattr(o, "__module__", None) == module.__name__])
            for n in names:
                obj = getattr(module, n)
                if inspect.isclass(obj) or inspect.isfunction(obj):
                    found[f"{module.__name__}.{n}"] = obj
    return found


DOCUMENTED = documented()
MODULES = sorted({o.__module__ for o in DOCUMENTED.values()} | {"rmqlab.store", "rmqlab.engine", "rmqlab.report"})


def test_every_documented_class_and_function_has_an_example():
    missing = [name for name, obj in DOCUMENTED.items() if ">>>" not in (inspect.getdoc(obj) or "")]
    assert missing == [] and len(DOCUMENTED) > 60


@pytest.mark.parametrize("name", [m for m in MODULES if not m.startswith(SPARK)])
def test_the_examples_run(name):
    module = importlib.import_module(name)
    found = doctest.DocTestFinder().find(module)
    assert any(t.examples for t in found), f"{name} holds no example"
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} example(s) of {name} failed (python -m doctest -v to see them)"
