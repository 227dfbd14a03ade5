"""What the command line does with wrong requests: a refusal in one or two lines that
names the rule (exit 2), never a traceback, never an answer to a question not asked."""

from __future__ import annotations

import importlib.metadata

import pytest

from tests.support import REFERENCE
from tests.support import run_rmqlab as cli

CLEAN = REFERENCE / "clean" / "store"


def refused(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2, lines  # not the whole usage block
    for n in needles:
        assert str(n) in proc.stderr, (n, proc.stderr)


@pytest.mark.parametrize(
    "argv,needles",
    [
        (["info", CLEAN, "--commitlog-file-size", "-5"], ["--commitlog-file-size", "-5", "at least 4096"]),
        (["info", CLEAN, "--commitlog-file-size", "1000"], ["1000", "at least 4096"]),
        (["verify", CLEAN, "--consumequeue-file-size", "30"], ["30", "multiple of 20"]),
        (["dump", CLEAN, "--from", "200", "--to", "100"], ["--to 100 is not after --from 200"]),
        (["dump", CLEAN, "--from", "-1"], ["--from", "-1", "at least 0"]),
        (["hexdump", CLEAN / "checkpoint", "--length", "-1"], ["--length", "at least 1"]),
        (["hexdump", CLEAN / "checkpoint", "--offset", "-5"], ["--offset", "at least 0"]),
        (["lookup", CLEAN, "--offset", "-1"], ["--offset", "at least 0"]),
        (["lookup", CLEAN, "--key", "k", "--topic", "T", "--max", "0"], ["--max", "at least 1"]),
        (["generate", "{tmp}/new", "--size", "-1"], ["--size must be a positive number"]),
        (["recover", CLEAN, "--rocketmq-version", "6.0"], ["--rocketmq-version", "unknown RocketMQ release '6.0'", "5.5.0"]),
        (["verify", CLEAN, "--rocketmq-version", "five"], ["--rocketmq-version", "unknown RocketMQ release"]),
        (["info", CLEAN, "--no-such-option"], ["unrecognized arguments: --no-such-option", "rmqlab info --help"]),
        (["no-such-command"], ["invalid choice", "rmqlab --help"]),
    ],
)
def test_wrong_numbers_and_options_are_refused_in_two_lines(tmp_path, argv, needles):
    argv = [str(a).replace("{tmp}", str(tmp_path)) for a in argv]
    refused(cli(*argv), *needles)


def test_salvage_refuses_what_is_not_a_store(tmp_path):
    (tmp_path / "x").mkdir()
    refused(cli("salvage", tmp_path), "nothing to salvage", "neither a store root")
    (tmp_path / "s" / "commitlog").mkdir(parents=True)
    refused(cli("salvage", tmp_path / "s"), "commitlog/ holds no commitlog file")
    refused(cli("salvage", CLEAN, "--commitlog-file-size", "7"), "at least 4096")
    out = tmp_path / "out.jsonl"
    refused(cli("salvage", tmp_path, "--out", out))
    assert not out.exists()  # refused before anything was written


def test_version_help_and_exit_statuses_are_told():
    v = cli("--version")
    assert v.returncode == 0 and v.stdout == f"rmqlab {importlib.metadata.version('rmqlab')}\n"
    for command in ("info", "dump", "lookup", "queue", "hexdump", "recover", "verify", "salvage", "diff", "generate", "write"):
        h = cli(command, "--help")
        assert h.returncode == 0
        assert "``" not in h.stdout and ":func:" not in h.stdout and ":class:" not in h.stdout, (command, h.stdout)
    assert "1 when none was" in cli("lookup", "--help").stdout.replace("\n", " ").replace("  ", " ")


def test_an_empty_first_commitlog_file_is_read_alike_and_recover_says_rocketmq_refuses(store_copy):
    """RocketMQ's MappedFileQueue.load returns false for a 0-byte file that is not the
    last one: the broker does not start.  info and verify count the same records and
    end of log; recover says so and exits 1."""
    import json

    root = store_copy("clean")
    (root / "commitlog" / "00000000000000000000").write_bytes(b"")
    info = cli("info", root, "--json")
    verify = cli("verify", root, "--json")
    assert info.returncode == 0 and verify.returncode == 1
    i, v = json.loads(info.stdout), json.loads(verify.stdout)
    assert i["records"] == v["stats"]["records"] > 0
    assert i["commitlog_end_offset"] == v["stats"]["log_end"]
    assert i["load_refused"] and "0 bytes" in i["load_refused"][0]
    assert "RocketMQ would refuse to load this store" in cli("info", root).stdout
    rec = cli("recover", root)
    assert rec.returncode == 1 and "RocketMQ would refuse to load this store" in rec.stdout
    assert "00000000000000000000" in rec.stderr and len(rec.stderr.splitlines()) == 1


def test_a_hot_key_is_answered_as_rocketmq_caps_it(tmp_path):
    """IndexService.queryOffset answers at most maxMsgsNumBatch (64) offsets."""
    from rmqlab.engine import Message, MessageStore

    root = tmp_path / "store"
    with MessageStore.open(root) as store:
        for i in range(83):
            store.put(Message("Hot", b"x", {"KEYS": "hot"}, queue_id=i % 2))
    capped = cli("lookup", root, "--topic", "Hot", "--key", "hot", "--json")
    assert capped.returncode == 0 and len(capped.stdout.splitlines()) == 64
    assert "capped at 64" in capped.stderr and "--max" in capped.stderr
    every = cli("lookup", root, "--topic", "Hot", "--key", "hot", "--json", "--max", "100")
    assert len(every.stdout.splitlines()) == 83 and "capped" not in every.stderr


def test_a_config_with_some_sizes_infers_the_others_and_says_where_each_came_from(tmp_path):
    import json

    conf = tmp_path / "broker.conf"
    conf.write_text("# only the index's slots\nmaxHashSlotNum=64\nflushDiskType=SYNC_FLUSH\n")
    out = cli("info", CLEAN, "--config", conf, "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["config"]["mappedFileSizeCommitLog"] == 65536  # not RocketMQ's 1 GiB default
    assert info["config"]["maxIndexNum"] == 256 and not info["problems"]
    src = info["size_sources"]
    assert src["maxHashSlotNum"] == f"set by --config {conf}"
    assert src["mappedFileSizeCommitLog"].startswith("inferred from the files in commitlog/")
    assert "4 x maxHashSlotNum" in src["maxIndexNum"]
    flagged = json.loads(cli("info", CLEAN, "--config", conf, "--commitlog-file-size", "65536", "--json").stdout)
    assert flagged["size_sources"]["mappedFileSizeCommitLog"] == "given by --commitlog-file-size"
    text = cli("info", CLEAN).stdout
    assert "mappedFileSizeConsumeQueue = 400  (inferred from consumequeue/" in text


def test_the_command_line_starts_without_the_heavy_libraries():
    """`rmqlab --help` (and the start of any command) imports no numpy, numba, construct or
    pyarrow before the command needs them: `import rmqlab` loads its names when first
    asked for, and the parser imports only the command it runs (the others are listed by
    their line of help).  A command still parses as its own parser says."""
    import subprocess
    import sys

    probe = ("import sys\nfrom rmqlab.cli import build_parser, main\nbuild_parser(None).format_help()\n"
             "heavy = sorted(m for m in ('numpy', 'numba', 'construct', 'pyarrow') if m in sys.modules)\nprint(heavy)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out
    from rmqlab.cli import build_parser

    whole, one = build_parser(), build_parser("dump")
    assert whole.parse_args(["dump", "x", "--json"]).json and one.parse_args(["dump", "x", "--json"]).json
    assert build_parser(None).format_help() == whole.format_help()


@pytest.mark.parametrize("argv", [["info", "crashed"], ["dump", "clean"], ["recover", "crashed"], ["recover", "clean"], ["verify", "damaged"], ["map", "damaged"]])
def test_a_read_command_on_a_small_store_does_without_the_compiled_loops(argv):
    """A small store's records are read one by one (the decoder's SMALL_RANGE, the
    recovery walk's KERNEL_FROM) and verify's index loops and re-dispatch's queue
    check run interpreted (kernels.INTERPRETED_BELOW, INTERPRETED_QUEUE_CHECK_BELOW), and
    the dry run's few records between the queues' end and re-dispatch are read one by one
    (redispatch.BULK_DISPATCH_MIN): numba, ~0.5 s of a command's start to import and load,
    is not imported at all; the answer is the one the compiled loops give when every
    threshold is 0."""
    import subprocess
    import sys

    from tests.support import SAMPLES

    store = str(SAMPLES / argv[1])
    probe = ("import sys, contextlib, io\nfrom rmqlab.cli import main\nout = io.StringIO()\n"
             f"with contextlib.redirect_stdout(out):\n    main({[argv[0], store]!r})\n"
             "print('numba' in sys.modules)\nprint(out.getvalue())")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded, _, text = done.partition("\n")
    assert loaded == "False", f"rmqlab {' '.join(argv)} imported numba"
    # the same command with every threshold at 0: the compiled loops read it all
    loops = ("from rmqlab.scan import acceptance, decode, kernels\nfrom rmqlab.recovery import costs, redispatch\n"
             "acceptance.KERNEL_FROM = kernels.INTERPRETED_QUEUE_CHECK_BELOW = kernels.INTERPRETED_BELOW = 0\ndecode.SMALL_RANGE = -1\n"
             "costs.BULK_DISPATCH_MIN = redispatch.BULK_DISPATCH_MIN = 0\n")
    with_loops = subprocess.run([sys.executable, "-c", loops + probe],
                                capture_output=True, text=True, check=True).stdout
    assert with_loops.startswith("True\n")
    with_loops = with_loops.partition("\n")[2]
    assert text.strip() == with_loops.strip() and text.strip()


@pytest.mark.parametrize("argv", [["info", "crashed"], ["dump", "clean"], ["recover", "crashed"], ["verify", "damaged"], ["map", "damaged"], ["--version"]])
def test_a_read_command_on_a_small_store_imports_only_what_it_uses(argv):
    """What a command on a sample store spends before it reads is mostly imports: the
    program (``rmqlab.cli.command``, as the console script runs it) reaches Arrow's
    kernels without ``pyarrow.compute`` (its ~290 wrappers: rmqlab.scan.compute),
    the CRC-32C package only for the files that carry one, the package metadata only
    for ``--version``, never dateutil or numpy.ma (which pyarrow imports for a
    Python list of no given type, or a numpy array), and construct's pdb only as a
    name (its debugger's modules, bdb, are not loaded)."""
    import subprocess
    import sys

    from tests.support import SAMPLES

    args = [argv[0], str(SAMPLES / argv[1])] if len(argv) > 1 else argv
    probe = (f"import sys, contextlib, io\nsys.argv = ['rmqlab', *{args!r}]\nfrom rmqlab.cli import command\n"
             "with contextlib.redirect_stdout(io.StringIO()) as out:\n    try:\n        command()\n    except SystemExit:\n        pass\n"
             "print(sorted(m for m in ('pyarrow.compute', 'crc32c', 'importlib.metadata', 'dateutil', 'numpy.ma', 'pandas', 'bdb') if m in sys.modules))\n"
             "print(bool(out.getvalue()))")
    loaded, said = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert said == "True"  # it answered
    assert loaded == ("['importlib.metadata']" if argv == ["--version"] else "[]"), f"rmqlab {' '.join(argv)} imported {loaded}"


@pytest.mark.parametrize("left", ["an exit function", "a thread"])
def test_the_program_ends_with_what_was_left_to_run_at_exit_done(left):
    """``rmqlab`` (``cli.program``) ends its process without the interpreter's teardown,
    but not without what a command left for the end: a function the command registered
    to run at exit still runs, a thread it left running (not a daemon) is waited for,
    and the exit status and everything printed still reach the caller."""
    import subprocess
    import sys

    from tests.support import SAMPLES

    leave = ("atexit.register(lambda: print('left for the end'))" if left == "an exit function" else
             "threading.Thread(target=lambda: (time.sleep(0.3), print('left for the end', flush=True))).start()")
    for store, status in ((SAMPLES / "clean", 0), (SAMPLES / "no-such-store", 2)):
        probe = (f"import atexit, sys, threading, time\nsys.argv = ['rmqlab', 'info', {str(store)!r}]\nimport rmqlab.cli as cli\n"
                 f"def command(run=cli.command):\n    code = run()\n    {leave}\n    return code\n"
                 "cli.command = command\ncli.program()\n")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        assert done.returncode == status, done.stderr
        assert done.stdout.rstrip().endswith("left for the end")
        assert (f"store {store}" in done.stdout) if status == 0 else ("not a directory" in done.stderr)
