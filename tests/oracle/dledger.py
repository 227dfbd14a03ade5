"""A DLedger store written by RocketMQ (``enableDLegerCommitLog=true``): a one-member
DLedger group (``dLegerPeers`` on a free local port) that elects itself leader, then
takes a seeded workload through ``DefaultMessageStore.putMessage`` as a broker's would."""

from __future__ import annotations

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


def write_dledger_store(oracle: Oracle, tmp: Path, seed: int, n: int = 400, crash_copy: Path | None = None) -> tuple[Path, dict, list]:
    """``(store root, config, put results)``; ``tmp/broker.conf`` holds the config."""
    config, lines = random_workload(seed, n=n)
    config.update(mappedFileSizeCommitLog="16384", enableDLegerCommitLog="true", dLegerGroup="g0",
                  dLegerPeers=f"n0-127.0.0.1:{_free_port()}", dLegerSelfId="n0")
    ans = oracle.write(tmp / "clean", config, write_lines(tmp / "in.jsonl", lines), crash_copy=crash_copy)
    failed = [r for r in ans["results"] if r["status"] != "PUT_OK"]
    assert not failed, failed[:3]
    (tmp / "broker.conf").write_text("".join(f"{k}={v}\n" for k, v in config.items()))
    return tmp / "clean", config, ans["results"]
