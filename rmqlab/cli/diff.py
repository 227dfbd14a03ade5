"""``rmqlab diff STORE_A STORE_B`` — what changed between two captures, page by page.

Pages are compared by CRC-32C fingerprint; changed ranges are named as records
(commitlog), entries (consume queue), header/slots/entries (index) or fields
(checkpoint).  Exit status: 0 identical, 1 different (like diff(1)).  Read-only.
"""

from __future__ import annotations

import argparse

from ..forensics.diff import PAGE_SIZE, diff_stores
from .common import print_json
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("diff", help=HELP["diff"], description=__doc__)
    p.add_argument("a", metavar="STORE_A", help="first capture (store root, or a single file)")
    p.add_argument("b", metavar="STORE_B", help="second capture")
    p.add_argument("--page-size", type=int, default=PAGE_SIZE, help=f"fingerprint page size (default {PAGE_SIZE})")
    p.add_argument("--no-names", action="store_true", help="only ranges, do not name records/entries in them")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def run(args) -> int:
    rep = diff_stores(args.a, args.b, page_size=args.page_size, describe=not args.no_names)
    if args.json:
        print_json(rep.to_dict())
    else:
        print(rep.to_text())
    return 0 if rep.identical else 1
