"""The package's layers, and that imports flow one way through them.

Every import in ``rmqlab/`` is read from the source (those inside functions too, which
run later but are dependencies all the same) and resolved to a module of the package.
A module may import from its own layer and the layers below it, never above; and no
chain of imports between modules may come back to where it started.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rmqlab"

#: the layer order, lowest first: each entry a layer, each layer the top-level modules
#: and folders of ``rmqlab/`` in it (docs/explanation/design.md follows it)
LAYERS = (
    ("errors", "reprs", "progress", "version"),  # the project's errors; the registry models ask for their views; how far a long pass has come; the version
    ("format",),  # construct schemas and codecs of one record, one entry, one header
    ("rules", "config", "releases"),  # RocketMQ's semantic rules; MessageStoreConfig; what differs by release
    ("files",),  # read-only mapped files and offset-named file queues
    ("scan",),  # passes over many records: acceptance, bulk decode, CRCs, dispatch requests
    ("store",),  # read side: CommitLog, ConsumeQueue, IndexFile, checkpoint, StoreReader
    ("lookup",),  # queries: by key, queue offset, time, msgId
    ("writers",),  # each file kind's writer, and dispatch (reput)
    ("recovery",),  # start-up recovery: plan, apply, report; where the next start ends the log and why
    ("forensics",),  # hex views, verify, salvage, diff: every answer in terms of what the next start does
    ("engine",),  # MessageStore: put, flush, clean-up, start and shutdown
    ("lab",),  # tools that drive the engine: crash lab, sample and big-store generators
    ("render",),  # text and HTML views of the models
    ("report",),  # one report of a store: every part above put together
    ("spark",),  # PySpark data sources
    ("widgets",),  # ipywidgets
    ("cli", "__main__"),  # one module per command
)
#: the package itself (``rmqlab/__init__.py``) is the facade above every layer
TOP = "rmqlab"


def _module_name(path: Path) -> tuple[str, str]:
    """(module, the package its relative imports resolve against)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        mod = ".".join(parts[:-1])
        return mod, mod
    mod = ".".join(parts)
    return mod, mod.rsplit(".", 1)[0]


def _imports(path: Path):
    """The package modules ``path`` imports (module level and inside functions alike),
    with the line of each."""
    mod, pkg = _module_name(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # "from pkg import x": x is a module or a name of pkg; resolved in _graph
            names = [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for t in names:
            if t == TOP or t.startswith(TOP + "."):
                yield t, node.lineno


def _graph():
    """module → {imported module: line}, between the package's own modules."""
    files = {_module_name(p)[0]: p for p in PACKAGE.rglob("*.py")}
    # C extensions (built from rmqlab/**/*.c) are modules too: leaves, importing nothing
    known = set(files) | {_module_name(p)[0] for p in PACKAGE.rglob("*.c")}
    edges: dict[str, dict[str, int]] = defaultdict(dict)
    for mod, path in files.items():
        for target, line in _imports(path):
            # "from rmqlab.x import name": the module is rmqlab.x unless name is a module
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != mod and target in files:
                edges[mod].setdefault(target, line)
    return files, edges


def _unit(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else TOP


def _layer_of() -> dict[str, int]:
    return {unit: i for i, layer in enumerate(LAYERS) for unit in layer}


def test_every_module_has_a_layer():
    files, _ = _graph()
    layer = _layer_of()
    missing = sorted({_unit(m) for m in files} - set(layer) - {TOP})
    assert not missing, f"add these to LAYERS (tests/test_layers.py): {missing}"


def test_imports_flow_downwards():
    files, edges = _graph()
    layer = _layer_of()
    wrong = []
    for mod, targets in sorted(edges.items()):
        a = _unit(mod)
        if a == TOP:
            continue
        for target, line in sorted(targets.items()):
            b = _unit(target)
            if b == TOP:
                wrong.append(f"{files[mod]}:{line}: {mod} imports the package facade {target}")
            elif layer[b] > layer[a]:
                wrong.append(f"{files[mod]}:{line}: {mod} (layer {a}) imports {target} (layer {b}, above it)")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle():
    files, edges = _graph()
    # Tarjan's strongly connected components over the module graph; a package's
    # __init__ importing its own submodules is how a package re-exports, so the edge
    # from a submodule back to its own package's __init__ is what would close a circle
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(files):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _fake_package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "rmqlab"
    for rel, text in {"__init__.py": "", **files}.items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if not (p.parent / "__init__.py").exists():
            (p.parent / "__init__.py").write_text("")
        p.write_text(text)
    return pkg


def test_the_walker_finds_a_lazy_upward_import(tmp_path, monkeypatch):
    fake = _fake_package(tmp_path, {"format/x.py": "def f():\n    from ..engine import y\n", "engine/y.py": ""})
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    with pytest.raises(AssertionError, match=r"format/x.py:2: rmqlab.format.x \(layer format\) imports rmqlab.engine.y"):
        test_imports_flow_downwards()


def test_the_walker_finds_a_circle(tmp_path, monkeypatch):
    fake = _fake_package(tmp_path, {"store/a.py": "from . import b\n", "store/b.py": "def g():\n    from .a import x\n"})
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    with pytest.raises(AssertionError, match=r"rmqlab.store.a <-> rmqlab.store.b"):
        test_no_import_cycle()
