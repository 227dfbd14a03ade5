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
    # the command reference copies as typed: every flag on it is the parser's, no dash
    # turned typographic before one, usage lines not highlighted as a language
    import re

    from rmqlab.cli import build_parser

    parser = build_parser()
    flags = {o for p in [parser, *next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices.values()]
             for a in p._actions for o in a.option_strings}
    shown = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", re.sub(r"<[^>]+>", "", cli)))
    assert shown and shown <= flags, sorted(shown - flags)
    assert not re.search(r"[\u2013\u2014]-?[a-z]", re.sub(r"<[^>]+>", "", cli)), "a flag's dashes made typographic"
    assert 'class="highlight-text' in cli and 'class="highlight-default' not in cli
    assert "physical_offset" in (html / "reference" / "layouts.html").read_text()
    spark = (html / "reference" / "spark.html").read_text()
    assert "splitSize" in spark and "failOnDataLoss" in spark and "256MiB" in spark
    # generated tables are tables, not reStructuredText shown as text
    for page in ("reference/layouts.html", "reference/cli.html", "reference/spark.html", "performance.html", "explanation/measurements.html"):
        text = (html / page).read_text()
        assert "<table" in text and ".. list-table::" not in text, page
    # what a user can expect on the performance page, the rest in the measurement history
    pages = {"user": (html / "performance.html").read_text(), "history": (html / "explanation" / "measurements.html").read_text()}
    figures = json.loads((ROOT / "bench" / "figures.json").read_text())["figures"]
    assert all(f["commit"] in pages[f.get("page", "history")] and f["title"] in pages[f.get("page", "history")] for f in figures)
    assert {f.get("page", "history") for f in figures} == {"user", "history"}
    # offline: no page loads a script, style, font or picture from elsewhere, and the
    # lessons' widgets are drawn by the manager the site serves, their pictures beside them
    loaded = re.compile(r"""<(?:script|img|iframe|source|embed)\b[^>]*?\bsrc=["']((?:https?:)?//[^"']+)"""
                        r"""|<link\b(?=[^>]*\brel=["'](?:stylesheet|preload|modulepreload|icon|shortcut icon)["'])[^>]*?\bhref=["']((?:https?:)?//[^"']+)""", re.I)
    remote_css = re.compile(rb"""(?:@import\s+|url\()\s*["']?(?:https?:)?//""", re.I)
    for page in html.rglob("*.html"):
        assert not loaded.findall(page.read_text()), (page.relative_to(html), loaded.findall(page.read_text()))
    for static in (html / "_static").rglob("*"):
        if static.suffix in (".css", ".js"):
            assert not remote_css.search(static.read_bytes()), static.relative_to(html)
    tour = (html / "lessons" / "01_tour.html").read_text()
    assert 'src="../_static/widgets/embed-amd.js' in tour and (html / "_static" / "widgets" / "embed-amd.js").exists()
    assert re.search(r"rmqlab-widget-picture.*?</div>\s*<script type=\"application/vnd.jupyter.widget-view\+json\">", tour, re.S)


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
    texts = [ROOT / "README.md", *PAGES, *sorted((ROOT / "rmqlab").rglob("*.py")), *sorted((ROOT / "notebooks").glob("*.md"))]
    said = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in texts for m in re.finditer(r"\b(this|last|earlier|previous|the next) (work )?sessions?\b", p.read_text(), re.I)]
    assert said == []


def test_no_page_cites_a_path_only_a_checkout_has():
    # a reader of the site has the package, not the repository: a test or script behind a
    # claim is linked where the source is published ({source}`tests/...`); the pages for
    # those who work on rmqlab itself aside
    bare = re.compile(r"(?<!\{source\})`(?:\.\./)?(?:tests|scripts|shared)/[^`]*`|PROVENANCE\.md(?!` says)")
    found = [f"{p.relative_to(DOCS)}: {m.group(0)}" for p in PAGES if p.name != "development.md" for m in bare.finditer(p.read_text())]
    assert found == []
    from rmqlab.lab.samples import SAMPLES_README

    assert "tests/" not in SAMPLES_README


