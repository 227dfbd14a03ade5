"""What the benchmarks, scripts and examples take from the package still exists.

They run outside the suite (minutes each, on generated GiB stores), so a name moved or
renamed in ``rmqlab/`` would otherwise break them unnoticed until their next run (it
did: ``bench/bench_spark_pushdown.py`` imported ``push_filters`` from the module it had
moved out of).  Every ``from rmqlab... import ...`` in them is read from the source,
those inside functions too, and resolved here.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for folder in ("bench", "scripts", "examples") for p in (ROOT / folder).glob("*.py"))


def _package_imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "rmqlab":
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "rmqlab":
                    yield node.lineno, a.name, []


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_name_a_script_imports_from_the_package_exists(path):
    missing = []
    for line, module, names in _package_imports(path):
        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            missing.append(f"{path.name}:{line}: {module} ({e})")
            continue
        for name in names:
            if not hasattr(mod, name):
                try:
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    missing.append(f"{path.name}:{line}: {module}.{name}")
    assert not missing, "\n".join(missing)


def test_the_scripts_are_found():
    assert {p.parent.name for p in SCRIPTS} == {"bench", "scripts", "examples"}
