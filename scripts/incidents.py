"""The long run of the incident campaign (tests/oracle/incidents.py): RocketMQ 5.3.3 writes
the bases, then every page of the log is zeroed in turn and a body byte of every record
flipped in turn, each on its own copy; RocketMQ's own start on another copy says where
the log ends, and rmqlab must name the cause, count the acknowledged messages lost (and
those flushed) as the truth does, and tell one story in every command.  Prints each
disagreement and exits 1 if there was any.

    python scripts/incidents.py [--every 16] [--flush ASYNC_FLUSH] [--kinds page flip]

``--every N`` takes every Nth page and record (1: all of them; the suite runs the
campaign's named incidents once, ``tests/oracle/test_incidents.py``).  Needs a JDK and
Maven (the harness builds itself, as in the suite).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.oracle import incidents  # noqa: E402
from tests.oracle.harness import Oracle, build_or_skip  # noqa: E402


def sweep(base: incidents.Base, kinds: list[str], every: int) -> list[tuple[str, str, object]]:
    """``(name, flush, damage)`` for every page and record (every ``every``-th)."""
    cases = []
    if "page" in kinds:
        for path in base.files(base.crash):
            n = int(path.name) // incidents.FILE
            last = max(r["physicalOffset"] + r["size"] for r in base.records if r["physicalOffset"] // incidents.FILE == n) % incidents.FILE or incidents.FILE
            for page in range(0, last, incidents.PAGE)[::every]:
                cases.append((f"page {page} of {path.name} zeroed", base.flush, _zero_page(n, page)))
    if "flip" in kinds:
        with_body = [r for r in base.records if incidents.body_length(base.crash / "commitlog" / f"{r['physicalOffset'] // incidents.FILE * incidents.FILE:020d}", r) > 0]
        for r in with_body[::every]:
            cases.append((f"a body byte of the record at {r['physicalOffset']} flipped", base.flush, _flip(r)))
    return cases


def _zero_page(n: int, page: int):
    """A page of file ``n`` zeroed.  Its cause is not named beforehand (a page may break
    one record, run into the zero tail, or lie in a file the walk never reads): it is
    asked to be what rmqlab names where RocketMQ's walk stopped (:func:`judge_sweep`)."""
    def damage(base: incidents.Base, root: Path):
        incidents._zero(root / "commitlog" / f"{n * incidents.FILE:020d}", page, incidents.PAGE)
        return None

    return damage


def _flip(r: dict):
    def damage(base: incidents.Base, root: Path):
        path = root / "commitlog" / f"{r['physicalOffset'] // incidents.FILE * incidents.FILE:020d}"
        incidents._flip_body(path, r)
        return ("BODY_CRC", path, r["physicalOffset"] % incidents.FILE)

    return damage


def judge_sweep(inc: incidents.Incident) -> list[str]:
    """:func:`incidents.judge`; a zeroed page's cause is taken as rmqlab names it, and
    asked to lie where RocketMQ's walk stopped."""
    if inc.cause is not None:
        return incidents.judge(inc)
    from rmqlab.recovery import recover

    rep = recover(inc.root)
    inc.cause = None if rep.cause is None else (rep.cause.kind, Path(rep.cause.file), rep.cause.file_offset)
    wrong = incidents.judge(inc)
    if rep.cause is not None and inc.loads and rep.cause.physical_offset > inc.end + incidents.PAGE:
        wrong.append(f"{inc.name}: the cause {rep.cause.line()} lies past RocketMQ's end of the log {inc.end}")
    return wrong


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=16, help="every Nth page and record (default 16; 1: all)")
    ap.add_argument("--flush", choices=incidents.FLUSHES, default="ASYNC_FLUSH")
    ap.add_argument("--kinds", nargs="+", choices=("page", "flip"), default=["page", "flip"])
    args = ap.parse_args()
    t0 = time.monotonic()
    wrong: list[str] = []
    with Oracle(build_or_skip("5.3.3")) as rmq, tempfile.TemporaryDirectory() as tmp:
        bases = incidents.bases(rmq, Path(tmp) / "bases")
        cases = sweep(bases[args.flush], args.kinds, max(1, args.every))
        for start in range(0, len(cases), 24):  # a few dozen copies at a time
            chunk = Path(tmp) / f"chunk-{start}"
            made = incidents.make(rmq, bases, chunk, cases[start : start + 24])
            for inc in made:
                found = judge_sweep(inc)
                wrong += found
                print(f"{'WRONG' if found else 'ok   '} {inc.name}" + "".join(f"\n      {w}" for w in found), flush=True)
    print(f"{len(cases)} incident(s), {len(wrong)} disagreement(s), {time.monotonic() - t0:.0f} s")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
