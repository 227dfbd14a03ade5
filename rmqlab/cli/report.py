"""``rmqlab report STORE -o report.html`` — everything ``info``, ``verify``, ``recover
--dry-run``, ``offsets``, ``map`` and ``timers`` say of a store, in one file to attach
to a ticket: the verdict, the timeline of what was stored, the store's map with the
findings on it, the findings by kind with what the broker does with each, what recovery
would do per candidate release (and the command applying it to a copy), the consumer
groups against it, and the evidence (every file's size and SHA-256, this command,
rmqlab's version, the time).

The HTML needs nothing else to open — no network, no script — and ``--format json`` (or
``-o report.json``) holds the same content.  One pass over the log per part at most,
progress on stderr; a part that cannot be read says why and the rest stand.  Read-only.
Exit status: 0 when the report was written, whatever the store holds.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from ..errors import RmqlabError
from .common import add_progress_option, add_release_option, add_store_options, config_from_args, progress_bar, write_bytes
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("report", help=HELP["report"], description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_store_options(p)
    p.add_argument("-o", "--out", metavar="FILE", help="write the report here (.html, or .json for its data; default: stdout)")
    p.add_argument("--format", choices=("html", "json"), help="html (the default) or json (default: from --out's name)")
    add_release_option(p)
    add_progress_option(p)
    return p


def run(args) -> int:
    from ..report import SECTIONS, build_report, format_of

    out = Path(args.out) if args.out else None
    if out is not None and out.is_dir():
        raise RmqlabError(f"{out}: is a directory; -o names the report's file")
    rep = build_report(args.store, config=config_from_args(args), rocketmq_version=args.rocketmq_version,
                       progress=lambda stage, total: progress_bar(args, total, f"report: {stage}"),
                       command=shlex.join(["rmqlab", *args._argv]))
    if out is None:
        write_bytes(rep.text(args.format or format_of(None)).encode("utf-8"))
        return 0
    rep.write(out, args.format)
    v = rep.sections.get("verdict") or {}
    gone = [heading.lower() for key, heading in SECTIONS if "unavailable" in (rep.sections.get(key) or {})]
    cause = v.get("cause")
    print(f"{out}: {v.get('consequence', 'not judged')}"
          + (f" — the cause: {cause['kind']} at {cause['file']} @ {cause['file_offset']}" if cause else "")
          + (f"; {v['errors']} error(s), {v['warnings']} warning(s)" if v.get("errors") is not None else "")
          + (f"; the next start cuts {v['records_cut']} record(s)" if v.get("records_cut") else "")
          + (f"; could not be read: {', '.join(gone)}" if gone else ""), file=sys.stderr)
    return 0
