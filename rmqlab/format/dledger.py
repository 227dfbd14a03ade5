"""The DLedger commitlog's layouts (``enableDLegerCommitLog=true``).

RocketMQ's ``DLedgerCommitLog`` hands every encoded record to DLedger
(``io.openmessaging.storage.dledger``, 0.3.1.2 in RocketMQ 4.9.7 and 5.3.3), whose
``DLedgerMmapFileStore`` keeps, under ``storePathRootDir/dledger-<selfId>/``
(``DLedgerConfig.getDefaultPath``):

``data/`` — offset-named files of ``mappedFileSizeCommitLog`` bytes
(``DLedgerConfig.mappedFileSizeForEntryData``), entries back to back
(``DLedgerEntryCoder.encode``)::

    magic int32 (1) | size int32 (48 + body) | index int64 | term int64 | pos int64
    channel int32 | chain CRC int32 | body CRC int32 | body size int32 | body …

The body is one commitlog record, whole: its physical offset (what consume queues,
index entries and msgIds hold) is ``pos + 48`` (``DLedgerEntry.BODY_OFFSET``; the
``AppendHook`` of ``DLedgerCommitLog`` writes it into the record's PHYSICALOFFSET).
An entry that does not fit the file's rest leaves a blank: magic −1 and the bytes
left (``MmapFileList.preAppend``, ``BLANK_MAGIC_CODE``); a zero size ends the log
(``DLedgerMmapFileStore.recover``).  DLedger 0.3.1.2 stores 0 in both CRCs.

``index/`` — 32-byte units, unit ``n`` for entry index ``n``
(``DLedgerEntryCoder.encodeIndex``, ``DLedgerMmapFileStore.INDEX_UNIT_SIZE``)::

    magic int32 | pos int64 | size int32 | index int64 | term int64

``checkpoint`` (``committedIndex=…``, ``DLedgerMmapFileStore.persistCheckPoint``) and
``currterm`` (``currTerm=…``, ``voteLeader=…``; ``MemberState.persistTerm``) are Java
properties files.
"""

from __future__ import annotations

import numpy as np
from construct import Int32sb, Int64sb, Struct

ENTRY_HEADER_SIZE = 48  # DLedgerEntry.BODY_OFFSET (HEADER_SIZE 44 + the body size)
INDEX_UNIT_SIZE = 32  # DLedgerMmapFileStore.INDEX_UNIT_SIZE
MAGIC_1 = 1  # DLedgerMmapFileStore.MAGIC_1 = CURRENT_MAGIC
BLANK_MAGIC_CODE = -1  # MmapFileList.BLANK_MAGIC_CODE
MIN_BLANK_LEN = 8  # MmapFileList.MIN_BLANK_LEN
POS_AT = 24  # DLedgerEntry.POS_OFFSET
CHECKPOINT_FILE = "checkpoint"  # DLedgerMmapFileStore.CHECK_POINT_FILE
COMMITTED_INDEX_KEY = "committedIndex"  # DLedgerMmapFileStore.COMMITTED_INDEX_KEY
TERM_FILE = "currterm"  # MemberState.TERM_PERSIST_FILE
DLEDGER_PREFIX = "dledger-"  # DLedgerConfig.getDefaultPath: storeBaseDir/dledger-<selfId>
DATA_DIR = "data"  # DLedgerConfig.getDataStorePath
INDEX_DIR = "index"  # DLedgerConfig.getIndexStorePath

DLedgerEntryHeader = Struct(
    "magic" / Int32sb * "Java magic: 1 (MAGIC_1), -1 for the blank ending a file",
    "size" / Int32sb * "Java size: the whole entry, header included",
    "index" / Int64sb * "Java index: the entry's number in the log, one more each entry",
    "term" / Int64sb * "Java term: the leader's term that appended it, never decreasing",
    "pos" / Int64sb * "Java pos: where the entry starts in the log",
    "channel" / Int32sb * "Java channel: reserved",
    "chain_crc" / Int32sb * "Java chainCrc (0: not stored by DLedger 0.3.x)",
    "body_crc" / Int32sb * "Java bodyCrc (0: not stored by DLedger 0.3.x)",
    "body_size" / Int32sb * "Java body length: size - 48",
)

DLedgerIndexUnit = Struct(
    "magic" / Int32sb * "Java magic of the entry",
    "pos" / Int64sb * "Java pos: where the entry starts in the data files",
    "size" / Int32sb * "Java size of the entry",
    "index" / Int64sb * "Java index: the unit's own number",
    "term" / Int64sb * "Java term of the entry",
)

#: the same layouts for bulk reads
ENTRY_HEADER_DTYPE = np.dtype([("magic", ">i4"), ("size", ">i4"), ("index", ">i8"), ("term", ">i8"), ("pos", ">i8"), ("channel", ">i4"),
                               ("chain_crc", ">i4"), ("body_crc", ">i4"), ("body_size", ">i4")])
INDEX_UNIT_DTYPE = np.dtype([("magic", ">i4"), ("pos", ">i8"), ("size", ">i4"), ("index", ">i8"), ("term", ">i8")])
assert ENTRY_HEADER_DTYPE.itemsize == ENTRY_HEADER_SIZE == DLedgerEntryHeader.sizeof()
assert INDEX_UNIT_DTYPE.itemsize == INDEX_UNIT_SIZE == DLedgerIndexUnit.sizeof()


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` lines of DLedger's checkpoint and currterm files (``IOUtils.string2Properties``)."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out
