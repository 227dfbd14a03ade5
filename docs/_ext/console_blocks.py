"""The shell examples of the documentation, run for real.

A page shows a command and what it prints in a ``console`` block::

    ```console
    $ rmqlab verify samples/damaged | head -5
    ...what it prints...
    ```

Every command runs with ``bash`` in a folder holding ``samples/`` (what ``rmqlab samples
samples`` writes; a page that runs that command itself starts in an empty folder), stdout
and stderr together as a terminal shows them; a page's commands run in order, in a
folder of its own. The suite checks
that each block shows exactly what its commands print (``tests/docs``); after a change
that alters an output, write the new outputs into the pages with::

    python docs/_ext/console_blocks.py --update docs/howto/*.md
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_BLOCK = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)


@dataclass
class Command:
    line: int  # 1-based line of the ``$`` in the page
    command: str
    shown: str  # the output the page shows


def commands(text: str) -> list[tuple[re.Match, list[Command]]]:
    """Each console block of a page with its commands."""
    out = []
    for m in _BLOCK.finditer(text):
        first_line = text.count("\n", 0, m.start(1)) + 1
        cmds: list[Command] = []
        for i, line in enumerate(m.group(1).splitlines()):
            if line.startswith("$ "):
                cmds.append(Command(first_line + i, line[2:], ""))
            elif cmds:
                cmds[-1].shown += line + "\n"
            elif line.strip():
                raise ValueError(f"line {first_line + i}: a console block starts with a `$ ` command")
        out.append((m, cmds))
    return out


#: the command that writes the sample stores where the pages expect them
WRITE_SAMPLES = "rmqlab samples samples"


@contextmanager
def workspace(text: str = "") -> Iterator[Path]:
    """A new folder for a page's commands, removed afterwards: holding ``samples/`` as
    ``rmqlab samples`` writes it (the shipped sample stores, and those other writers
    wrote: ``samples/rocketmq-rust/``), unless the page writes them itself."""
    from rmqlab.lab.samples import SAMPLES, shipped_dir, write_other_writers

    base = Path(tempfile.mkdtemp(prefix="rmqlab-docs-"))
    try:
        if not any(c.command == WRITE_SAMPLES for _, cmds in commands(text) for c in cmds):
            for name in SAMPLES:
                shutil.copytree(shipped_dir() / name, base / "samples" / name)
            if "samples/rocketmq-rust/" in text:
                write_other_writers(base / "samples")
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(command: str, cwd: Path) -> str:
    env = dict(os.environ, COLUMNS="100", TZ="UTC")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    return done.stdout


def update(path: Path) -> bool:
    """Write what each command prints into the page (its commands run in order, in a
    workspace of its own); True if anything changed."""
    text = path.read_text()
    pieces, last = [], 0
    with workspace(text) as cwd:
        for m, cmds in commands(text):
            body = "".join(f"$ {c.command}\n{run(c.command, cwd)}" for c in cmds)
            pieces += [text[last : m.start(1)], body]
            last = m.end(1)
    new = "".join(pieces) + text[last:]
    if new != text:
        path.write_text(new)
    return new != text


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", nargs="+", type=Path, required=True, help="pages whose console blocks to run and rewrite")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    for page in args.update:
        print(f"{page}: {'updated' if update(page) else 'unchanged'}")
