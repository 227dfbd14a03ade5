"""rmqlab against a live Apache RocketMQ 5.3.3, on seeded random workloads and damage.

A bounded run of :mod:`tests.oracle.differential` (the long one is
``scripts/differential.py``): every difference rmqlab shows from RocketMQ's own
reading fails the test, listed in full.  A seed names the workload, so a failure is
reproduced with ``scripts/differential.py --seeds N``.
"""

from __future__ import annotations

import re

import pytest

from tests.oracle import differential as D
from tests.oracle.workload import OLDER_DAMAGE_KINDS

RMQLAB_SEEDS = list(range(1, 7))
ROCKETMQ_SEEDS = list(range(101, 107))
DAMAGE_SEEDS = list(range(18))  # two of each kind of damage


def _failures(result: dict[str, list[str]]) -> str:
    lines = []
    for name, diffs in result.items():
        for d in diffs[:10]:
            lines.append(f"{name}: {d}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def rocketmq_stores(oracle, tmp_path_factory):
    """RocketMQ's own stores for the seeds: a clean shutdown and a crash of each."""
    return D.rocketmq_written(oracle, ROCKETMQ_SEEDS, tmp_path_factory.mktemp("rocketmq"))


def test_rocketmq_loads_recovers_and_appends_to_what_rmqlab_writes(oracle, tmp_path):
    result = D.rmqlab_to_rocketmq(oracle, RMQLAB_SEEDS, tmp_path)
    assert len(result) == 3 * len(RMQLAB_SEEDS)
    if any(result.values()):
        pytest.fail(_failures(result), pytrace=False)


def test_rmqlab_reads_and_recovers_what_rocketmq_writes(oracle, rocketmq_stores, tmp_path):
    result = D.rocketmq_to_rmqlab(oracle, ROCKETMQ_SEEDS, tmp_path, written=rocketmq_stores)
    assert len(result) == 2 * len(ROCKETMQ_SEEDS)
    if any(result.values()):
        pytest.fail(_failures(result), pytrace=False)


def test_recovery_of_damaged_rocketmq_stores_ends_where_rocketmq_ends(oracle, rocketmq_stores, tmp_path):
    result = D.damaged(oracle, rocketmq_stores, DAMAGE_SEEDS, tmp_path)
    assert len(result) == len(DAMAGE_SEEDS)
    if any(result.values()):
        pytest.fail(_failures(result), pytrace=False)


def test_stores_with_odd_topics_damaged_in_older_files_recover_as_rocketmq_does(oracle, tmp_path):
    """A store of long, retry and trace topic names with queues of several files
    (tests.oracle.workload.odd_topics_workload), crashed with a broker's checkpoint and
    damaged every older-file way, and shut down cleanly with its first commitlog file
    gone: RocketMQ 5.3.3's recovery and rmqlab's end the same, index answers included.
    (The long run draws more: scripts/differential.py --odd-topics.)"""
    result = D.odd_topics(oracle, [1], tmp_path, n=1500)
    assert len(result) == len(OLDER_DAMAGE_KINDS) + 1
    assert all(re.search(r"\((\w+): \S", name) for name in result), list(result)  # each damage was done
    if any(result.values()):
        pytest.fail(_failures(result), pytrace=False)


def test_damage_to_older_files_recovers_as_rocketmq_does(oracle, rocketmq_stores, tmp_path):
    """Damage away from the tail (tests.oracle.workload.OLDER_DAMAGE_KINDS) of stores
    RocketMQ 5.3.3 wrote with several files in every directory (the reference stores): a
    commitlog file missing from the middle (RocketMQ loads the log; its getMessage skips
    into the next file), an early queue unit zeroed, a queue's first file deleted, units
    past the end of the log appended to a queue.  RocketMQ's recovery and rmqlab's end
    the same, index answers included."""
    import json

    from tests.support import REFERENCE
    from tests.oracle.workload import OLDER_DAMAGE_KINDS, older_damage

    cases, names = [], []
    for case in ("crash", "crash-torn"):
        config = json.loads((REFERENCE / case / "dump.json").read_text())["storeConfig"]
        for ds in range(2 * len(OLDER_DAMAGE_KINDS)):
            base = tmp_path / f"{case}-{ds}"
            D._copy(REFERENCE / case / "store", base / "store")
            what = older_damage(base / "store", ds)
            assert len(what) > 2 or what["kind"] == "zero_old_unit", what  # the damage was done
            D._copy(base / "store", base / "rocketmq")
            cases.append((base, config))
            names.append(f"{case} seed {ds} ({what})")
    # and the first unit of a queue of more than three files zeroed (recovery scans from
    # the third-to-last file, so it stays; Java correctMinOffset keeps min offset 0 there:
    # "intact"), in the RocketMQ-written stores that have such a queue
    for seed, d, config, ans in rocketmq_stores:
        long_queues = [q for q in sorted((d / "crash" / "consumequeue").glob("*/*")) if len([f for f in q.iterdir() if f.is_file()]) > 3
                       and (q / ("0" * 20)).is_file()] if ans.get("ok") else []
        if long_queues:
            base = tmp_path / f"first-unit-{seed}"
            D._copy(d / "crash", base / "store")
            q = long_queues[0].relative_to(d / "crash")
            with open(base / "store" / q / ("0" * 20), "r+b") as fh:
                fh.write(bytes(20))
            D._copy(base / "store", base / "rocketmq")
            cases.append((base, config))
            names.append(f"seed {seed}, {q}'s unit 0 zeroed")
    assert any("unit 0 zeroed" in n for n in names), "no store has a queue of more than three files: the rule is not seen"
    failures = {name: diffs for name, (_, diffs) in zip(names, D.both_recover(oracle, cases))}
    if any(failures.values()):
        pytest.fail(_failures(failures), pytrace=False)


def test_rmqlab_reads_and_recovers_what_rocketmq_49_writes_and_recovers(oracle_49, tmp_path):
    """RocketMQ 4.9.7 writes (V1 records only); rmqlab reads and recovers its clean and
    crashed stores, and nine kinds of damage, with 4.x's normal-recovery rule (the last
    three files).  Time lookups and index answers are not compared: 4.9's search and its
    start's re-dispatch differ from 5.3's, which rmqlab implements."""
    written = D.rocketmq_written(oracle_49, ROCKETMQ_SEEDS[:4], tmp_path / "w", release="4.9.7")
    result = D.rocketmq_to_rmqlab(oracle_49, ROCKETMQ_SEEDS[:4], tmp_path / "w", written=written, release="4.9.7")
    result |= D.damaged(oracle_49, written, DAMAGE_SEEDS[:9], tmp_path / "d", release="4.9.7")
    assert len(result) == 2 * 4 + 9
    if any(result.values()):
        pytest.fail(_failures(result), pytrace=False)


def test_a_blank_claiming_more_than_its_file_ends_the_log_as_in_rocketmq(oracle, rocketmq_stores, tmp_path):
    """checkMessageAndReturnSize compares totalSize with the bytes left before it reads
    the magic: a BLANK whose size runs past its file is a failure, not a move to the
    next file (found by the acceptance paths' differential test; here RocketMQ says so)."""
    import struct

    from rmqlab.files import MappedFileQueue
    from rmqlab.format import commitlog as cl
    from rmqlab.scan.acceptance import scan_file

    cases = []
    for seed, d, config, ans in rocketmq_stores:
        if not ans.get("ok"):
            continue
        q = MappedFileQueue(d / "crash" / "commitlog")
        rolled = [(f.path.name, scan_file(f.buf, check_crc=False)) for f in q.files[:-1]]
        q.close()
        blank = next(((name, s.end) for name, s in rolled if s.blank), None)
        if blank is None:
            continue
        base = tmp_path / f"b{seed}"
        D._copy(d / "crash", base / "store")
        path = base / "store" / "commitlog" / blank[0]
        data = bytearray(path.read_bytes())
        assert struct.unpack_from(">iI", data, blank[1])[1] == cl.MAGIC_BLANK
        struct.pack_into(">i", data, blank[1], len(data) - blank[1] + 100)
        path.write_bytes(bytes(data))
        D._copy(base / "store", base / "rocketmq")
        cases.append((seed, base, config))
    assert cases, "no RocketMQ-written store rolled a commitlog file"
    failures = {}
    for (seed, _, _), (ans, diffs) in zip(cases, D.both_recover(oracle, [(base, config) for _, base, config in cases])):
        failures[f"seed {seed} (RocketMQ's end {ans.get('recovery', {}).get('commitLogMaxOffsetAfterRecovery')})"] = diffs
    if any(failures.values()):
        pytest.fail(_failures(failures), pytrace=False)


def test_message_index_safe_starts_abnormal_recovery_where_rocketmq_does(oracle, rocketmq_stores, tmp_path):
    """messageIndexSafe=true (Java isMappedFileMatchedRecover with getMinTimestampIndex):
    the crashed stores' checkpoints are given an index time older than their log's, so
    RocketMQ starts its abnormal recovery a file earlier, re-dispatching (and so
    re-indexing) what a dropped index file held; rmqlab's recovery with the same config
    ends the same, store for store (records, queues, index answers)."""
    from rmqlab.files import MappedFileQueue
    from rmqlab.format.checkpoint import CheckpointV5
    from rmqlab.format.layout import store_timestamp_at

    cases = []
    for seed, d, config, ans in rocketmq_stores:
        if not ans.get("ok"):
            continue
        q = MappedFileQueue(d / "crash" / "commitlog")
        firsts = [t for t in (store_timestamp_at(f.buf, 0) for f in q.files) if t]  # each file's first record
        q.close()
        if len(firsts) < 2:
            continue
        base = tmp_path / f"s{seed}"
        D._copy(d / "crash", base / "store")
        cp_path = base / "store" / "checkpoint"
        raw = cp_path.read_bytes()
        cp = dict(CheckpointV5.parse(raw[: CheckpointV5.sizeof()]))
        cp = {k: v for k, v in cp.items() if not k.startswith("_")}
        # the log and the queues flushed up to the newest file, the index only up to
        # the first: without the option recovery starts at the newest file
        cp["physic_msg_timestamp"] = cp["logics_msg_timestamp"] = firsts[-1] + 10_000
        cp["index_msg_timestamp"] = firsts[0]
        cp_path.write_bytes(CheckpointV5.build(cp) + raw[CheckpointV5.sizeof() :])
        D._copy(base / "store", base / "rocketmq")
        cases.append((seed, base, dict(config, messageIndexSafe="true")))
    assert cases, "no RocketMQ-written store has two commitlog files with records"
    from rmqlab.config import MessageStoreConfig
    from rmqlab.recovery import recover

    failures, earlier = {}, 0
    for (seed, base, config), (ans, diffs) in zip(cases, D.both_recover(oracle, [(base, config) for _, base, config in cases])):
        failures[f"seed {seed}"] = diffs
        # the start file, from RocketMQ's own log line, and whether the option moved it
        cfg = MessageStoreConfig.from_mapping(config)
        start = recover(base / "store", config=cfg).start_file
        logged = [line.rsplit("/", 1)[1] for line in ans["recovery"].get("logLines", []) if "recover from this mapped file" in line]
        if logged != [start]:
            failures[f"seed {seed}"].append(f"start file: rmqlab {start}, RocketMQ {logged}")
        earlier += start < recover(base / "store", config=cfg.replace(message_index_safe=False)).start_file
    if any(failures.values()):
        pytest.fail(_failures(failures), pytrace=False)
    assert earlier, "in no case did messageIndexSafe move the start file: the test would not see the rule"


def test_index_files_named_alike_while_writing_are_rocketmq_timing_not_findings(tmp_path):
    """The long run's seed 10143 (5.5.1): a store RocketMQ wrote held an index file whose
    slots point past its indexCount — two files named alike in one millisecond share a
    path, and the second's header governs the first's slots.  The write answer names
    the files (Oracle.write: ``indexFiles``); verify's index findings on such a file are
    not differences, any other finding still is."""
    import json
    import struct

    from rmqlab.format.indexfile import slot_position
    from tests.support import REFERENCE, copy_store

    store = copy_store("clean", tmp_path)
    name = sorted((store / "index").iterdir())[0].name
    path = store / "index" / name
    count = struct.unpack(">i", path.read_bytes()[36:40])[0]
    with open(path, "r+b") as f:  # a slot past indexCount, as the second file's header leaves it
        f.seek(slot_position(3))
        f.write(struct.pack(">i", count + 50))
    config = json.loads((REFERENCE / "clean" / "manifest.json").read_text())["storeConfig"]
    assert any("INDEX_SLOT" in d for d in D.verify_clean(store, config, {"indexFiles": [name]}))
    assert D.verify_clean(store, config, {"indexFiles": [name, name]}) == []
    assert str(store) in D.INDEX_NOT_COMPARED
