"""rocketmq-rust's timer store, v2 layout (crates.io ``rocketmq-store`` /
``rocketmq-store-local`` 1.0.0): none of it is Java's ``TimerMessageStore`` (whose
layouts are in :mod:`rmqlab.format.timer`), though it keeps Java's timer topic, its
32-byte slot and its 56-byte checkpoint fields.  Every integer is big-endian; every
record ends in a CRC-32C (Castagnoli, ``storage_format.rs crc32c``) of the bytes
before it, except where said.

``timer-v2/FORMAT`` (``storage_format.rs TimerStorageFingerprint``): 64 bytes, the
storage policy (precision, wheel slots, timer-log segment size, wheel page size, record
version) with a hash of it (``policy_hash``) that each checkpoint copy repeats.

``timerwheel.v2/`` (``paged_timer_wheel.rs PagedTimerWheel``): ``FORMAT`` holds the
text ``paged-timer-wheel-v2``; ``pages.a`` and ``pages.b`` each hold every page of the
wheel (page *i* at *i* × page size), a flush writing the dirty pages of generation *g*
to ``pages.a`` when *g* is even and to ``pages.b`` when odd, then appending a record to
``generations`` that names them; the checkpoint's ``wheel_generation`` says which
records count (later ones are cut at load).  A page is a 32-byte header and
``(page size − 32) / 32`` slots (the Java ``Slot`` layout), its CRC-32C taken over the
whole page with the checksum field zero; an all-zero page is an empty one of
generation 0.

``timerlog/v2/log/`` (``segmented_timer_log.rs SegmentedTimerLog``): segments named by
their first *logical* offset (20 digits), each ``segment size / 80 − 1`` records of 80
bytes and, once sealed, a blank record; logical offsets count 40 per record (Java's
v1 unit, ``TimerLogOffset``: a record's logical offset *o* sits at byte
``(o − segment start) / 40 × 80`` of its segment).  ``manifest`` (40 bytes) holds the
active segment and the durable length.  ``timerlog/v2/MIGRATION_COMMITTED`` holds
``timer-log-v2``, ``V2_CLEAN_CHECKPOINT`` ``1``.

``config/timercheck.a`` / ``.b`` (``checkpoint.rs VersionedTimerCheckpointStore``): two
alternating 128-byte copies; the one of the highest generation whose checksum and
policy hash hold (and whose durable length the timer log has) is used
(``TimerCheckpoint.new_with_policy`` → ``load_best``); with neither there,
``config/timercheck``'s 56 bytes (Java's seven longs, :data:`rmqlab.format.timer.TimerCheck`)
are read.  ``config/timer-role.meta`` (``role.rs TimerRoleState``): two 24-byte slots,
epoch *e* written to slot *e* mod 2; the highest valid epoch counts.
"""

from __future__ import annotations

from construct import Bytes, Int8ub, Int16ub, Int32sb, Int32ub, Int64sb, Int64ub, Struct

from .timer import SLOT_SIZE, TimerWheelSlot

# -- where each part lives, under the store root ---------------------------------------------------
FORMAT_DIR = "timer-v2"  # timer_message_store.rs: <root>/timer-v2/FORMAT
FORMAT_FILE = "FORMAT"
WHEEL_DIR = "timerwheel.v2"  # paged_timer_wheel.rs, under the root
LOG_V2_DIR = "v2"  # timer_log.rs: timerlog/v2/
ROLE_FILE = "timer-role.meta"  # role.rs, under config/

# -- timer-v2/FORMAT --------------------------------------------------------------------------------
FORMAT_MAGIC = 0x544D5232  # b"TMR2", storage_format.rs TIMER_STORAGE_MAGIC
FORMAT_VERSION = 2  # TIMER_STORAGE_FORMAT_VERSION
FORMAT_SIZE = 64  # TIMER_STORAGE_FORMAT_SIZE
RECORD_VERSION = 2  # TIMER_LOG_RECORD_VERSION (and every v2 record's version field)

