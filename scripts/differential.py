"""The long differential run against a live Apache RocketMQ (the oracle of tests/oracle).

    .venv/bin/python scripts/differential.py --workloads 1000 --damaged 1000 --out bench/out/differential
    .venv/bin/python scripts/differential.py --release 5.5.0 --workloads 1000 --damaged 1000 --out bench/out/differential-5.5.0

Writes random workloads with rmqlab and with RocketMQ, damages RocketMQ's crashed
stores (the classic kinds, and their older files: ``--older-damaged``), and for 5.4+
stores of ~30 files where the releases' start-up rules part (``--release-damaged``),
stores of long, retry and trace topic names damaged in their older files
(``--odd-topics``),
and compares every answer (see tests/oracle/differential.py).  Prints a table
of cases / equal / different per direction; every difference is saved as a reproducer
(``OUT/differences/<case>.json``: the seed, the workload and the differences) and
``--seeds`` runs chosen seeds again.  Runs in rounds of ``--round`` seeds so that the
oracle JVM serves many stores at once and the scratch space stays small.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.oracle import differential as D  # noqa: E402
from tests.oracle.harness import Oracle  # noqa: E402
from tests.oracle.workload import DAMAGE_KINDS, OLDER_DAMAGE_KINDS, RELEASE_DAMAGE_KINDS, long_workload, odd_topics_workload, older_damage, random_workload, release_damage  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=1000, help="random workloads in each direction")
    ap.add_argument("--damaged", type=int, default=1000, help="damaged stores")
    ap.add_argument("--first-seed", type=int, default=10_000)
    ap.add_argument("--seeds", type=int, nargs="*", help="run exactly these seeds (every direction)")
    ap.add_argument("--round", type=int, default=24, help="seeds per round")
    ap.add_argument("--threads", type=int, default=8, help="oracle JVM threads")
    ap.add_argument("--restart-every", type=int, default=4, help="rounds one oracle JVM serves before a fresh one takes over "
                    "(RocketMQ 5.4+ leaves threads behind with every store it opens: a JVM serving thousands dies of it)")
    ap.add_argument("--out", default="bench/out/differential", help="where the table and reproducers go")
    ap.add_argument("--release", default="5.3.3", choices=["5.3.3", "4.9.7", "5.4.0", "5.5.0", "5.5.1"],
                    help="RocketMQ release of the oracle (4.9.7: RocketMQ writes and damaged stores only, with 4.x's recovery rule)")
    ap.add_argument("--older-damaged", type=int, default=None,
                    help="stores damaged away from their tail (tests.oracle.workload.OLDER_DAMAGE_KINDS; default: as many as --damaged)")
    ap.add_argument("--release-damaged", type=int, default=None,
                    help="stores of more than ten commitlog files damaged where the releases' start-up rules part "
                         "(tests.oracle.workload.RELEASE_DAMAGE_KINDS; default: as many as --damaged for 5.4+, none before)")
    ap.add_argument("--odd-topics", type=int, default=None,
                    help="stores of long, retry and trace topic names with queues of several files (tests.oracle.workload.odd_topics_workload), "
                         "each damaged every older-file way and shut down with its first commitlog file gone (default: one per round)")
    args = ap.parse_args(argv)

    out = Path(args.out)
    (out / "differences").mkdir(parents=True, exist_ok=True)
    seeds = args.seeds if args.seeds else list(range(args.first_seed, args.first_seed + args.workloads))
    damage_seeds = args.seeds if args.seeds else list(range(args.first_seed, args.first_seed + args.damaged))
    n_release = args.release_damaged if args.release_damaged is not None else (args.damaged if args.release >= "5.4" else 0)
    release_seeds = args.seeds if args.seeds else list(range(args.first_seed, args.first_seed + n_release))
    n_older = args.older_damaged if args.older_damaged is not None else args.damaged
    older_seeds = args.seeds if args.seeds else list(range(args.first_seed, args.first_seed + n_older))
    n_rounds = max(1, (len(seeds) + max(1, args.round) - 1) // max(1, args.round))
    n_odd = args.odd_topics if args.odd_topics is not None else n_rounds
    odd_seeds = args.seeds if args.seeds else list(range(args.first_seed, args.first_seed + n_odd))
    table: dict[str, list[int]] = {}  # direction -> [cases, equal, different]
    kinds: dict[str, list[int]] = {}
    t0 = time.time()
    oracle = Oracle.start(threads=args.threads, release=args.release)
    try:
        print(f"oracle: Apache RocketMQ {oracle.rocketmq_version}", flush=True)
        per_round = max(1, args.round)
        dmg_per_round = max(1, (len(damage_seeds) + len(seeds) - 1) // max(1, len(seeds)) * per_round)
        rel_per_round = max(1, (len(release_seeds) + len(seeds) - 1) // max(1, len(seeds)) * per_round)
        old_per_round = max(1, (len(older_seeds) + len(seeds) - 1) // max(1, len(seeds)) * per_round)
        odd_per_round = (len(odd_seeds) + n_rounds - 1) // n_rounds
        for r in range(0, max(len(seeds), 1), per_round):
            if r and (r // per_round) % max(1, args.restart_every) == 0:
                oracle.close()
                oracle = Oracle.start(threads=args.threads, release=args.release)
            chunk = seeds[r : r + per_round]
            dchunk = damage_seeds[r // per_round * dmg_per_round : (r // per_round + 1) * dmg_per_round]
            rchunk = release_seeds[r // per_round * rel_per_round : (r // per_round + 1) * rel_per_round]
            ochunk = older_seeds[r // per_round * old_per_round : (r // per_round + 1) * old_per_round]
            oddchunk = odd_seeds[r // per_round * odd_per_round : (r // per_round + 1) * odd_per_round]
            tmp = Path(tempfile.mkdtemp(prefix="rmqlab-diff-"))
            try:
                results = {}
                if not args.release.startswith("4."):
                    results["rmqlab writes, RocketMQ reads"] = D.rmqlab_to_rocketmq(oracle, chunk, tmp, release=args.release)
                written = D.rocketmq_written(oracle, chunk, tmp, release=args.release)
                results["RocketMQ writes, rmqlab reads"] = D.rocketmq_to_rmqlab(oracle, chunk, tmp, written=written, release=args.release)
                if dchunk:
                    results["damaged, both recover"] = D.damaged(oracle, written, dchunk, tmp, release=args.release)
                if ochunk:
                    results["damaged older files, both recover"] = D.damaged(oracle, written, ochunk, tmp / "older", release=args.release, how=older_damage)
                if oddchunk:
                    results["odd topics: older files damaged, a clean log's first file gone"] = D.odd_topics(oracle, oddchunk, tmp / "odd", release=args.release)
                if rchunk:
                    # two stores of ~30 files a round, each damaged many ways
                    long_written = D.rocketmq_written(oracle, chunk[:2], tmp / "long", release=args.release, workload=long_workload)
                    results["damaged where releases part, both recover"] = D.damaged(oracle, long_written, rchunk, tmp / "long", release=args.release,
                                                                                     how=release_damage)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            for direction, res in results.items():
                row = table.setdefault(direction, [0, 0, 0])
                for name, diffs in res.items():
                    row[0] += 1
                    row[1 if not diffs else 2] += 1
                    if direction.startswith(("damaged", "odd")):
                        kind = re.search(r"\((\w+):", name).group(1)
                        k = kinds.setdefault(kind, [0, 0, 0])
                        k[0] += 1
                        k[1 if not diffs else 2] += 1
                    if diffs:
                        seed = int(re.search(r"seed (\d+)", name).group(1))
                        workload = long_workload if direction.startswith("damaged where") else odd_topics_workload if direction.startswith("odd") else random_workload
                        config, lines = workload(seed, release=args.release)
                        slug = re.sub(r"[^A-Za-z0-9]+", "-", name)[:80]
                        (out / "differences" / f"{slug}.json").write_text(json.dumps(
                            {"case": name, "seed": seed, "config": config, "workload": lines, "differences": diffs}, indent=1, ensure_ascii=False))
            done = min(r + per_round, len(seeds))
            print(f"[{time.time() - t0:7.0f} s] {done}/{len(seeds)} seeds: " + "; ".join(f"{d}: {v[2]} of {v[0]} differ" for d, v in table.items()), flush=True)
            (out / "table.md").write_text(_table(table, kinds, time.time() - t0, oracle.rocketmq_version, f" (partial: {done} of {len(seeds)} seeds)") + "\n")
    finally:
        oracle.close()
    text = _table(table, kinds, time.time() - t0, oracle.rocketmq_version)
    (out / "table.md").write_text(text + "\n")
    print(text)
    return 1 if any(v[2] for v in table.values()) else 0


def _table(table: dict, kinds: dict, seconds: float, version: str, partial: str = "") -> str:
    """The run's table in Markdown (written after every round too, marked partial, so
    that a run stopped early still leaves what it compared)."""
    lines = ["| direction | cases | equal | different |", "|---|---|---|---|"]
    lines += [f"| {d} | {c} | {e} | {x} |" for d, (c, e, x) in table.items()]
    lines += ["", "| damage | cases | equal | different |", "|---|---|---|---|"]
    every = DAMAGE_KINDS + OLDER_DAMAGE_KINDS + RELEASE_DAMAGE_KINDS + ["first_log_file_gone"]
    lines += [f"| {k} | {c} | {e} | {x} |" for k, (c, e, x) in sorted(kinds.items(), key=lambda kv: every.index(kv[0]) if kv[0] in every else len(every))]
    lines += ["", f"Index answers not compared (RocketMQ named two index files alike within one millisecond, so its answers "
              f"depend on timing): {len(D.INDEX_NOT_COMPARED)} stores; everything else of them was compared.",
              "", f"{seconds:.0f} s, Apache RocketMQ {version}{partial}"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
