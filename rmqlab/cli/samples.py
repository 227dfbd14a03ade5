"""``rmqlab samples [DIR]`` — write the sample stores the lessons use.

    rmqlab samples                 # regenerate sample_stores/ of this checkout
    rmqlab samples /tmp/samples    # somewhere else (DIR must not hold them yet,
                                   # unless --force)

The generation is deterministic (fixed clock, fixed seed, UTC index file names): the
same command writes the same bytes on every machine.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("samples", help="write the sample stores the lessons use (deterministic)", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", help="where to write them (default: sample_stores/ of this checkout)")
    p.add_argument("--force", action="store_true", help="replace sample stores that are already there")
    return p


def run(args) -> int:
    from ..lab.samples import default_dir, generate_samples

    target = Path(args.dir) if args.dir else default_dir()
    written = generate_samples(target, force=args.force)
    for name, info in written.items():
        print(f"{target / name}: {info}")
    return 0
