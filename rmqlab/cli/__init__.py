"""The ``rmqlab`` command line: one module per command.

Each command module defines ``add_parser(subparsers)`` and ``run(args) -> int``.
Human output goes to stdout, problems to stderr; an :class:`~rmqlab.errors.RmqlabError`
becomes one line on stderr (file and offset first) and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from typing import NoReturn

from ..errors import RmqlabError
from ..version import docs_url, version

#: every command, in the order ``--help`` lists them, with its one line of help (the
#: command modules read theirs here: ``rmqlab --help`` lists them all without importing one)
HELP = {
    "info": "what is in a store",
    "dump": "records in commitlog order",
    "tail": "print records as the broker appends them (read-only)",
    "lookup": "find records by key, msgId, offset, queue offset or time",
    "queue": "consume-queue entries of one queue",
    "offsets": "consumer groups' committed offsets and lag",
    "timers": "timer messages: pending, fired, where each waits",
    "transactions": "transaction half messages not yet ended (5.4+, transRocksDBEnable)",
    "compaction": "compacted topics' logs and queues (an offline dumpCompactionLog)",
    "hexdump": "annotated hex view of a store file",
    "write": "put messages (JSON lines, e.g. from `dump --json`) into a store",
    "recover": "crash recovery as RocketMQ does it (dry run unless told otherwise)",
    "verify": "check everything in a store and keep going",
    "salvage": "the records the next start throws away, read back",
    "export": "the records as a Parquet dataset (appends what is new on each run)",
    "diff": "what changed between two captures of a store",
    "map": "the whole store in one picture (SVG) or its data (JSON)",
    "report": "one self-contained report of a store (HTML or JSON) to attach to a ticket",
    "generate": "write a big synthetic store (benchmarks, Spark lesson)",
    "samples": "write the sample stores the lessons use (deterministic)",
    "demo": "a guided tour over the sample stores",
    "lab": "copy the lessons into a folder and open them in JupyterLab",
}
COMMANDS = list(HELP)


class _Parser(argparse.ArgumentParser):
    """argparse with short usage errors (one line and where to look, not the whole
    usage block) and plain-text help (the command modules' docstrings are written for
    Sphinx: their markup is taken out)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message}\n  (see '{self.prog} --help')\n")

    def format_help(self) -> str:
        return plain_text(super().format_help())


class _Version(argparse.Action):
    """``--version``: the number is read from the package's metadata only when asked
    (importing importlib.metadata is ~30 ms that every other command would pay)."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"rmqlab {version()}")  # on stdout, as argparse's own version action prints
        parser.exit()


def plain_text(text: str) -> str:
    """reStructuredText markup out of help text: ``x`` -> x, :func:`a.b` -> a.b,
    :class:`~a.B` -> B."""
    text = re.sub(r":[a-z]+:`~?([^`]*?)`", lambda m: m.group(1).rsplit(".", 1)[-1] if m.group(0).startswith(tuple(f":{r}:`~" for r in ("func", "class", "meth", "mod", "data", "attr"))) else m.group(1), text)
    return text.replace("``", "")


def build_parser(only: str | None = "") -> argparse.ArgumentParser:
    """The ``rmqlab`` parser.  Every command's own parser by default (the documentation's
    command reference, the tests); ``only``: that command's alone, the others listed by
    their one line of help, and None for none (``rmqlab --help``): what a command costs
    to start is then its own imports only."""
    parser = _Parser(prog="rmqlab", description="Read, write, recover and investigate Apache RocketMQ store files.",
                     epilog=f"Documentation: {docs_url()} (every command and flag: {docs_url('reference/cli.html')})")
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        if only != "" and name != only:
            sub.add_parser(name, help=HELP[name], add_help=False)  # listed; parsed only when it is the command run
            continue
        module = importlib.import_module(f".{name}", __name__)
        p = module.add_parser(sub)
        # the command's own section of the command reference (its title's anchor)
        said = f"Documentation: {docs_url(f'reference/cli.html#rmqlab-{name}')}"
        p.epilog = f"{p.epilog}\n\n{said}" if p.epilog else said
        p.set_defaults(_run=module.run, _parser=p)
    return parser


def _command_named(argv: list[str]) -> str | None:
    """The command ``argv`` runs (its first word that is no option), if it names one."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in HELP else None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(_command_named(list(sys.argv[1:] if argv is None else argv)))
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's parser, which names the command
        args._parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args._argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for a report to record
    try:
        return int(args._run(args) or 0)
    except RmqlabError as exc:
        print(f"rmqlab {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `rmqlab dump ... | head`
        _stdout_to_devnull()
        return 0
    except KeyboardInterrupt:
        return 130
    except PermissionError as exc:  # a capture copied with its owner's modes: one line, not a traceback
        print(f"rmqlab {args.command}: {exc.filename or ''}: permission denied: read access is all rmqlab needs "
              f"(sudo, or copy the store: cp -r --no-preserve=mode); see {docs_url('troubleshooting.html')}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"rmqlab {args.command}: out of memory: the command holds more than this machine has free; "
              f"on a store this large use the Spark sources (see {docs_url('troubleshooting.html')})", file=sys.stderr)
        return 2
    except OSError as exc:  # a disk error, a file gone while reading
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"rmqlab {args.command}: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


def command() -> int:
    """What the ``rmqlab`` program runs (:func:`program`): :func:`main` in a process
    of its own, with imports fitted to a command (a library caller's process is left
    alone): pyarrow imports pandas at its first array, ~0.2 s of a
    command's start, for conversions no command makes, so this process is told that
    pandas is absent; construct imports pdb for its debugger, ~10 ms, loaded here
    only if something uses it."""
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _CommandImports())
    code = main()
    try:
        sys.stdout.flush()  # what is still buffered, while a closed pipe can be told apart
    except BrokenPipeError:
        _stdout_to_devnull()
    return code


def program() -> NoReturn:
    """The ``rmqlab`` console script and ``python -m rmqlab``: :func:`command`, and then
    the process ends without the interpreter's teardown of its modules (numpy's, Arrow's
    and rmqlab's ~330 modules freed one by one: ~35 ms, a tenth of a command on a sample
    store), as nothing of a command is left to it: what is registered to run at exit
    still runs (temporary directories' finalizers, logging, Spark's stop) and the
    standard streams are flushed. A command that left a thread of its own running
    (not a daemon) ends as the interpreter ends it, waiting for that thread."""
    code = command()
    import threading

    run_exit_functions = getattr(__import__("atexit"), "_run_exitfuncs", None)  # CPython's; absent elsewhere
    if run_exit_functions is None or any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    run_exit_functions()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            _stdout_to_devnull()
        except (OSError, ValueError):  # a stream closed, or without a file
            pass
    import os

    os._exit(code)


def _stdout_to_devnull() -> None:
    """The reader of stdout has gone (`| head`): point stdout at /dev/null, so that the
    interpreter's last flush at exit does not print "Exception ignored ... BrokenPipeError"
    on stderr (Python's documented recipe, "Note on SIGPIPE")."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test's capture)
        pass


class _CommandImports:
    """An import finder for the command's process: pandas is not installed (pyarrow
    then goes without); modules in :attr:`LAZY` are loaded when first used, not when
    imported (``importlib.util.LazyLoader``)."""

    LAZY = frozenset({"pdb"})

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("pandas is not loaded by the rmqlab command", name=name)
        if name in self.LAZY:
            import importlib.machinery
            import importlib.util

            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                spec.loader = importlib.util.LazyLoader(spec.loader)
            return spec
        return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(command())
