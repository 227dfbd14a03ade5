"""The ``rmqlab`` command line: one module per command.

Each command module defines ``add_parser(subparsers)`` and ``run(args) -> int``.
Human output goes to stdout, problems to stderr; an :class:`~rmqlab.errors.RmqlabError`
becomes one line on stderr (file and offset first) and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import RmqlabError

#: command modules in the order ``--help`` lists them
COMMANDS = [
    "info",
    "dump",
    "lookup",
    "queue",
    "hexdump",
    "write",
    "recover",
    "verify",
    "salvage",
    "diff",
    "generate",
    "samples",
    "demo",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rmqlab", description="Read, write, recover and investigate Apache RocketMQ store files.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        try:
            module = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue  # command not built yet
            raise
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except RmqlabError as exc:
        print(f"rmqlab {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `rmqlab dump ... | head`
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
