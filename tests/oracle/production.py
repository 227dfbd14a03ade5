"""Stores of production layouts written by RocketMQ itself from a seeded workload
(``DefaultMessageStore.putMessage``, as a broker's send path calls it):

* :func:`write_dledger_store` — ``enableDLegerCommitLog=true``: a one-member DLedger
  group (``dLegerPeers`` on a free local port) that elects itself leader;
* :func:`write_ext_store` — ``enableConsumeQueueExt``: every unit's tagsCode is the
  address of a ``ConsumeQueueExt`` unit (small ext files, so that several fill);
* :func:`write_rocksdb_store` — ``storeType=defaultRocksDB`` (RocksDBMessageStore), or
  ``rocksdbCQDoubleWriteEnable`` beside the file queues;
* :func:`write_lmq_store` — ``enableLmq`` and ``enableMultiDispatch``: every third
  message names one or two light queues in ``INNER_MULTI_DISPATCH``;
  ``CommitLog``'s ``MultiDispatch.wrapMultiDispatch`` adds their queue offsets and
  ``ConsumeQueue.multiDispatchLmqQueue`` writes their units.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from tests.oracle.harness import Oracle
from tests.oracle.workload import random_workload, write_lines


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _written(oracle: Oracle, tmp: Path, config: dict, lines: list, crash_copy: Path | None = None, topics: dict | None = None) -> tuple[Path, dict, list]:
    """RocketMQ puts ``lines`` into ``tmp/clean`` (every put must be PUT_OK); the config
    is kept as ``tmp/broker.conf``; ``(store root, config, put results)``."""
    ans = oracle.write(tmp / "clean", config, write_lines(tmp / "in.jsonl", lines), crash_copy=crash_copy, topics=topics)
    failed = [r for r in ans["results"] if r["status"] != "PUT_OK"]
    assert not failed, failed[:3]
    (tmp / "broker.conf").write_text("".join(f"{k}={v}\n" for k, v in config.items()))
    return tmp / "clean", config, ans["results"]


def loaded(oracle: Oracle, written: tuple[Path, dict, list], topics: dict | None = None) -> tuple[Path, dict, dict]:
    """``(store root, config, what RocketMQ reads back from a copy of it)``."""
    root, config, _ = written
    copy = shutil.copytree(root, root.with_name(root.name + ".rocketmq"))
    return root, config, oracle.load(copy, config, topics=topics)


#: topic attributes of the batch-queue stores (TopicAttributes.QUEUE_TYPE_ATTRIBUTE)
BATCH_TOPICS = {"TopicBatch": {"queue.type": "BatchCQ"}}


def write_batch_store(oracle: Oracle, tmp: Path, seed: int, n: int = 200, crash_copy: Path | None = None) -> tuple[Path, dict, list]:
    """A seeded workload plus a ``queue.type=BatchCQ`` topic (TopicBatch, two queues):
    plain messages (a unit of one) and producer batches put as SendMessageProcessor puts
    them to such a topic, one inner-batch record each (INNER_NUM messages; the harness's
    ``"inner": true``); batch queue files of 8 units so that they roll."""
    import base64
    import random

    config, lines = random_workload(seed, n=n)
    rng = random.Random(seed)
    out = []
    for i, m in enumerate(lines):
        out.append(m)
        if i % 2:
            continue
        b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
        born = 1_700_000_000_000 + i
        if rng.random() < 0.4:
            out.append({"topic": "TopicBatch", "queue_id": rng.randrange(2), "body": b64(f"single {i}"), "properties": {"TAGS": rng.choice(["a", "b"]), "KEYS": f"s{i}"},
                        "born_timestamp": born})
        else:
            out.append({"batch": [{"body": b64(f"inner {i}.{j}" * rng.randrange(1, 4)), "properties": {"KEYS": f"b{i}.{j}"}} for j in range(rng.randrange(1, 6))],
                        "topic": "TopicBatch", "queue_id": rng.randrange(2), "inner": True, "born_timestamp": born,
                        "properties": {"UNIQ_KEY": f"AC11000100{seed:06d}{i:016d}", "TAGS": rng.choice(["a", "b"])}})
    config.update(mapperFileSizeBatchConsumeQueue=str(46 * 8))
    return _written(oracle, tmp, config, out, crash_copy, BATCH_TOPICS)


def write_dledger_store(oracle: Oracle, tmp: Path, seed: int, n: int = 400, crash_copy: Path | None = None) -> tuple[Path, dict, list]:
    config, lines = random_workload(seed, n=n)
    config.update(mappedFileSizeCommitLog="16384", enableDLegerCommitLog="true", dLegerGroup="g0",
                  dLegerPeers=f"n0-127.0.0.1:{_free_port()}", dLegerSelfId="n0")
    return _written(oracle, tmp, config, lines, crash_copy)


def write_lmq_store(oracle: Oracle, tmp: Path, seed: int, n: int = 200, crash_copy: Path | None = None) -> tuple[Path, dict, list]:
    config, lines = random_workload(seed, n=n)
    config.update(enableLmq="true", enableMultiDispatch="true")
    for i, m in enumerate(lines):
        # MultiDispatchUtils.isNeedHandleMultiDispatch: not for system topics; a batch has no such property here
        if i % 3 == 0 and "batch" not in m and not m["topic"].startswith("RMQ_SYS"):
            m.setdefault("properties", {})["INNER_MULTI_DISPATCH"] = ",".join(f"%LMQ%room{j}" for j in range(1 + i % 2 + (i // 3) % 2))
    return _written(oracle, tmp, config, lines, crash_copy)


def write_rocksdb_store(oracle: Oracle, tmp: Path, seed: int, n: int = 300, *, double_write: bool = False, crash_copy: Path | None = None) -> tuple[Path, dict, list]:
    """``storeType=defaultRocksDB`` (RocksDBMessageStore: the consume queues are RocksDB's)
    or, with ``double_write``, ``rocksdbCQDoubleWriteEnable`` (file queues, and RocksDB
    written beside them in the same consumequeue/)."""
    config, lines = random_workload(seed, n=n)
    config.update(rocksdbCQDoubleWriteEnable="true") if double_write else config.update(storeType="defaultRocksDB")
    return _written(oracle, tmp, config, lines, crash_copy)


def write_ext_store(oracle: Oracle, tmp: Path, seed: int, n: int = 200, crash_copy: Path | None = None) -> tuple[Path, dict, list]:
    config, lines = random_workload(seed, n=n)
    config.update(enableConsumeQueueExt="true", mappedFileSizeConsumeQueueExt="256")
    return _written(oracle, tmp, config, lines, crash_copy)


#: topic attributes of the compaction stores (TopicAttributes.CLEANUP_POLICY_ATTRIBUTE)
COMPACTION_TOPICS = {"TopicKV": {"cleanup.policy": "COMPACTION"}}


def write_compaction_store(oracle: Oracle, tmp: Path, seed: int, n: int = 150, crash_copy: Path | None = None) -> tuple[Path, dict, list]:
    """A seeded workload plus a ``cleanup.policy=COMPACTION`` topic (TopicKV, two queues,
    keys that repeat, some messages without keys, which CompactionLog.asyncPutMessage
    does not copy): dispatch copies each keyed record into compaction/compactionLog/ and
    its unit into compactionCq/ (CommitLogDispatcherCompaction); small compaction files
    (compactionCqMappedFileSize of 8 units) so that both roll."""
    import base64
    import random

    config, lines = random_workload(seed, n=n)
    rng = random.Random(seed)
    out = []
    for i, m in enumerate(lines):
        out.append(m)
        props = {"KEYS": f"key-{rng.randrange(12)}"} if rng.random() < 0.85 else {}
        if rng.random() < 0.3:
            props["TAGS"] = rng.choice(["x", "y"])
        out.append({"topic": "TopicKV", "queue_id": rng.randrange(2), "body": base64.b64encode(f"value {i}".encode() * rng.randrange(1, 4)).decode(),
                    "properties": props, "born_timestamp": 1_700_000_000_000 + i})
    config.update(compactionCqMappedFileSize=str(46 * 8), compactionMappedFileSize=str(46 * 8 * 5))
    return _written(oracle, tmp, config, out, crash_copy, COMPACTION_TOPICS)
