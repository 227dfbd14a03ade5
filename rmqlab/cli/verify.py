"""``rmqlab verify STORE`` — check every record, queue entry, index chain and state file.

Keeps going after damage and reports every finding with its kind, severity, file and
byte offset.  Exit status: 0 when there is no error, 1 when there are errors.
With ``--against R``: the conformance report instead — every way the store departs from
what Apache RocketMQ release R writes and reads (exit status 1 when anything does).
Read-only.
"""

from __future__ import annotations

import argparse

from .common import add_progress_option, add_release_option, add_store_options, commitlog_bytes, config_from_args, print_json, progress_bar
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("verify", help=HELP["verify"], description=__doc__)
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object: ok, stats, findings")
    p.add_argument("--errors-only", action="store_true", help="only print findings of severity error")
    add_release_option(p)
    p.add_argument("--against", type=_apache_release, metavar="RELEASE",
                   help="print the conformance report against Apache RocketMQ RELEASE (e.g. 5.5.1) instead: every way the store departs "
                   "from what that release writes and reads, with counts, the first case's file and offset, the Java rule and what its broker does")
    add_progress_option(p)
    return p


def _apache_release(text: str) -> str:
    from ..releases import release

    try:
        rel = release(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if rel.writer != "apache":
        raise argparse.ArgumentTypeError(f"--against names an Apache RocketMQ release, not {rel.title}")
    return rel.name


def run(args) -> int:
    from ..forensics.verify import verify_store  # the compiled loops load with it: not for --help
    from ..forensics.consequences import complete_findings

    config = config_from_args(args)
    if args.against:
        from ..forensics.conformance import conformance

        conf = conformance(args.store, args.against, config)
        print_json(conf.to_dict()) if args.json else print(conf.to_text())
        return 0 if conf.conforms else 1
    with progress_bar(args, commitlog_bytes(args.store, config), "verify") as bar:
        rep = verify_store(args.store, config, progress=bar, rocketmq_version=args.rocketmq_version)
    complete_findings(rep.findings, args.store, config, rocketmq_version=args.rocketmq_version, recovery=rep.recovery)
    if args.errors_only:
        rep.findings = rep.errors
    if args.json:
        print_json(rep.to_dict())
    else:
        print(rep.to_text())
    return 0 if rep.ok else 1