StorageFormat = Struct(
    "magic" / Int32ub * "TIMER_STORAGE_MAGIC, b'TMR2'",
    "version" / Int16ub * "TIMER_STORAGE_FORMAT_VERSION (2)",
    "size" / Int16ub * "TIMER_STORAGE_FORMAT_SIZE (64)",
    "precision_ms" / Int64ub * "timerPrecisionMs",
    "wheel_slots" / Int64ub * "slots of the wheel (TIMER_WHEEL_TTL_DAY × DAY_SECS × 2)",
    "segment_size" / Int64ub * "timer-log segment size in bytes (mappedFileSizeTimerLog)",
    "page_size" / Int32ub * "wheel page size in bytes (4096)",
    "record_version" / Int16ub * "timer-log record version (2)",
    "delete_key_mode" / Int8ub * "how delete markers are keyed",
    "reserved1" / Bytes(1),
    "policy_hash" / Int64ub * "TimerStorageFingerprint.policy_hash: the checkpoints must repeat it",
    "reserved2" / Bytes(12),
    "checksum" / Int32ub * "CRC-32C of bytes 0–59",
)
assert StorageFormat.sizeof() == FORMAT_SIZE

# -- timerwheel.v2/ ---------------------------------------------------------------------------------
WHEEL_FORMAT_TEXT = b"paged-timer-wheel-v2\n"  # paged_timer_wheel.rs initialize_files
PAGE_MAGIC = 0x54575032  # b"TWP2"
PAGE_HEADER_SIZE = 32
PAGES_A, PAGES_B, GENERATIONS = "pages.a", "pages.b", "generations"

WheelPageHeader = Struct(
    "magic" / Int32ub * "PAGE_MAGIC, b'TWP2'",
    "version" / Int16ub * "PAGE_VERSION (2)",
    "header_size" / Int16ub * "PAGE_HEADER_SIZE (32)",
    "page_id" / Int32ub * "the page's index (its place in the file)",
    "payload_len" / Int32ub * "bytes of slots after the header",
    "generation" / Int64ub * "the flush that wrote it (even: pages.a, odd: pages.b)",
    "non_empty" / Int32ub * "1 when a slot of the page has num > 0",
    "checksum" / Int32ub * "CRC-32C of the whole page with this field zero",
)
assert WheelPageHeader.sizeof() == PAGE_HEADER_SIZE
#: a page's slots: Java's Slot layout (``slot.rs``), timeMs as stored
WheelSlot = TimerWheelSlot
assert WheelSlot.sizeof() == SLOT_SIZE

GENERATION_MAGIC = 0x54574732  # b"TWG2"
GENERATION_HEADER_SIZE = 24
GenerationHeader = Struct(
    "magic" / Int32ub * "GENERATION_MAGIC, b'TWG2'",
    "version" / Int16ub * "GENERATION_VERSION (2)",
    "header_size" / Int16ub * "GENERATION_HEADER_SIZE (24)",
    "record_size" / Int32ub * "24 + 4 × page_count + 4 (the CRC-32C after the page ids)",
    "generation" / Int64ub * "one more than the record before it",
    "page_count" / Int32ub * "page ids that follow (Int32ub each)",
)
assert GenerationHeader.sizeof() == GENERATION_HEADER_SIZE

# -- timerlog/v2/ ---------------------------------------------------------------------------------
LOG_DIR = LOG_V2_DIR + "/log"  # under timerlog/: the segments and their manifest (segmented_timer_log.rs)
RECORD_SIZE = 80  # TIMER_LOG_V2_PHYSICAL_RECORD_SIZE
LOGICAL_RECORD_SIZE = 40  # TIMER_LOG_V2_LOGICAL_RECORD_SIZE: Java's v1 unit (TimerLogRecord::SIZE)
DATA_MAGIC = 0x544C4732  # b"TLG2"
BLANK_MAGIC = 0x544C424C  # b"TLBL": a sealed segment's last record
LogRecord = Struct(
    "record_magic" / Int32ub * "DATA_MAGIC b'TLG2', or BLANK_MAGIC b'TLBL'",
    "version" / Int16ub * "RECORD_VERSION (2)",
    "size" / Int16ub * "80",
    "prev_pos" / Int64sb * "previous_offset: the slot's unit before this one (a logical offset; -1: first)",
    "commitlog_offset" / Int64sb * "source_physical_offset: the rmq_sys_wheel_timer record",
    "commitlog_size" / Int32sb * "source_size",
    "magic" / Int32sb * "timer_magic: Java's MAGIC_DEFAULT | MAGIC_ROLL | MAGIC_DELETE",
    "deliver_time_ms" / Int64sb * "when the message is due",
    "slot_time_ms" / Int64sb * "the slot it is chained into",
    "generation" / Int64ub * "the wheel generation it was written under",
    "source_queue_offset" / Int64sb * "its offset in rmq_sys_wheel_timer's queue 0",
    "reserved" / Bytes(12),
    "checksum" / Int32ub * "CRC-32C of bytes 0–75",
)
assert LogRecord.sizeof() == RECORD_SIZE

