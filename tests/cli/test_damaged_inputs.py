"""Every read-only command on damaged copies of a store RocketMQ wrote: bytes flipped,
zeroed, cut off or appended, files emptied or deleted (seeded, so a failure
reproduces).  Whatever the damage, a command either answers or fails with one line
that names a file of the store — never a traceback — and leaves the evidence as it
was."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from rmqlab.cli import main
from tests.support import REFERENCE, copy_store

CASE = "crash-torn"  # already damaged by RocketMQ's crash; the mutations add more
SEEDS = range(24)


def _mutate(root: Path, rng: random.Random) -> str:
    # a kind of file first (commitlog, consume queues, index, checkpoint and the other
    # top-level files, config), so that the few files of a kind are hit as often
    groups: dict[str, list[Path]] = {}
    for f in sorted(root.rglob("*")):
        if f.is_file():
            top = f.relative_to(root).parts[0]
            groups.setdefault(top if (root / top).is_dir() else "top-level", []).append(f)
    p = rng.choice(groups[rng.choice(sorted(groups))])
    data = bytearray(p.read_bytes())
    kind = rng.choice(["flip", "flip", "zero", "cut", "append", "empty", "delete"])
    if kind == "delete":
        p.unlink()
    else:
        if kind == "flip" and data:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == "zero" and data:
            a = rng.randrange(len(data))
            b = min(len(data), a + rng.randint(1, 4096))
            data[a:b] = bytes(b - a)
        elif kind == "cut" and data:
            del data[rng.randrange(len(data)) :]
        elif kind == "append":
            data += rng.randbytes(rng.randint(1, 5000))
        elif kind == "empty":
            data = bytearray()
        p.write_bytes(bytes(data))
    return f"{kind} {p.relative_to(root)}"


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def _commands(root: Path, conf: Path, scratch: Path, rng: random.Random):
    c = ["--config", str(conf)]

    def some(sub: str) -> str:
        found = sorted(p for p in (root / sub).rglob("*") if p.is_file()) if (root / sub).is_dir() else []
        return str(rng.choice(found)) if found else str(root / sub)

    yield ["info", *c, root]
    yield ["info", *c, "--json", "--no-scan", root]
    yield ["dump", *c, "--json", "--all", root]
    yield ["dump", *c, "--topic", "TopicB", "--queue", "2", root]
    yield ["verify", *c, "--json", root]
    yield ["queue", *c, "--topic", "TopicA", "--queue-id", "0", root]
    yield ["lookup", *c, "--topic", "TopicB", "--key", "shared", root]
    yield ["lookup", *c, "--offset", "0", root]
    yield ["lookup", *c, "--queue", "TopicA:1:2", root]
    yield ["lookup", *c, "--time", "1795303000000", "--topic", "TopicA", "--queue-id", "0", root]
    yield ["hexdump", "--length", "300", some("commitlog")]
    yield ["hexdump", "--length", "300", some("consumequeue")]
    yield ["hexdump", "--length", "400", "--kind", "index", "--max-hash-slot-num", "64", some("index")]
    yield ["hexdump", "--kind", "checkpoint", root / "checkpoint"]
    yield ["salvage", "--commitlog-file-size", "65536", "--out", scratch / "salvaged.jsonl", root]
    yield ["recover", *c, "--dry-run", root]
    yield ["recover", *c, "--out", scratch / "recovered", root]
    yield ["diff", REFERENCE / CASE / "store", root]


@pytest.fixture(scope="module")
def broker_conf(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("conf") / "broker.conf"
    p.write_text("".join(f"{k}={v}\n" for k, v in json.loads((REFERENCE / CASE / "config.json").read_text())["storeConfig"].items()))
    return p


@pytest.mark.parametrize("seed", SEEDS)
def test_read_only_commands_on_a_damaged_store(tmp_path, capsys, broker_conf, seed):
    rng = random.Random(seed)
    root = copy_store(CASE, tmp_path / "capture")
    damage = [_mutate(root, rng) for _ in range(rng.randint(1, 3))]
    before = _digest(root)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for argv in _commands(root, broker_conf, scratch, rng):
        argv = [str(a) for a in argv]
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's own exits
            rc = exc.code
        out, err = capsys.readouterr()
        where = f"damage {damage}, command {argv}"
        assert rc in (0, 1, 2), f"{where}: exit {rc}"
        if rc == 2:  # a refusal: one line that names a file (or directory) of the capture
            assert len(err.strip().splitlines()) == 1 and str(tmp_path) in err, f"{where}: {err!r}"
        assert _digest(root) == before, f"{where}: changed the evidence"
