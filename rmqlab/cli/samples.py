"""``rmqlab samples [DIR]`` — write the sample stores the lessons use.

    rmqlab samples ./samples       # write clean/, crashed/ and damaged/ there
    rmqlab samples                 # into your data folder (in a source checkout:
                                   # the shipped copy, sample_stores/)

DIR must not hold them yet, unless --force. The package ships the same stores (the
lessons and ``rmqlab demo`` read those); this writes a copy you can change.

The generation is deterministic (fixed clock, fixed seed, UTC index file names): the
same command writes the same bytes on every machine.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("samples", help=HELP["samples"], description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", help="where to write them (default: the platform's per-user data folder, e.g. ~/.local/share/rmqlab/samples; in a source checkout the shipped copy)")
    p.add_argument("--force", action="store_true", help="replace sample stores that are already there")
    return p


def run(args) -> int:
    from ..lab.samples import default_dir, generate_samples

    target = Path(args.dir) if args.dir else default_dir()
    written = generate_samples(target, force=args.force)
    for name, info in written.items():
        print(f"{target / name}: {info}")
    return 0
