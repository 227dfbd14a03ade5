"""The documentation site: it builds with warnings as errors (a broken link, a missing
reference, a lesson that fails to render each fail), every command its pages show
prints what they show, and what it generates from the code stays generated."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import console_blocks  # noqa: E402

PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts and "lessons" not in p.parts)
WITH_COMMANDS = [p for p in PAGES if console_blocks.commands(p.read_text()) and any(cmds for _, cmds in console_blocks.commands(p.read_text()))]


@pytest.mark.slow
def test_the_site_builds_without_a_warning(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html", str(DOCS), str(tmp_path / "html")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]
    html = tmp_path / "html"
    # every lesson rendered with its saved outputs, the generated references filled in
    assert len(list((html / "lessons").glob("[0-9][0-9]_*.html"))) == 11
    forensics = (html / "lessons" / "09_forensics.html").read_text()
    assert "BODY_CRC" in forensics and "<svg" in forensics
    cli = (html / "reference" / "cli.html").read_text()
    assert "rmqlab lab" in cli and "--copy-only" in cli
    assert "physical_offset" in (html / "reference" / "layouts.html").read_text()
    spark = (html / "reference" / "spark.html").read_text()
    assert "splitSize" in spark and "failOnDataLoss" in spark and "256MiB" in spark
    # generated tables are tables, not reStructuredText shown as text
    for page in ("reference/layouts.html", "reference/cli.html", "reference/spark.html", "performance.html"):
        text = (html / page).read_text()
        assert "<table" in text and ".. list-table::" not in text, page
    perf = (html / "performance.html").read_text()
    assert all(f["commit"] in perf for f in json.loads((ROOT / "bench" / "figures.json").read_text())["figures"])


@pytest.mark.parametrize("page", WITH_COMMANDS, ids=lambda p: str(p.relative_to(DOCS)))
def test_every_command_shown_prints_what_the_page_shows(page):
    text = page.read_text()
    with console_blocks.workspace(text) as cwd:
        for _, cmds in console_blocks.commands(text):
            for c in cmds:
                got = console_blocks.run(c.command, cwd)
                assert got == c.shown, f"{page.name}:{c.line}: `{c.command}` printed\n{got}\n(the page shows)\n{c.shown}\n" \
                                       "(python docs/_ext/console_blocks.py --update writes the new output)"

def test_the_pages_show_commands_on_the_sample_stores():
    # the how-to guides' task list, each with a command that runs
    howtos = {p.stem for p in WITH_COMMANDS if p.parent.name == "howto"}
    assert {"investigate-crash", "find-message", "consumer-lag", "salvage", "which-release", "export-parquet", "write-store", "follow-live"} <= howtos


def test_every_cli_argument_has_help():
    from rmqlab.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    missing = [name for name in sub.choices if not helps.get(name)]
    for name, p in sub.choices.items():
        missing += [f"{name} {a.option_strings or a.dest}" for a in p._actions if not isinstance(a, argparse._HelpAction) and not (a.help or "").strip()]
    assert missing == []


def test_every_spark_option_is_declared_and_documented():
    from rmqlab.spark import commitlog_source, consumequeue_source, index_source, offsets_source, stream_source

    for module in (commitlog_source, consumequeue_source, index_source, offsets_source, stream_source):
        declared = {o.name for o in module.OPTIONS}
        # what a reader reads goes through a declaration: no option read by name elsewhere
        source = Path(module.__file__).read_text()
        assert not re.search(r"opt_(bool|int|size|list|time|choice)\(", source), module.__name__
        assert all(o.doc and o.kind for o in module.OPTIONS)
        if module is not stream_source:
            cls = next(v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__ and getattr(v, "OPTIONS", None) is module.OPTIONS)
            assert all(f"``{n}``" in cls.__doc__ for n in declared)


def test_the_store_map_picture_is_what_rmqlab_draws_now():
    # the README's and the site's picture: the damaged sample store as `rmqlab map` draws it
    with console_blocks.workspace() as cwd:
        out = console_blocks.run("rmqlab map samples/damaged -o damaged.svg", cwd)
        assert (cwd / "damaged.svg").read_bytes() == (DOCS / "_static" / "damaged-map.svg").read_bytes(), out

def test_the_figures_name_their_commit_date_machine_and_script():
    figures = json.loads((ROOT / "bench" / "figures.json").read_text())["figures"]
    assert figures
    for f in figures:
        assert re.fullmatch(r"[0-9a-f]{7,40}", f["commit"]) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", f["date"]), f["id"]
        assert f["machine"] and (ROOT / f["script"]).is_file() and f["rows"], f["id"]


def test_no_text_speaks_of_how_the_work_was_organised():
    texts = [ROOT / "README.md", *PAGES, *sorted((ROOT / "rmqlab").rglob("*.py")), *sorted((ROOT / "rmqlab" / "lessons").glob("*.md"))]
    said = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in texts for m in re.finditer(r"\b(this|last|earlier|previous|the next) (work )?sessions?\b", p.read_text(), re.I)]
    assert said == []
