"""``rmqlab map STORE -o store.svg`` — the whole store in one picture: the log along its
offsets (bytes by topic, BLANK ends, damage, unwritten and dead bytes), the ends (served,
recovery's, the checkpoint's), verify's findings where they are, each consume queue and
index file over the range it covers, consumer groups' positions.  ``-o FILE.png`` draws
the same picture as a PNG (needs matplotlib); ``--json`` (or ``-o FILE.json``) gives the
same data.  One pass over the log for the picture, one for
``verify`` (``--no-verify`` skips it) and recovery's dry run; memory is the picture's
width × topics shown, whatever the store's size.  Read-only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import RmqlabError
from .common import add_progress_option, add_store_options, number, progress_bar, commitlog_bytes, print_json
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("map", help=HELP["map"], description=__doc__)
    add_store_options(p)
    p.add_argument("-o", "--out", metavar="FILE", help="write the picture (.svg, .png) or its data (.json) here (default: SVG on stdout)")
    p.add_argument("--json", action="store_true", help="the data as JSON on stdout")
    p.add_argument("--width", type=number(100, what="a width in pixels"), default=1200, help="pixels along the log (default 1200)")
    p.add_argument("--no-verify", action="store_true", help="leave verify's findings out (one pass less)")
    add_progress_option(p)
    return p


def run(args) -> int:
    from ..render.storemap import map_of_store, storemap_png, storemap_svg
    from .common import config_from_args

    out = Path(args.out) if args.out else None
    if out is not None and out.suffix.lower() not in (".svg", ".png", ".json"):
        raise RmqlabError(f"{out}: write .svg or .png (the picture) or .json (its data)")
    cfg = config_from_args(args)
    with progress_bar(args, commitlog_bytes(args.store, cfg), "map") as bar:
        m = map_of_store(args.store, config=cfg, width=args.width, verify=not args.no_verify, progress=bar)
    if args.json or (out is not None and out.suffix.lower() == ".json"):
        data = m.to_dict()
        if out is None:
            print_json(data)
        else:
            out.write_text(json.dumps(data), encoding="utf-8")
        return 0
    if out is None:
        print(storemap_svg(m))
        return 0
    if out.suffix.lower() == ".png":
        storemap_png(m, out)
    else:
        out.write_text(storemap_svg(m), encoding="utf-8")
    print(f"{out}: {len(m.files)} commitlog file(s), {len(m.queues)} queue(s), {len(m.index_files)} index file(s), {len(m.findings) + m.findings_left_out} finding(s)")
    return 0
