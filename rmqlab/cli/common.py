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
        index_sizes = None
        if "max_hash_slot_num" in overrides or "max_index_num" in overrides:
            # given index sizes are not inferred (an index file of another shape would fail);
            # one alone: the other as Java's defaults relate them (4 entries per slot)
            slots = overrides.get("max_hash_slot_num") or max(1, overrides["max_index_num"] // 4)
            index_sizes = (slots, overrides.get("max_index_num") or 4 * slots)
            overrides.update(max_hash_slot_num=index_sizes[0], max_index_num=index_sizes[1])
        cfg = (cfg or infer_config(args.store, index_sizes=index_sizes)).replace(**overrides)
    return cfg


def open_from_args(args: argparse.Namespace, *, strict: bool = True) -> StoreReader:
    """Open STORE read-only with sizes from --config / size flags / the files."""
    return StoreReader(args.store, config_from_args(args), strict=strict)


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
