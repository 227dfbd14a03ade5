"""Differential runs against the live RocketMQ oracle, in three directions:

- ``rmqlab_to_rocketmq``: rmqlab writes a workload (a clean shutdown, and a crash);
  RocketMQ loads each (recovering the crash), reads everything back, appends more and
  shuts down; rmqlab must read what RocketMQ read, recover the crash where RocketMQ
  did, and read RocketMQ's appended store as RocketMQ reads it.
- ``rocketmq_to_rmqlab``: RocketMQ writes the workload (a clean shutdown, and a copy of
  its live files: a crash); rmqlab reads the clean store as RocketMQ does (and
  ``verify`` finds nothing wrong in it), and recovers the crash where RocketMQ does.
- ``damaged``: RocketMQ's crashed store, damaged (bit flips, a zeroed page, a torn
  tail, a cut file, a deleted queue or index, an old checkpoint, garbage after the end,
  zeroed queue entries); RocketMQ's recovery on one copy and rmqlab's on another must
  end the same: mode, end offset, surviving records, queues, index answers.

Each run is batched in rounds so that the oracle JVM serves many stores at once; the
answer is ``{case name: [differences]}`` (empty lists where rmqlab agrees).
"""

from __future__ import annotations

import shutil
import traceback
from pathlib import Path
from typing import Callable

from rmqlab.config import MessageStoreConfig
from rmqlab.writers.clock import ManualClock
from rmqlab.forensics.verify import verify_store
from rmqlab.recovery import recover
from rmqlab.releases import release as release_named
from rmqlab.store import open_store

from tests.oracle.compare import compare_all, compare_recovery, index_file_name_collisions
from tests.oracle.harness import Oracle, load_request, write_request
from tests.oracle.workload import OLDER_DAMAGE_KINDS, broker_checkpoint, damage, odd_topics_workload, older_damage, random_workload, release_damage, rmqlab_write, write_lines

#: new index files of a recovery are named by this clock (after every store timestamp)
CLOCK_MS = 4_000_000_000_000
#: stores whose index answers were not compared: RocketMQ named two index files alike
#: (see tests.oracle.compare.index_file_name_collisions); the long run counts them
INDEX_NOT_COMPARED: list[str] = []


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _guard(fn: Callable[[], list[str]]) -> list[str]:
    """A traceback on rmqlab's side is a difference too, with its stack."""
    try:
        return fn()
    except Exception:
        return ["rmqlab raised:\n" + traceback.format_exc(limit=-6)]


def _answer_error(ans: dict) -> list[str]:
    return [] if ans.get("ok") else [f"RocketMQ failed: {ans.get('error')}\n{(ans.get('trace') or '')[:1500]}"]


def recover_and_read(root: Path, out: Path, config: dict, dump: dict, release: str = "5.3.3") -> list[str]:
    """rmqlab recovers a copy (``recover --out``) of what RocketMQ loaded.  Even a clean
    shutdown goes through recovery: RocketMQ's normal recovery re-dispatches the records
    after the consume queues' max physical offset (a trailing PREPARED or ROLLBACK
    record, which no queue holds), and indexes their keys again."""
    cfg = MessageStoreConfig.from_mapping(config)
    # the release's start-up rules (4.x: the last three files; 5.4+: the capped walk back)
    rep = recover(root, config=cfg, out=out, clock=ManualClock(CLOCK_MS, tick_ms=1), rocketmq_version=release)
    diffs = compare_recovery(rep, dump)
    if not dump["recovery"].get("loadResult", True) or not rep.load_ok:
        return diffs
    # RocketMQ's index answers after a rebuild that reused a file name are timing, not rule
    index = "exact"
    if index_file_name_collisions(dump["recovery"]):
        index = "skip"
        INDEX_NOT_COMPARED.append(str(root))
    elif release.startswith("4."):
        # 4.9's start() re-dispatches from the consume queues' max offset and can index a
        # trailing record again where 5.3 does not; rmqlab models 5.3 (listed in docs/compatibility.md)
        index = "skip"
    # a log with a file missing (RocketMQ loads it, checkSelf logs the gap) is read as
    # RocketMQ reads it, strict or not
    with open_store(out, cfg) as store:
        return diffs + compare_all(store, dump, end=rep.commitlog_end, index=index)


