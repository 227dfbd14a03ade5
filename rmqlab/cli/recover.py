"""``rmqlab recover STORE`` — RocketMQ's start-up recovery, dry run by default.

    rmqlab recover STORE                 # what RocketMQ would do; changes nothing
    rmqlab recover STORE --out DIR       # copy STORE to DIR and recover the copy
    rmqlab recover STORE --in-place      # recover STORE itself; every cut byte is
                                         # saved first to STORE.rmqlab-cut-<time>/

Exit status: 0, or 1 when RocketMQ would refuse to load the store (a commitlog or
consume queue file of the wrong size: MappedFileQueue.load returns false and the
broker does not start); the report says why.  An applied recovery zero-pads such
files, so that its result loads.
"""

from __future__ import annotations

import argparse
import sys

from ..recovery import recover
from .common import add_release_option, add_store_options, config_from_args, print_json
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("recover", help=HELP["recover"], description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_store_options(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--dry-run", action="store_true", help="report what recovery would do (the default)")
    g.add_argument("--out", metavar="DIR", help="recover a copy written to DIR (must not exist)")
    g.add_argument("--in-place", action="store_true", help="recover STORE itself, saving every cut byte to a sidecar directory first")
    p.add_argument("--sidecar", metavar="DIR", help="where --in-place saves cut bytes (default: STORE.rmqlab-cut-<time> next to STORE)")
    add_release_option(p)
    p.add_argument("--legacy-three-files", action="store_true", help="normal recovery as RocketMQ 5.x up to 5.3.1: scan the last three commitlog files (4.x: --rocketmq-version 4.9.7, or told by config/topics.json)")
    p.add_argument("--no-crc", action="store_true", help="checkCRCOnRecover=false")
    p.add_argument("--force-verify-prop-crc", action="store_true", help="forceVerifyPropCRC=true: check the __CRC32# whole-record CRC")
    p.add_argument("--zero-tail", action="store_true", help="zero the commitlog bytes after the new end (RocketMQ leaves them)")
    p.add_argument("--reindex", action="store_true", help="rebuild every index file from every record of the log (beyond RocketMQ: no key a crash left unindexed stays unfindable)")
    p.add_argument("--keep-abort", action="store_true", help="leave abort and checkpoint as they are (next start recovers again)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    return p


def run(args) -> int:
    rep = recover(
        args.store,
        config=config_from_args(args),
        out=args.out,
        in_place=args.in_place,
        sidecar=args.sidecar,
        legacy_three_files=True if args.legacy_three_files else None,  # None: from what the store shows
        check_crc=False if args.no_crc else None,
        force_verify_prop_crc=args.force_verify_prop_crc,
        zero_tail=args.zero_tail,
        mark_clean=not args.keep_abort,
        check_lock=True,
        reindex=args.reindex,
        rocketmq_version=args.rocketmq_version,
    )
    if args.json:
        print_json(rep.to_dict())
    else:
        print(rep.to_text())
    if not rep.load_ok:
        print(f"rmqlab recover: RocketMQ would refuse to load this store: {rep.load_problems[0]}" + (f" (and {len(rep.load_problems) - 1} more)" if len(rep.load_problems) > 1 else ""), file=sys.stderr)
        return 1
    return 0