def test_a_pip_user_reaches_the_documentation():
    """One address (rmqlab.version.DOCS_URL): the package's metadata, the end of `rmqlab
    --help` and of every command's help (its own section of the command reference), the
    error for a missing extra (with the install page), and the hosting file builds the
    site as `make docs` does (the docs extra, warnings as errors)."""
    import tomllib

    from rmqlab.cli import build_parser
    from rmqlab.errors import install_hint
    from rmqlab.version import DOCS_URL, SOURCE_URL

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Documentation"] == DOCS_URL and urls["Source"] == SOURCE_URL and urls["Issues"] == f"{SOURCE_URL}/issues"
    assert all(u.startswith((DOCS_URL, SOURCE_URL)) for u in urls.values())
    parser = build_parser()
    assert DOCS_URL in parser.format_help().split("Documentation:")[-1].replace("\n", "")
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        assert p.format_help().replace("\n", "").rstrip().endswith(f"{DOCS_URL}reference/cli.html#rmqlab-{name}"), name
    assert f"{DOCS_URL}getting-started/install.html" in install_hint("spark")
    rtd = (ROOT / ".readthedocs.yaml").read_text()
    assert "configuration: docs/conf.py" in rtd and "fail_on_warning: true" in rtd and "- docs" in rtd


def test_the_troubleshooting_page_shows_what_rmqlab_prints(tmp_path, monkeypatch, capsys):
    """The errors the page shows as text (those its console blocks cannot provoke: a
    store a broker holds, permission denied, a missing extra, no Java, no memory), each
    provoked here and compared with the page, STORE standing for the store's path."""
    import fcntl
    import importlib.util
    import re
    import shutil

    from rmqlab import cli
    from rmqlab.errors import RmqlabError
    from rmqlab.lab.samples import shipped_dir
    from rmqlab.spark import session

    shown = re.findall(r"```text\n(.*?)\n```", (DOCS / "troubleshooting.md").read_text(), re.S)
    store = tmp_path / "store"
    shutil.copytree(shipped_dir() / "clean", store)

    def printed(argv) -> str:
        assert cli.main(list(map(str, argv))) == 2
        return capsys.readouterr().err.strip().replace(str(store), "STORE")

    got = []
    with open(store / "lock", "r+b") as fh:  # held as a broker holds it (an OS lock on byte 0), from another process
        import subprocess
        import sys

        holder = subprocess.Popen([sys.executable, "-c", f"import fcntl,sys,time; f=open({str(store / 'lock')!r},'r+b'); fcntl.lockf(f, fcntl.LOCK_EX, 1, 0); print('held', flush=True); time.sleep(30)"],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "held"
            (tmp_path / "in.jsonl").write_text('{"topic": "T", "body": "x"}\n')
            got.append(printed(["write", store, "--input", tmp_path / "in.jsonl"]))
        finally:
            holder.kill()
    del fh, fcntl

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied", str(store / "commitlog" / "00000000000000000000"))

    monkeypatch.setattr(cli.info if hasattr(cli, "info") else __import__("rmqlab.cli.info", fromlist=["run"]), "run", denied)
    got.append(printed(["info", store]))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jupyterlab" else real_find_spec(name, *a))
    got.append(printed(["lab", tmp_path / "lessons"]))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RmqlabError) as err:
        session.require_java()
    got.append(str(err.value))

    def no_memory(*a, **k):
        raise MemoryError

    monkeypatch.setattr(__import__("rmqlab.cli.verify", fromlist=["run"]), "run", no_memory)
    got.append(printed(["verify", store]).replace("rmqlab verify:", "rmqlab COMMAND:"))
    assert got == shown


def test_the_long_description_links_work_where_the_package_index_renders_it():
    """The README is the package's long description: the package index renders it away
    from the repository, so every link and the picture are absolute, and each one into
    the site names a page the site has."""
    import re

    from rmqlab.version import DOCS_URL

    links = re.findall(r"\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    assert links and all(l.startswith("https://") for l in links), [l for l in links if not l.startswith("https://")]
    for link in links:
        if link.startswith(DOCS_URL):
            page = link[len(DOCS_URL):].split("#")[0] or "index.html"
            if page.startswith("lessons/") and page != "lessons/index.html":
                continue
            source = DOCS / (page[:-5] + ".md" if page.endswith(".html") else page)
            assert source.exists() or page == "lessons/index.html", link