def verify_clean(root: Path, config: dict, written: dict) -> list[str]:
    """``verify`` finds nothing wrong in a store RocketMQ wrote and shut down.  Where
    RocketMQ named two index files alike while writing (``written``: its write answer,
    see :func:`tests.oracle.compare.index_file_name_collisions`), the second reopened the
    first's file and wrote its own header over slots the first filled: those index
    findings are RocketMQ's timing (the store is counted in INDEX_NOT_COMPARED)."""
    alike = set(index_file_name_collisions(written))
    rep = verify_store(root, MessageStoreConfig.from_mapping(config))
    errors = [f for f in rep.errors if not (f.kind.startswith("INDEX_") and Path(f.file).name in alike)]
    if len(errors) < len(rep.errors):
        INDEX_NOT_COMPARED.append(str(root))
    return [f"verify on a store RocketMQ wrote and shut down cleanly: {f}" for f in errors]


def rmqlab_to_rocketmq(oracle: Oracle, seeds: list[int], tmp: Path, release: str = "5.3.3") -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    jobs = []
    for seed in seeds:
        d = tmp / f"w{seed}"
        d.mkdir(parents=True)
        config, lines = random_workload(seed)
        _, more = random_workload(seed + 1_000_000, n=15)
        try:
            rmqlab_write(d / "clean", config, lines)
            rmqlab_write(d / "crash", config, lines, crash=True)
        except Exception:
            out[f"rmqlab->rocketmq seed {seed}"] = ["rmqlab raised while writing:\n" + traceback.format_exc(limit=-6)]
            continue
        _copy(d / "clean", d / "clean.rocketmq")
        _copy(d / "crash", d / "crash.rocketmq")
        jobs.append((seed, d, config, write_lines(d / "more.jsonl", more)))
    first = oracle.map(
        r for seed, d, config, more in jobs
        for r in (load_request(d / "clean.rocketmq", config, append=more), load_request(d / "crash.rocketmq", config))
    )
    second_jobs = []
    for i, (seed, d, config, more) in enumerate(jobs):
        clean_ans, crash_ans = first[2 * i], first[2 * i + 1]
        name = f"rmqlab->rocketmq {release} seed {seed}" if release != "5.3.3" else f"rmqlab->rocketmq seed {seed}"
        out[name] = _answer_error(clean_ans) or _guard(lambda: recover_and_read(d / "clean", d / "clean.rmqlab", config, clean_ans, release))
        out[name + " crash"] = _answer_error(crash_ans) or _guard(lambda: recover_and_read(d / "crash", d / "crash.rmqlab", config, crash_ans, release))
        if clean_ans.get("ok"):
            failed = [r for r in clean_ans.get("appendResults", []) if r["status"] != "PUT_OK"]
            if failed:
                out[name] += [f"RocketMQ could not append to rmqlab's store: {failed[:3]}"]
            _copy(d / "clean.rocketmq", d / "appended.copy")
            second_jobs.append((seed, d, config))
    second = oracle.map(load_request(d / "appended.copy", config) for seed, d, config in second_jobs)
    for (seed, d, config), ans in zip(second_jobs, second):
        out[f"rmqlab->rocketmq{'' if release == '5.3.3' else ' ' + release} seed {seed} appended by RocketMQ"] = _answer_error(ans) or _guard(
            lambda: recover_and_read(d / "clean.rocketmq", d / "appended.rmqlab", config, ans, release))
    return out


