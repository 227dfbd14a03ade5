"""Reference pages generated from what rmqlab's code already declares, so that no fact
is written twice:

``.. rmqlab-layout:: rmqlab.format.commitlog.MessageRecord``
    a byte layout from its construct ``Struct``: each field's offset (while fixed),
    size, name, type and the documentation the schema gives it (Java's name first).
``.. rmqlab-spark-columns:: rmqlab.spark.commitlog_source.CommitLogDataSource``
    a Spark source's columns from its ``SCHEMA``.
``.. rmqlab-spark-options:: rmqlab.spark.commitlog_source.CommitLogDataSource``
    a Spark source's options from its ``OPTIONS`` declarations (name, kind, default, doc).
``.. rmqlab-commands::``
    every ``rmqlab`` command from its argparse parser.
``.. rmqlab-figures:: ../bench/figures.json``
    the benchmarks' figures, each with its commit, date and machine.
``.. rmqlab-finding-kinds::``
    every kind of finding ``verify`` reports, with what the broker does with it, from
    :mod:`rmqlab.forensics.kinds`.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

from docutils.parsers.rst import Directive, directives
from docutils.statemachine import StringList
from sphinx.util.nodes import nested_parse_with_titles

_TYPES = {">l": "int32", ">L": "uint32", ">q": "int64", ">Q": "uint64", ">h": "int16", ">H": "uint16", ">b": "int8", ">B": "uint8"}


def _resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ") if text not in (None, "") else " "


def _list_table(header: list[str], rows: list[list[str]], widths: str | None = None) -> list[str]:
    out = [".. list-table::", "   :header-rows: 1"]
    if widths:
        out.append(f"   :widths: {widths}")
    out.append("")
    for row in [header, *rows]:
        out.append(f"   * - {_cell(row[0])}")
        out.extend(f"     - {_cell(c)}" for c in row[1:])
    return out


def _inner(con):
    """The construct under renames, docs, Rebuild and Const wrappers."""
    while hasattr(con, "subcon") and type(con).__name__ in ("Renamed", "Rebuild", "Const", "Transformed", "Restreamed"):
        con = con.subcon
    return con


def _type_name(con) -> str:
    con = _inner(con)
    kind = type(con).__name__
    if kind == "FormatField":
        return _TYPES.get(con.fmtstr, con.fmtstr)  # all big-endian, as the page says
    if kind == "BytesInteger":
        return f"{con.length}-byte integer"
    if kind == "Bytes":
        return "bytes" if callable(con.length) else f"{con.length} bytes"
    if kind == "IfThenElse":
        return f"{_type_name(con.thensubcon)} or {_type_name(con.elsesubcon)}"
    if kind == "Struct":
        return "struct (" + ", ".join(f"{s.name}: {_type_name(s)}" for s in con.subcons) + ")"
    if kind == "GreedyBytes":
        return "bytes to the end"
    return kind


def layout_rows(struct) -> list[list[str]]:
    """(offset, size, field, type, doc) of each field of a construct ``Struct``; offsets
    are given while every field before is of fixed size."""
    rows, offset = [], 0
    for sub in struct.subcons:
        try:
            size = sub.sizeof()
        except Exception:  # a size that depends on the data (this.len_body, a host's kind)
            size = None
        rows.append([str(offset) if offset is not None else "…", str(size) if size is not None else "varies", f"``{sub.name}``", _type_name(sub), (sub.docs or "").strip()])
        offset = offset + size if offset is not None and size is not None else None
    return rows


class LayoutDirective(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        struct = _resolve(self.arguments[0])
        lines = _list_table(["offset", "size", "field", "type", "what RocketMQ calls it, and why"], layout_rows(struct), "8 8 22 22 40")
        try:
            lines += ["", f"{struct.sizeof()} bytes in all."]
        except Exception:
            pass
        lines += ["", f"Declared once, in :mod:`{self.arguments[0].rpartition('.')[0]}` (``{self.arguments[0].rpartition('.')[2]}``)."]
        return _parse(self, lines)


class SparkColumnsDirective(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        source = _resolve(self.arguments[0])
        rows = [[f"``{f.name}``", f.dataType.simpleString(), "yes" if f.nullable else "no"] for f in source.SCHEMA.fields]
        return _parse(self, _list_table(["column", "Spark type", "nullable"], rows, "30 40 10"))


class SparkOptionsDirective(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        declared = _resolve(self.arguments[0])
        options = declared if isinstance(declared, tuple) else declared.OPTIONS
        rows = [[f"``{o.name}``", o.kind, o.default_text(), o.doc] for o in options]
        return _parse(self, _list_table(["option", "kind", "default", "what it does"], rows, "18 12 14 56"))


class FindingKindsDirective(Directive):
    has_content = False

    def run(self):
        from rmqlab.forensics.kinds import KINDS

        rows = [[f"``{name}``", k.title, k.broker] for name, k in sorted(KINDS.items())]
        return _parse(self, _list_table(["kind", "what it is", "what the broker does with it"], rows, "20 25 55"))


class FiguresDirective(Directive):
    """The benchmarks' figures from ``bench/figures.json``: each with the commit, date and
    machine it was measured on, the script that measures it and what it measured.
    ``:page: user`` shows the figures marked ``"page": "user"`` (what a user can expect,
    the performance page), ``:page: history`` the others (the explanation's history)."""

    required_arguments = 1
    has_content = False
    option_spec = {"page": directives.unchanged}

    def run(self):
        env = self.state.document.settings.env
        path = Path(env.srcdir) / self.arguments[0]
        env.note_dependency(str(path))
        page = self.options.get("page", "history")
        lines = []
        for fig in json.loads(path.read_text())["figures"]:
            if fig.get("page", "history") != page:
                continue
            about = re.sub(r"^\*\*[^*]+\*\*\s*", "", fig["about"])
            lines += [fig["title"], "-" * len(fig["title"]), "",
                      f"Measured at commit ``{fig['commit']}`` on {fig['date']}, {fig['machine']}, by ``{fig['script']}``.", "",
                      _md_code(about), ""]
            lines += _list_table(fig["header"], [[_md_code(c) for c in r] for r in fig["rows"]])
            lines.append("")
        return _parse(self, lines)


def _md_code(text: str) -> str:
    """Markdown's inline code and bold as reStructuredText's."""
    text = re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)
    # reStructuredText ends a literal only before a space or punctuation: `Message`s
    return re.sub(r"``(.+?)``(\w?)", lambda m: f"``{m.group(1)}``" + (f"\\ {m.group(2)}" if m.group(2) else ""), text)


