"""Options and output helpers shared by the commands."""

from __future__ import annotations

import argparse
import json
import sys

from ..config import MessageStoreConfig
from ..store.reader import StoreReader, infer_config


def add_store_options(p: argparse.ArgumentParser) -> None:
    """STORE plus the ways to give file sizes (else they are inferred from the files)."""
    p.add_argument("store", help="store root directory (holds commitlog/, consumequeue/, index/ ...)")
    p.add_argument("--config", metavar="BROKER_CONF", help="broker.conf-style properties file with the store's settings")
    p.add_argument("--commitlog-file-size", type=int, metavar="BYTES", help="mappedFileSizeCommitLog")
    p.add_argument("--consumequeue-file-size", type=int, metavar="BYTES", help="mappedFileSizeConsumeQueue")
    p.add_argument("--max-hash-slot-num", type=int, metavar="N", help="maxHashSlotNum")
    p.add_argument("--max-index-num", type=int, metavar="N", help="maxIndexNum")


def config_from_args(args: argparse.Namespace) -> MessageStoreConfig | None:
    """--config and the size flags; ``None`` means: infer everything from the files.
    A size flag alone is trusted for that size; the others are still inferred."""
    cfg = MessageStoreConfig.from_properties(args.config) if getattr(args, "config", None) else None
    overrides = {
        "mapped_file_size_commit_log": getattr(args, "commitlog_file_size", None),
        "mapped_file_size_consume_queue": getattr(args, "consumequeue_file_size", None),
        "max_hash_slot_num": getattr(args, "max_hash_slot_num", None),
        "max_index_num": getattr(args, "max_index_num", None),
    }
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if overrides:
        cfg = (cfg or infer_config(args.store)).replace(**overrides)
    return cfg


def open_from_args(args: argparse.Namespace, *, strict: bool = True) -> StoreReader:
    """Open STORE read-only with sizes from --config / size flags / the files."""
    return StoreReader(args.store, config_from_args(args), strict=strict)


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