def rocketmq_written(oracle: Oracle, seeds: list[int], tmp: Path, release: str = "5.3.3", workload=random_workload) -> list[tuple[int, Path, dict, dict]]:
    """RocketMQ writes each seed's workload: ``(seed, dir, config, answer)`` with
    ``dir/clean`` (shut down) and ``dir/crash`` (its live files copied: a SIGKILL).
    ``workload``: :func:`~tests.oracle.workload.random_workload`, or
    :func:`~tests.oracle.workload.long_workload` for stores of more than ten files."""
    jobs = []
    for seed in seeds:
        d = tmp / f"r{seed}"
        d.mkdir(parents=True)
        config, lines = workload(seed, release=release)
        jobs.append((seed, d, config, write_request(d / "clean", config, write_lines(d / "in.jsonl", lines), crash_copy=d / "crash")))
    answers = oracle.map(req for *_, req in jobs)
    return [(seed, d, config, ans) for (seed, d, config, _), ans in zip(jobs, answers)]


def rocketmq_to_rmqlab(oracle: Oracle, seeds: list[int], tmp: Path, written=None, release: str = "5.3.3") -> dict[str, list[str]]:
    written = written if written is not None else rocketmq_written(oracle, seeds, tmp, release)
    out: dict[str, list[str]] = {}
    ok = []
    for seed, d, config, ans in written:
        if not ans.get("ok"):
            out[f"rocketmq->rmqlab seed {seed}"] = _answer_error(ans)
            continue
        _copy(d / "clean", d / "clean.rocketmq")
        _copy(d / "crash", d / "crash.rocketmq")
        ok.append((seed, d, config, ans))
    answers = oracle.map(r for seed, d, config, _ in ok for r in (load_request(d / "clean.rocketmq", config), load_request(d / "crash.rocketmq", config)))
    for i, (seed, d, config, written_ans) in enumerate(ok):
        clean_ans, crash_ans = answers[2 * i], answers[2 * i + 1]
        name = f"rocketmq {release}->rmqlab seed {seed}" if release != "5.3.3" else f"rocketmq->rmqlab seed {seed}"
        out[name] = _answer_error(clean_ans) or _guard(lambda: recover_and_read(d / "clean", d / "clean.rmqlab", config, clean_ans, release) + verify_clean(d / "clean", config, written_ans))
        out[name + " crash"] = _answer_error(crash_ans) or _guard(lambda: recover_and_read(d / "crash", d / "crash.rmqlab", config, crash_ans, release))
    return out


def both_recover(oracle: Oracle, cases: list[tuple[Path, dict]], release: str = "5.3.3") -> list[tuple[dict, list[str]]]:
    """For each ``(base, config)``: RocketMQ loads ``base/rocketmq`` and rmqlab recovers
    ``base/store`` (two copies of one store) into ``base/rmqlab``; RocketMQ's answer and
    every difference, in order."""
    answers = oracle.map(load_request(base / "rocketmq", config) for base, config in cases)
    return [
        (ans, _answer_error(ans) or _guard(lambda: recover_and_read(base / "store", base / "rmqlab", config, ans, release)))
        for (base, config), ans in zip(cases, answers)
    ]


def damaged(oracle: Oracle, written, damage_seeds: list[int], tmp: Path, release: str = "5.3.3", how=damage) -> dict[str, list[str]]:
    """Each damage seed damages one of RocketMQ's crashed stores: the one written from
    the same seed when there is one, else the next in turn.  ``how``:
    :func:`~tests.oracle.workload.damage`, or :func:`~tests.oracle.workload.release_damage`
    (where the releases' start-up rules part)."""
    usable = [(seed, d, config) for seed, d, config, ans in written if ans.get("ok")]
    by_seed = {u[0]: u for u in usable}
    jobs = []
    out: dict[str, list[str]] = {}
    for i, ds in enumerate(damage_seeds):
        # the store of the workload with the same seed where there is one, so that a seed
        # alone reproduces a damaged case (--seeds N); else round robin
        seed, d, config = by_seed.get(ds) or usable[i % len(usable)]
        base = tmp / f"d{ds}"
        _copy(d / "crash", base / "store")
        what = how(base / "store", ds)
        _copy(base / "store", base / "rocketmq")
        jobs.append((ds, base, config, what))
    results = both_recover(oracle, [(base, config) for ds, base, config, what in jobs], release)
    for (ds, base, config, what), (_, diffs) in zip(jobs, results):
        name = f"damaged{'' if release == '5.3.3' else ' ' + release} seed {ds} ({what['kind']}: {', '.join(f'{k}={v}' for k, v in what.items() if k not in ('kind', 'seed'))})"
        out[name] = diffs
    return out


