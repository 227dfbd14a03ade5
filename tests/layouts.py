"""Test stores of the layouts a real broker leaves beyond the classic store, built on a
copy of a store RocketMQ wrote (``tests/fixtures/reference-stores``) from RocketMQ
5.3.3's source layouts.  Each builder says where its bytes and names come from; none
is decoded by rmqlab yet beyond recognition (see ``rmqlab.store.layout``): the tests
hold every command to an honest "not checked" and recovery to a refusal.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from tests.support import copy_store

#: ConsumeQueue.CQ_STORE_UNIT_SIZE: offset (8), size (4), tagsCode (8)
CQ_UNIT = struct.Struct(">qiq")
#: ConsumeQueueExt: an address is the ext file offset + Long.MIN_VALUE (ConsumeQueueExt.decorate)
EXT_ADDRESS_BASE = -(1 << 63)  # Long.MIN_VALUE: ConsumeQueueExt.decorate
#: ConsumeQueueExt.CqExtUnit without a bitmap: size, tagsCode, msgStoreTime, bitMapSize
EXT_UNIT = struct.Struct(">hqqh")


def _units(path: Path) -> list[tuple[int, int, int]]:
    data = b"".join(p.read_bytes() for p in sorted(path.iterdir()))
    out = [CQ_UNIT.unpack_from(data, i) for i in range(0, len(data) - CQ_UNIT.size + 1, CQ_UNIT.size)]
    return [u for u in out if u[1] > 0]


def rocksdb_consume_queue(tmp: Path, source: str = "crash") -> Path:
    """``storeType=defaultRocksDB``: RocksDBConsumeQueueStore keeps its RocksDB in
    StorePathConfigHelper.getStorePathConsumeQueue (the root's ``consumequeue/``), so the
    file queues are gone.  Built with RocksDB itself from the reference store's queues:
    a key per unit (RocksDBConsumeQueueTable.buildCQKeyByteBuffer0) whose 28-byte value
    adds the record's store time (buildCQValueByteBuffer0), each queue's max and min in
    the ``offset`` family (RocksDBConsumeQueueOffsetTable: the unit's commitlog and queue
    offsets) and dispatch's progress under CHECKPOINT_TOPIC (appendMaxPhyOffset)."""
    from rocksdict import Options, Rdict

    from rmqlab.format.rocksdb_queue import CHECKPOINT_KEY, OFFSET_COLUMN_FAMILY, RocksDBCqValue, RocksDBOffsetValue, cq_key, offset_key
    from rmqlab.store import open_store

    s = copy_store(source, tmp)
    d = s / "consumequeue"
    built = tmp / "rocksdb"
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    db = Rdict(str(built), options=opts, column_families={OFFSET_COLUMN_FAMILY: Options(raw_mode=True)})
    offsets = db.get_column_family(OFFSET_COLUMN_FAMILY)
    top = 0
    with open_store(s) as store:
        for qid in store.queue_ids():
            units = store.consume_queue(qid.topic, qid.queue_id).entries(store.commitlog.min_offset)
            for e in units:
                when = store.commitlog.read(e.commitlog_offset).store_timestamp
                db[cq_key(qid.topic, qid.queue_id, e.queue_offset)] = RocksDBCqValue.build(dict(commitlog_offset=e.commitlog_offset, size=e.size, tags_code=e.tags_code, store_timestamp=when))
                top = max(top, e.commitlog_offset + e.size)
            if units:
                for key, e in ((offset_key(qid.topic, qid.queue_id, True), units[-1]), (offset_key(qid.topic, qid.queue_id, False), units[0])):
                    offsets[key] = RocksDBOffsetValue.build(dict(commitlog_offset=e.commitlog_offset, queue_offset=e.queue_offset))
    offsets[CHECKPOINT_KEY] = top.to_bytes(8, "big")
    db.flush()
    db.close()
    (built / "rocksdict-config.json").unlink(missing_ok=True)  # the binding's own file, not RocksDB's
    shutil.rmtree(d)
    shutil.copytree(built, d)
    return s


def dledger_converted(tmp: Path) -> Path:
    """A store converted to DLedger (``enableDLegerCommitLog`` turned on for a broker
    that had a commitlog): ``commitlog/`` keeps the old files and DLedgerCommitLog
    continues the log in ``dledger-<selfId>/data/`` from ``dividedCommitlogOffset`` (the
    end of the old log's last file; DLedgerCommitLog.recover); rmqlab reads a DLedger
    log only on its own (tests/oracle/test_dledger_log.py) and refuses this mix."""
    s = copy_store("clean", tmp)
    d = s / "dledger-n0"
    (d / "data").mkdir(parents=True)
    (d / "index").mkdir()
    divided = max(int(p.name) for p in (s / "commitlog").iterdir()) + 65536
    (d / "data" / f"{divided:020d}").write_bytes(b"\x00" * 1024)
    (d / "index" / "00000000000000000000").write_bytes(b"\x00" * 320)
    (d / "checkpoint").write_text("committedIndex=-1\n")
    return s


def batch_consume_queue(tmp: Path) -> Path:
    """``queue.type=BatchCQ`` on TopicC: its queues live in
    StorePathConfigHelper.getStorePathBatchConsumeQueue (``batchconsumequeue/T/Q/``) in
    46-byte units (BatchConsumeQueue.putBatchMessagePositionInfo: the record's offset,
    size, tagsCode, store time, msgBaseOffset = its queue offset, batchSize 1 for a plain
    message, compactedOffset INVALID_POS, 4 reserved bytes), not in ``consumequeue/``;
    built here from TopicC's units and records.  The stores RocketMQ writes this way,
    inner batches included: tests/oracle/test_batch_queue.py."""
    from rmqlab.format.consumequeue import BatchConsumeQueueUnit
    from rmqlab.store import open_store

    s = copy_store("crash", tmp)
    with open_store(s) as store:
        for q in sorted((s / "consumequeue" / "TopicC").iterdir()):
            cq = store.consume_queue("TopicC", int(q.name))
            lo, hi = cq.valid_range()
            data = b""
            for e in cq.entries():
                rec = store.commitlog.read(e.commitlog_offset)
                data += BatchConsumeQueueUnit.build(dict(commitlog_offset=e.commitlog_offset, size=e.size, tags_code=e.tags_code, store_timestamp=rec.store_timestamp,
                                                         msg_base_offset=rec.queue_offset, batch_size=1, compacted_offset=-1, reserved=0))
            out = s / "batchconsumequeue" / "TopicC" / q.name
            out.mkdir(parents=True)
            (out / "00000000000000000000").write_bytes(data + b"\x00" * (46 * 20 * ((len(data) // 46 // 20) + 1) - len(data)))
    shutil.rmtree(s / "consumequeue" / "TopicC")
    return s


def consume_queue_ext(tmp: Path) -> Path:
    """``enableConsumeQueueExt=true`` on TopicA/0: ConsumeQueue.putMessagePositionInfoWrapper
    writes a CqExtUnit (size 20 + bitmap, tagsCode, store time, bitMapSize, bitmap;
    ConsumeQueueExt.CqExtUnit.write) to ``consumequeue_ext/T/Q/``
    (StorePathConfigHelper.getStorePathConsumeQueueExt) and puts its address
    (ConsumeQueueExt.decorate: offset + Long.MIN_VALUE) where the tagsCode goes; units
    are back to back, a short -1 ends a file (ConsumeQueueExt.put).  The stores RocketMQ
    writes this way: tests/oracle/test_ext_queues.py."""
    s = copy_store("clean", tmp)
    q = s / "consumequeue" / "TopicA" / "0"
    ext_data = bytearray()
    for f in sorted(q.iterdir()):
        data = bytearray(f.read_bytes())
        for i in range(0, len(data), CQ_UNIT.size):
            off, size, tags = CQ_UNIT.unpack_from(data, i)
            if size > 0:
                address = EXT_ADDRESS_BASE + len(ext_data)
                ext_data += EXT_UNIT.pack(EXT_UNIT.size, tags, 0, 0)
                CQ_UNIT.pack_into(data, i, off, size, address)
        f.write_bytes(bytes(data))
    ext = s / "consumequeue_ext" / "TopicA" / "0"
    ext.mkdir(parents=True)
    (ext / "00000000000000000000").write_bytes(bytes(ext_data) + b"\xff\xff" + b"\x00" * (4096 - len(ext_data) - 2))
    return s


def lmq_unnamed(tmp: Path) -> Path:
    """A light queue (``%LMQ%<name>``, MixAll.LMQ_PREFIX, queue 0) whose units point at
    records of TopicA that do not name it: ConsumeQueue.multiDispatchLmqQueue only writes
    a unit for a name in the record's INNER_MULTI_DISPATCH, so each is a mismatch (the
    stores RocketMQ writes with LMQ queues: tests/oracle/test_lmq_queues.py)."""
    s = copy_store("clean", tmp)
    units = _units(s / "consumequeue" / "TopicA" / "1")
    d = s / "consumequeue" / "%LMQ%orders" / "0"
    d.mkdir(parents=True)
    data = b"".join(CQ_UNIT.pack(off, size, tags) for off, size, tags in units[:10])
    (d / "00000000000000000000").write_bytes(data + b"\x00" * (400 - len(data)))
    return s


def extras(tmp: Path) -> Path:
    """What other broker features leave in the root: a compaction store
    (CompactionStore: ``compaction/compactionLog``, ``compactionCq``, ``position-checkpoint``),
    pop records in RocksDB (PopConsumerService: ``kvStore/``), controller mode
    (``epochFileCheckpoint``, ``brokerIdentity``), the tiered store's index
    (IndexStoreService: ``tiered_index_file/``), and config files (BrokerPathConfigHelper)."""
    s = copy_store("clean", tmp)
    (s / "compaction" / "compactionLog" / "TopicA" / "0").mkdir(parents=True)
    (s / "compaction" / "compactionCq" / "TopicA" / "0").mkdir(parents=True)
    (s / "compaction" / "compactionLog" / "TopicA" / "0" / "00000000000000000000").write_bytes(b"\x00" * 1024)
    # CompactionPositionMgr (a ConfigManager): fastjson of its queueOffsetMap, keyed topic_queueId
    (s / "compaction" / "position-checkpoint").write_text('{\n\t"empty":false,\n\t"queueOffsetMap":{\n\t\t"TopicA_0":10\n\t}\n}')
    (s / "kvStore").mkdir()
    (s / "kvStore" / "CURRENT").write_text("MANIFEST-000001\n")
    (s / "kvStore" / "MANIFEST-000001").write_bytes(b"\x00" * 16)
    (s / "epochFileCheckpoint").write_text("1\n1\n1-0\n")
    (s / "brokerIdentity").write_text("clusterName=rmqlab\nbrokerName=b\nbrokerId=1\n")
    (s / "tiered_index_file").mkdir()
    config = s / "config"
    config.mkdir(exist_ok=True)
    for name in ("subscriptionGroup.json", "consumerFilter.json", "timermetrics", "messageRequestMode.json"):
        (config / name).write_text("{}")
    (config / "consumerOffsets").mkdir()
    (s / "notes.txt").write_text("an operator's note beside the store\n")
    return s


def multi_path(tmp: Path, case: str = "clean") -> tuple[Path, Path]:
    """``storePathCommitLog=/d1/commitlog,/d2/commitlog`` (MultiPathMappedFileQueue):
    the commitlog files of reference store ``case`` spread over two directories as
    ``MultiPathMappedFileQueue.tryCreateMappedFile`` places them (file number
    offset / size, modulo the count of sorted directories); returns the store and a
    broker.conf naming both."""
    s = copy_store(case, tmp)
    other = tmp / "disk2" / "commitlog"
    other.mkdir(parents=True)
    for p in sorted((s / "commitlog").iterdir()):
        if int(p.name) // 65536 % 2:  # sorted: STORE/commitlog before TMP/disk2/commitlog
            p.rename(other / p.name)
    conf = tmp / "broker.conf"
    conf.write_text(f"storePathCommitLog={s / 'commitlog'},{other}\nmappedFileSizeCommitLog=65536\nmappedFileSizeConsumeQueue=400\n"
                    "maxHashSlotNum=64\nmaxIndexNum=256\n")
    return s, conf


BUILDERS = {
    "dledger-converted": dledger_converted,
    "extras": extras,
}


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes (to show a command changed nothing)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

