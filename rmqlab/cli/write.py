"""``rmqlab write STORE --input messages.jsonl`` — put messages into a store, as a broker would.

Reads one JSON object per line — exactly what ``rmqlab dump --json`` prints, so any
dump can be replayed into a new store — and prints one put result per line.

Honoured keys: ``topic``, ``queue_id``, ``flag``, ``sys_flag``, ``properties`` (object,
written in the order given; tags and keys travel there as ``TAGS`` and ``KEYS``),
``body`` (base64), and when present ``born_timestamp``, ``born_host``,
``store_timestamp``, ``store_host``, ``reconsume_times``,
``prepared_transaction_offset``.  Keys the store computes itself (``physical_offset``,
``queue_offset``, ``body_crc``, ``msg_id``, …) are ignored; BLANK lines of
``dump --json --all`` are skipped.

The store is created if it does not exist.  File sizes and flush settings come from
``--config broker.conf`` (RocketMQ's own setting names); without it an existing
store's sizes are inferred from its files, a new store gets RocketMQ's defaults.
Exit status: 0 when every put answered PUT_OK, 1 when some did not, 2 on an error.
"""

from __future__ import annotations

import argparse
import json
import sys


from ..config import MessageStoreConfig
from ..rules import COMMITLOG_DIR, LOCK_FILE
from ..errors import RmqlabError
from ..format import properties as props
from .common import print_json
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("write", help=HELP["write"], description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("store", help="store root directory (created if missing)")
    p.add_argument("--input", "-i", required=True, metavar="FILE", help="JSON lines to put ('-' for stdin)")
    p.add_argument("--config", metavar="BROKER_CONF", help="broker.conf-style file: mappedFileSizeCommitLog, flushDiskType, ...")
    p.add_argument("--store-host", metavar="HOST:PORT", default="127.0.0.1:10911", help="storeHost for messages that bring none (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print each result as a JSON object")
    p.add_argument("--raw", action="store_true", help="no broker-style rewrite (a DELAY level is stored as given, not moved to SCHEDULE_TOPIC_XXXX)")
    p.add_argument("--batch", type=int, default=0, metavar="N", help="put N messages at a time with put_batch (one store timestamp per batch)")
    return p


def _config(args) -> MessageStoreConfig | None:
    from pathlib import Path

    if args.config:
        return MessageStoreConfig.from_properties(args.config)
    root = Path(args.store)
    from ..store.reader import infer_config, lock_state

    if lock_state(root) == "held":  # say so before inferring sizes a broker's store may not let us infer
        from ..errors import StoreLockedError

        raise StoreLockedError(f"{root / LOCK_FILE}: a running broker (or rmqlab writer) holds this store; stop it before writing")
    if (root / COMMITLOG_DIR).is_dir() and any((root / COMMITLOG_DIR).iterdir()):
        return infer_config(root)
    return None


def _lines(path: str):
    """``(line number, line)`` of the input, opened now: an input that cannot be read
    fails before any store is opened or created."""
    if path == "-":
        return enumerate(sys.stdin, 1)
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise RmqlabError(f"{path}: cannot read input: {exc.strerror}") from None
    return _numbered(fh)


def _numbered(fh):
    with fh:
        yield from enumerate(fh, 1)


def run(args) -> int:
    from ..engine import Message, MessageStore
    from ..engine.message import MessageInputError

    cfg = _config(args)
    lines = _lines(args.input)
    failures = 0
    warned_crc = False
    # the store is opened (or created) when the first message is ready: input that is
    # bad from its first line leaves no new store behind
    store = None

    def opened() -> MessageStore:
        nonlocal store
        if store is None:
            store = MessageStore.open(args.store, cfg, store_host=args.store_host, broker_rewrites=not args.raw)
        return store

    try:
        batch: list[Message] = []

        def emit(result, line_no) -> None:
            nonlocal failures
            if not result.ok:
                failures += 1
            if args.json:
                d = result.to_dict()
                d["line"] = line_no
                print_json(d)
            else:
                extra = f"  ({result.reason})" if result.reason else ""
                print(f"{line_no}: {result.status.value} offset={result.wrote_offset} size={result.wrote_bytes} queue_offset={result.queue_offset} msg_id={result.msg_id}{extra}")

        def put_batch(last_line: int) -> None:
            if batch:
                emit(opened().put_batch(batch), last_line)
                batch.clear()

        where = "<stdin>" if args.input == "-" else args.input
        last = 0
        for line_no, line in lines:
            last = line_no
            text = line.strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise MessageInputError(f"{where} line {line_no}: not JSON: {exc.msg} at column {exc.colno}") from None
            if isinstance(obj, dict) and obj.get("kind") == "BLANK":
                continue
            msg = Message.from_dict(obj, f"{where} line {line_no}")
            if not opened().config.enabled_append_prop_crc and msg.properties and props.CRC32 in msg.properties:
                # a stale whole-record CRC would make the new record look damaged
                msg.properties = {k: v for k, v in msg.properties.items() if k != props.CRC32}
                if not warned_crc:
                    print(f"rmqlab write: input carries {props.CRC32} but enabledAppendPropCRC is off: the property is dropped "
                          "(give --config with enabledAppendPropCRC=true to have it recomputed)", file=sys.stderr)
                    warned_crc = True
            if args.batch > 0:
                batch.append(msg)
                if len(batch) >= args.batch:
                    put_batch(line_no)
            else:
                emit(opened().put(msg), line_no)
        put_batch(last)
        opened()  # no messages at all: the store is still created, as asked
    finally:
        if store is not None:
            store.shutdown()
    return 1 if failures else 0