def odd_topics(oracle: Oracle, seeds: list[int], tmp: Path, release: str = "5.3.3", n: int = 2500, hang_after: float = 60) -> dict[str, list[str]]:
    """Stores RocketMQ writes from :func:`~tests.oracle.workload.odd_topics_workload`
    (long, retry and trace topic names; queues of several files; small index files),
    each damaged every way of :data:`~tests.oracle.workload.OLDER_DAMAGE_KINDS` after a
    crash, with the checkpoint a broker would have flushed
    (:func:`~tests.oracle.workload.broker_checkpoint`), and its clean shutdown with its
    first commitlog file deleted; RocketMQ's recovery and rmqlab's end the same.  Where
    RocketMQ's start-up never ends (4.x: no answer in ``hang_after`` seconds), rmqlab's
    plan must say so (``start_hangs``)."""
    written = rocketmq_written(oracle, seeds, tmp, release, workload=lambda seed, release: odd_topics_workload(seed, release, n))
    jobs, out = [], {}
    for seed, d, config, ans in written:
        if not ans.get("ok"):
            out[f"odd topics {release} seed {seed} (write: RocketMQ failed)"] = _answer_error(ans)
            continue
        for i, kind in enumerate(OLDER_DAMAGE_KINDS):
            base = tmp / f"odd{seed}-{kind}"
            _copy(d / "crash", base / "store")
            broker_checkpoint(base / "store")
            # a damage seed of this kind, drawn from the store's seed
            what = older_damage(base / "store", seed * len(OLDER_DAMAGE_KINDS) + i)
            _copy(base / "store", base / "rocketmq")
            jobs.append((f"odd topics {release} seed {seed} ({kind}: {', '.join(f'{k}={v}' for k, v in what.items() if k not in ('kind', 'seed'))})", base, config))
        base = tmp / f"odd{seed}-clean"
        _copy(d / "clean", base / "store")
        first = sorted((base / "store" / "commitlog").iterdir())[0]
        first.unlink()
        _copy(base / "store", base / "rocketmq")
        jobs.append((f"odd topics {release} seed {seed} (first_log_file_gone: clean, {first.name})", base, config))
    if not release_named(release).start_waits_for_reput:
        for (name, _, _), (_, diffs) in zip(jobs, both_recover(oracle, [(base, config) for _, base, config in jobs], release)):
            out[name] = diffs
        return out
    # 4.x: a start-up can wait forever (rmqlab.recovery.recover._start_waits_forever), so
    # each store is loaded alone, and a JVM that gives no answer is replaced
    from concurrent.futures import TimeoutError as FutureTimeout

    from tests.oracle.harness import build_or_skip

    own = Oracle(build_or_skip(release), threads=1)
    try:
        for name, base, config in jobs:
            try:
                ans = own.submit(load_request(base / "rocketmq", config)).result(timeout=hang_after)
            except FutureTimeout:
                own.proc.kill()
                own.close()
                own = Oracle(build_or_skip(release), threads=1)
                told = recover(base / "store", config=MessageStoreConfig.from_mapping(config), rocketmq_version=release)
                out[name] = [] if told.start_hangs else [f"RocketMQ {release} gave no answer in {hang_after} s (its start-up waits forever); rmqlab says it starts"]
                continue
            diffs = _answer_error(ans) or _guard(lambda: recover_and_read(base / "store", base / "rmqlab", config, ans, release))
            out[name] = diffs
    finally:
        own.proc.kill()
        own.close()
    return out
