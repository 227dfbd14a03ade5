"""``rmqlab verify STORE`` — check every record, queue entry, index chain and state file.

Keeps going after damage and reports every finding with its kind, severity, file and
byte offset.  Exit status: 0 when there is no error, 1 when there are errors.
Read-only.
"""

from __future__ import annotations

import argparse

from .common import add_progress_option, add_release_option, add_store_options, commitlog_bytes, config_from_args, print_json, progress_bar


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("verify", help="check everything in a store and keep going", description=__doc__)
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object: ok, stats, findings")
    p.add_argument("--errors-only", action="store_true", help="only print findings of severity error")
    add_release_option(p)
    add_progress_option(p)
    return p


def run(args) -> int:
    from ..forensics.verify import verify_store  # the compiled loops load with it: not for --help
    from ..recovery.consequences import complete_findings

    config = config_from_args(args)
    with progress_bar(args, commitlog_bytes(args.store, config), "verify") as bar:
        rep = verify_store(args.store, config, progress=bar, rocketmq_version=args.rocketmq_version)
    complete_findings(rep.findings, args.store, config, rocketmq_version=args.rocketmq_version)
    if args.errors_only:
        rep.findings = rep.errors
    if args.json:
        print_json(rep.to_dict())
    else:
        print(rep.to_text())
    return 0 if rep.ok else 1