MANIFEST_FILE = "manifest"
MANIFEST_MAGIC = 0x544D4E32  # b"TMN2"
LogManifest = Struct(
    "magic" / Int32ub * "MANIFEST_MAGIC, b'TMN2'",
    "version" / Int16ub * "RECORD_VERSION (2)",
    "reserved1" / Bytes(2),
    "active_start" / Int64ub * "logical start of the active segment",
    "durable_length" / Int64ub * "logical length synced to disk",
    "min_live_offset" / Int64ub * "logical offset below which segments may be collected",
    "reserved2" / Bytes(4),
    "checksum" / Int32ub * "CRC-32C of bytes 0–35",
)
assert LogManifest.sizeof() == 40

# -- config/timercheck.a|b ---------------------------------------------------------------------------
CHECKPOINT_MAGIC = 0x54435032  # b"TCP2"
CHECKPOINT_SIZE = 128
CheckpointV2 = Struct(
    "magic" / Int32ub * "TIMER_CHECKPOINT_V2_MAGIC, b'TCP2'",
    "version" / Int16ub * "2",
    "size" / Int16ub * "128",
    "generation" / Int64ub * "the copy's generation: the highest valid one is used",
    "last_timer_queue_offset" / Int64sb * "durable_queue_offset: rmq_sys_wheel_timer enqueued up to",
    "last_timer_log_flush_pos" / Int64sb * "timer_log_durable_length (logical)",
    "last_read_time_ms" / Int64sb * "dequeue_slot_ms: slots before it have fired",
    "drain_generation" / Int64ub,
    "drain_page" / Int32ub,
    "drain_record" / Int32ub,
    "wheel_generation" / Int64ub * "the wheel's committed generation (later generations records are cut)",
    "role_epoch" / Int64ub,
    "policy_hash" / Int64ub * "must equal timer-v2/FORMAT's",
    "master_timer_queue_offset" / Int64sb,
    "state_version" / Int64sb,
    "timestamp" / Int64sb,
    "counter" / Int64sb,
    "reserved" / Bytes(12),
    "checksum" / Int32ub * "CRC-32C of bytes 0–123",
)
assert CheckpointV2.sizeof() == CHECKPOINT_SIZE

# -- config/timer-role.meta ------------------------------------------------------------------------
ROLE_MAGIC = 0x54494D52  # b"TIMR"
ROLE_VERSION = 1
ROLE_CHECKSUM_SALT = 0xA96E54D3C2718B0F  # role.rs CHECKSUM_SALT
RoleRecord = Struct(
    "magic" / Int32ub * "ROLE_RECORD_MAGIC, b'TIMR' (zeros: an unwritten slot)",
    "version" / Int32ub * "1",
    "epoch" / Int64ub * "the role epoch: one more at each activation or downgrade",
    "checksum" / Int64ub * "epoch ^ (magic << 32 | version) ^ CHECKSUM_SALT",
)
assert RoleRecord.sizeof() == 24


def role_checksum(epoch: int) -> int:
    """``role.rs record_checksum``."""
    return epoch ^ ((ROLE_MAGIC << 32) | ROLE_VERSION) ^ ROLE_CHECKSUM_SALT


def policy_hash(precision_ms: int, wheel_slots: int, segment_size: int, page_size: int, record_version: int, delete_key_mode: int) -> int:
    """``TimerStorageFingerprint.policy_hash``: two CRC-32Cs over the policy's fields."""
    from .hashing import crc32c

    b = bytearray(39)
    b[0:8] = precision_ms.to_bytes(8, "big")
    b[8:16] = wheel_slots.to_bytes(8, "big")
    b[16:24] = segment_size.to_bytes(8, "big")
    b[24:28] = page_size.to_bytes(4, "big")
    b[28:30] = record_version.to_bytes(2, "big")
    b[30] = delete_key_mode
    first = crc32c(bytes(b[:31]))
    b[31:39] = first.to_bytes(8, "big")
    return (first << 32) | crc32c(bytes(b))
