"""The live Apache RocketMQ oracle: one JVM running RocketMQ's own ``DefaultMessageStore``
(``tests/oracle/java``), driven by JSON lines.

    with Oracle.start() as rmq:
        ans = rmq.load("/tmp/copy", config)            # what RocketMQ reads: a dump.json
        answers = rmq.map([{"op": "write", ...}, ...])  # many requests at once

The JVM serves requests concurrently (RocketMQ's ``shutdown()`` sleeps three seconds,
so a pool of threads keeps it busy); :meth:`Oracle.map` sends a list and returns the
answers in the same order.  :func:`build` compiles the harness with Maven once (its
own cache makes later builds quick) and says, in one line, why it cannot when Maven or
a JDK is missing.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Iterable, Mapping

JAVA_DIR = Path(__file__).parent / "java"
#: the RocketMQ releases the harness is built against: Maven profile and output folder
#: (5.5.1: its store under 5.5.0's broker, name server and client, which it does not publish)
RELEASES = {
    "5.3.3": ([], JAVA_DIR / "target"),
    "4.9.7": (["-P", "rocketmq4"], JAVA_DIR / "target-4.9.7"),
    **{r: (["-P", f"rocketmq{r}"], JAVA_DIR / f"target-{r}") for r in ("5.4.0", "5.5.0", "5.5.1")},
}


class OracleUnavailable(RuntimeError):
    """Maven, a JDK or the harness build is missing: the reason, in one line."""


class OracleError(RuntimeError):
    """RocketMQ answered a request with an exception (its text and Java stack trace)."""

    def __init__(self, answer: Mapping[str, Any]):
        super().__init__(f"{answer.get('error')}\n{answer.get('trace', '')}")
        self.answer = answer


def _tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    return None


def _package(release: str, timeout: float, copy: bool = True) -> Path | None:
    """``mvn package`` of the harness against ``release`` under that release's lock; the
    built jar copied for this process when ``copy`` (else None)."""
    profile, target = RELEASES[release]
    mvn, javac, java = _tool("mvn"), _tool("javac"), _tool("java")
    if not (mvn and javac and java):
        missing = [n for n, p in (("mvn", mvn), ("javac", javac), ("java", java)) if not p]
        raise OracleUnavailable(f"the RocketMQ oracle needs Maven and a JDK 17+ ({', '.join(missing)} not found)")
    # one build at a time (make test's workers each start an oracle, and make test
    # prefetches every release while it installs), and each process runs its own copy of
    # the jar: a build by another worker must not rewrite the jar under a JVM that is
    # still loading classes from it
    import fcntl

    target.mkdir(parents=True, exist_ok=True)
    with open(JAVA_DIR / f".build-{release}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _up_to_date(target):
            return _copy_jar(target, release) if copy else None
        try:
            done = subprocess.run([mvn, "-q", "-B", *profile, "package"], cwd=JAVA_DIR, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise OracleUnavailable(f"mvn package of {JAVA_DIR} took more than {timeout:.0f} s") from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise OracleUnavailable(f"mvn package of {JAVA_DIR} failed:\n{tail}")
        return _copy_jar(target, release) if copy else None


def _copy_jar(target: Path, release: str) -> Path:
    import tempfile

    jar = Path(tempfile.mkdtemp(prefix=f"rmqlab-oracle-{release}-")) / "rmqlab-oracle-1.jar"
    shutil.copyfile(target / "rmqlab-oracle-1.jar", jar)
    return jar


def _up_to_date(target: Path) -> bool:
    """The jar in ``target`` is newer than the module's sources and every jar of its
    classpath is still in Maven's repository: ``mvn package`` would change nothing, and
    takes 7-10 s of a JVM to say so (a test file that starts an oracle would pay it)."""
    jar, classpath = target / "rmqlab-oracle-1.jar", target / "classpath.txt"
    if not (jar.is_file() and classpath.is_file()):
        return False
    built = jar.stat().st_mtime  # Maven rewrites classpath.txt only when it changes
    sources = [JAVA_DIR / "pom.xml", *(p for p in (JAVA_DIR / "src").rglob("*") if p.is_file())]
    if any(p.stat().st_mtime >= built for p in sources):
        return False
    return all(Path(entry).exists() for entry in classpath.read_text().strip().split(os.pathsep) if entry)


#: the oracle's JVM: small, as the tests run many of them at once
TEST_JVM = ("-Xmx768m", "-XX:+UseSerialGC")


def build(release: str = "5.3.3", timeout: float = 600, jvm: tuple[str, ...] = TEST_JVM) -> list[str]:
    """Compile the harness against RocketMQ ``release`` (``mvn package``) and return the
    java command line that runs it, with the JVM options ``jvm``."""
    jar = _package(release, timeout)
    classpath = f"{jar}{os.pathsep}{(RELEASES[release][1] / 'classpath.txt').read_text().strip()}"
    # RocketMQ unmaps files through JDK internals (4.9 needs them opened on Java 17)
    opens = ["--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
             "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED"]
    return [_tool("java"), *jvm, *opens, "-cp", classpath]


def prefetch() -> int:
    """Build the harness against every release, in the order the suite first needs them:
    on a machine whose Maven repository is empty, ``make test`` runs this while it
    installs, so that RocketMQ's jars download beside pip's instead of inside the tests.
    Best effort: a release that cannot be built is said, and the tests say it again."""
    import time

    for release in RELEASES:
        start = time.monotonic()
        try:
            _package(release, timeout=900, copy=False)
            print(f"oracle harness for RocketMQ {release}: built in {time.monotonic() - start:.0f} s", flush=True)
        except OracleUnavailable as exc:
            print(f"oracle harness for RocketMQ {release}: not built ({str(exc).splitlines()[0]})", flush=True)
    return 0


def build_or_skip(release: str = "5.3.3") -> list[str]:
    """:func:`build`, or the test skipped with the reason; in CI (and with
    ``RMQLAB_REQUIRE_ORACLE=1``) failed instead: a green suite that never asked RocketMQ
    would not be green."""
    import pytest

    try:
        return build(release)
    except OracleUnavailable as exc:
        if os.environ.get("CI") or os.environ.get("RMQLAB_REQUIRE_ORACLE"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


class Oracle:
    """A running harness JVM.  Thread-safe: answers are matched to requests by id."""

    def __init__(self, command: list[str], threads: int = 6):
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._stderr = []
        # answers come on a pipe of their own (the JVM's stdout also gets what native code
        # prints, which once split an answer); stdout and stderr are only drained
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [*command, f"-Doracle.threads={threads}", f"-Doracle.answers=/dev/fd/{w}", "rmqlab.oracle.Oracle"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1, pass_fds=(w,),
            )
        finally:
            os.close(w)
        self.answers = os.fdopen(r, "r", encoding="utf-8")
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()
        first = self.answers.readline()
        if not first:
            self.proc.wait(30)
            raise OracleUnavailable(f"the oracle JVM exited at start: {''.join(self._stderr)[-2000:]}")
        hello = json.loads(first)
        self.rocketmq_version = hello.get("rocketmqVersion")
        threading.Thread(target=self._read, daemon=True).start()

    @classmethod
    def start(cls, threads: int = 6, release: str = "5.3.3") -> "Oracle":
        return cls(build(release), threads)

    # -- plumbing ------------------------------------------------------------------------
    def _read(self) -> None:
        for line in self.answers:
            ans = json.loads(line)
            with self._lock:
                fut = self._pending.pop(ans.get("id"), None)
            if fut is not None:
                fut.set_result(ans)
        with self._lock:
            pending, self._pending = self._pending, {}
        for fut in pending.values():
            fut.set_exception(OracleUnavailable(f"the oracle JVM exited: {''.join(self._stderr)[-2000:]}"))

    def _drain(self, stream) -> None:
        """What the JVM prints on stdout that is not an answer (native code's output),
        kept with stderr's for error messages."""
        for line in stream:
            self._stderr.append(line)

    def _drain_stderr(self) -> None:
        for line in self.proc.stderr:
            self._stderr.append(line)
            del self._stderr[:-200]

    def submit(self, request: Mapping[str, Any]) -> Future:
        req = dict(request)
        req["id"] = next(self._ids)
        fut: Future = Future()
        with self._lock:
            self._pending[req["id"]] = fut
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        return fut

    def call(self, request: Mapping[str, Any], timeout: float = 300) -> dict:
        ans = self.submit(request).result(timeout)
        if not ans.get("ok"):
            raise OracleError(ans)
        return ans

    def map(self, requests: Iterable[Mapping[str, Any]], timeout: float = 600) -> list[dict]:
        """Send every request at once; the answers (raw: ``ok`` may be false) in order."""
        futures = [self.submit(r) for r in requests]
        return [f.result(timeout) for f in futures]

    # -- operations ----------------------------------------------------------------------
    def write(self, directory, config: Mapping[str, Any], input_path, crash_copy=None, topics: Mapping[str, Mapping[str, str]] | None = None) -> dict:
        """RocketMQ puts the JSON lines of ``input_path`` into a new store and shuts down;
        with ``crash_copy``, the live store's files are copied there first (a SIGKILL).
        ``topics``: topic attributes the store is given (e.g. ``{"T": {"queue.type": "BatchCQ"}}``)."""
        return self.call(write_request(directory, config, input_path, crash_copy, topics))

    def load(self, directory, config: Mapping[str, Any], append=None, topics: Mapping[str, Mapping[str, str]] | None = None) -> dict:
        """What RocketMQ reads after loading (and recovering) ``directory``: a dump.json."""
        return self.call(load_request(directory, config, append, topics))

    def hold(self, directory, config: Mapping[str, Any]) -> dict:
        return self.call({"op": "hold", "dir": str(directory), "config": _strings(config)})

    def release(self, directory) -> dict:
        return self.call({"op": "release", "dir": str(directory)})

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "Oracle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _strings(config: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in config.items()}


def write_request(directory, config, input_path, crash_copy=None, topics=None) -> dict:
    return {"op": "write", "dir": str(directory), "config": _strings(config), "input": str(input_path),
            "crashCopy": None if crash_copy is None else str(crash_copy), "topics": topics}


def load_request(directory, config, append=None, topics=None) -> dict:
    return {"op": "load", "dir": str(directory), "config": _strings(config), "append": None if append is None else str(append), "topics": topics}


if __name__ == "__main__":  # python3 tests/oracle/harness.py (make test, while it installs)
    raise SystemExit(prefetch())