class CommandsDirective(Directive):
    """Every ``rmqlab`` command from its argparse parser: what it does (the command
    module's docstring), its usage line, and each argument with its help."""

    has_content = False

    def run(self):
        import argparse

        from rmqlab.cli import build_parser

        parser = build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        helps = {a.dest: a.help for a in sub._choices_actions}
        lines = []
        for name, p in sub.choices.items():
            title = f"rmqlab {name}"
            # the usage line as text: a literal block would be highlighted as Python
            lines += [title, "-" * len(title), "", f"*{helps.get(name, '')}*", "", ".. code-block:: text", ""]
            lines += ["   " + ln for ln in p.format_usage().strip().splitlines()]
            lines.append("")
            doc = (p.description or "").strip()
            if doc:
                # the command module's docstring, whose first line repeats the title
                body = doc.partition("\n")[2] if doc.startswith("``rmqlab") else doc
                lines += body.splitlines() + [""]
            rows = []
            for a in p._actions:
                if isinstance(a, argparse._HelpAction):
                    continue
                flag = ", ".join(a.option_strings) if a.option_strings else a.dest.upper()
                if a.option_strings and a.nargs != 0:
                    flag += f" {a.metavar or a.dest.upper()}"
                if a.choices and not isinstance(a.choices, dict):
                    flag += " {" + ",".join(map(str, a.choices)) + "}"
                rows.append([f"``{flag}``", a.help or ""])
            if rows:
                lines += _list_table(["argument", "what it does"], rows, "30 70") + [""]
        return _parse(self, lines)


def _parse(directive, lines: list[str]):
    from docutils import nodes

    node = nodes.section()
    node.document = directive.state.document
    nested_parse_with_titles(directive.state, StringList(lines, source="rmqlab_docs"), node)
    return node.children


def setup(app):
    app.add_directive("rmqlab-layout", LayoutDirective)
    app.add_directive("rmqlab-spark-columns", SparkColumnsDirective)
    app.add_directive("rmqlab-spark-options", SparkOptionsDirective)
    app.add_directive("rmqlab-figures", FiguresDirective)
    app.add_directive("rmqlab-finding-kinds", FindingKindsDirective)
    app.add_directive("rmqlab-commands", CommandsDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
