"""No layout number is typed outside the schema modules and the layout table derived
from them: magic codes, their bytes, record field positions and the names that used to
hold hand-typed positions.  Code everywhere else asks ``rmqlab.format`` (the schemas,
``layout``'s positions, ``commitlog.record_size``).  Comments and strings may quote the
numbers; a line that needs one of these values for another reason says so with
``# not a layout``."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from rmqlab.format import commitlog as cl
from rmqlab.format import layout

PACKAGE = Path(__file__).resolve().parents[2] / "rmqlab"

#: the schema modules (each layout declared once) and the table derived from them
OWNERS = {"format/commitlog.py", "format/consumequeue.py", "format/indexfile.py", "format/checkpoint.py", "format/batch.py", "format/layout.py"}


def _signed(v: int) -> int:
    return v - (1 << 32) if v >= 1 << 31 else v


#: values that are a layout wherever they appear as a number in code
MAGICS = {cl.MAGIC_V1, cl.MAGIC_V2, cl.MAGIC_BLANK} | {abs(_signed(m)) for m in (cl.MAGIC_V1, cl.MAGIC_V2, cl.MAGIC_BLANK)}
#: a record's field positions that are distinctive enough to spot: sysFlag, bodyLength
#: for each host combination
POSITIONS = {layout.SYS_FLAG_AT, *map(int, layout.LEN_BODY_AT)}
#: the magic's bytes, as hex literals (how a byte-wise compare spells them)
MAGIC_BYTES = {f"0x{b:02x}" for b in layout.MAGIC_V1_BYTES + layout.MAGIC_V2_BYTES[3:]}
#: names that held hand-typed positions before the layout table owned them
OLD_NAMES = re.compile(r"\b(SYSFLAG_POSITION|BORN_HOST_POSITION|BODY_LENGTH_POSITION)\b")
OPT_OUT = "# not a layout"


def _python_findings(path: Path, text: str) -> list[str]:
    out = []
    lines = text.splitlines()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        line = lines[tok.start[0] - 1] if tok.start[0] <= len(lines) else ""
        if OPT_OUT in line:
            continue
        if tok.type == tokenize.NUMBER:
            try:
                v = int(tok.string, 0)
            except ValueError:
                continue
            if v in MAGICS or v in POSITIONS or tok.string.lower() in MAGIC_BYTES:
                out.append(f"{path}:{tok.start[0]}: {tok.string}: {line.strip()}")
        elif tok.type == tokenize.NAME and OLD_NAMES.fullmatch(tok.string):
            out.append(f"{path}:{tok.start[0]}: {tok.string}: {line.strip()}")
    return out


def _c_findings(path: Path, text: str) -> list[str]:
    code = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = []
    for n, line in enumerate(code.splitlines(), 1):
        line = re.sub(r"//.*", "", line)
        line = re.sub(r'"([^"\\]|\\.)*"', '""', line)
        for m in re.finditer(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b", line):
            v = int(m.group(1), 0)
            if v in MAGICS or v in POSITIONS or m.group(1).lower() in MAGIC_BYTES:
                out.append(f"{path}:{n}: {m.group(1)}: {line.strip()}")
    return out


def _findings(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel in OWNERS or path.suffix not in (".py", ".c"):
            continue
        text = path.read_text()
        out += _python_findings(path, text) if path.suffix == ".py" else _c_findings(path, text)
    return out


def test_no_layout_literal_outside_the_schemas():
    found = _findings(PACKAGE)
    assert not found, "layout numbers typed outside rmqlab/format's schemas; ask the schema or rmqlab.format.layout:\n" + "\n".join(found)


@pytest.mark.parametrize("name, text", [
    ("a.py", "SYS = 36\n"),
    ("b.py", "ok = buf[7] == 0xA7\n"),
    ("c.py", "MAGIC = -626843481\n"),
    ("d.py", "SYSFLAG_POSITION = layout.SYS_FLAG_AT\n"),
    ("e.c", "static const int at = 84; /* bodyLength */\n"),
])
def test_the_check_sees_each_kind(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    assert len(_findings(tmp_path)) == 1


def test_comments_strings_and_opt_outs_pass(tmp_path):
    (tmp_path / "ok.py").write_text('"""magic 0xDAA320A7 at 84"""\nx = 1  # sysFlag at 36\nw = 96  # not a layout: a width\n')
    (tmp_path / "ok.c").write_text('/* 0xDAA320A7 */ int x = 1; // 84\nconst char *s = "84";\n')
    assert _findings(tmp_path) == []
