"""A Spark standalone cluster and a Spark Connect server on 127.0.0.1, started from
the pip ``pyspark`` package's own launchers (``SPARK_HOME`` = the package directory),
for the tests that read stores the way a cluster does.

Each process runs in the foreground of its own process group, logging to its own
file under the fixture's directory; :meth:`stop` ends every one of them.  Start-up
waits are bounded and a failure quotes the log of the process that did not come up.
The cluster's processes get no AWS variables: what an executor needs must travel with
the job.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.spark.object_storage import free_port

START_TIMEOUT = 120  # seconds for a process to say it is up
ROOT = Path(__file__).resolve().parents[2]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _env(workdir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(workdir / "logs"),
        SPARK_PID_DIR=str(workdir / "pids"),
        SPARK_NO_DAEMONIZE="1",  # the launch scripts stay in the foreground: ours to stop
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


class Processes:
    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        self.env = _env(self.workdir)
        self.procs: list[tuple[str, subprocess.Popen, Path]] = []

    def start(self, name: str, argv: list[str], ready: str, count: int = 1, log: Path | None = None) -> Path:
        """Start ``argv`` logging to ``logs/<name>.log``; wait until ``ready`` appears
        ``count`` times in ``log`` (default: its own)."""
        out = self.workdir / "logs" / f"{name}.log"
        fh = open(out, "ab")
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=self.env, cwd=self.workdir, start_new_session=True)
        fh.close()
        self.procs.append((name, proc, out))
        self.wait_for(log or out, ready, count, proc, name)
        return out

    def wait_for(self, log: Path, text: str, count: int, proc, name: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            body = log.read_text(errors="replace") if log.exists() else ""
            if body.count(text) >= count:
                return
            if proc.poll() is not None:
                break
            time.sleep(0.3)
        tail = (log.read_text(errors="replace") if log.exists() else "")[-4000:]
        self.stop()
        raise RuntimeError(f"{name} did not come up within {START_TIMEOUT}s (waiting for {text!r} x{count} in {log}):\n{tail}")

    def stop(self) -> None:
        for _, proc, _ in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for _, proc, _ in reversed(self.procs):
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        self.procs = []

    def stop_one(self, name: str) -> None:
        """Stop one process (its application gives the workers' cores back)."""
        for n, proc, _ in self.procs:
            if n == name and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)
        self.procs = [p for p in self.procs if p[0] != name]

    def alive(self) -> list[str]:
        return [name for name, proc, _ in self.procs if proc.poll() is None]


class StandaloneCluster(Processes):
    """A master and ``workers`` one-core workers."""

    def __init__(self, workdir: Path, workers: int = 2, memory: str = "2g"):
        super().__init__(workdir)
        cls = str(spark_home() / "bin" / "spark-class")
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        master_log = self.start("master", [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                                           "--webui-port", str(free_port())], "I have been elected leader")
        for i in range(workers):
            work = self.workdir / f"worker-{i}"
            work.mkdir(exist_ok=True)
            self.start(f"worker-{i}", [cls, "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1", "--cores", "1",
                                       "--memory", memory, "--webui-port", str(free_port()), "--work-dir", str(work)],
                       "Registering worker", count=i + 1, log=master_log)
        self.workers = workers

    def connect_server(self) -> str:
        """Start a Spark Connect server whose jobs run on this cluster; its URL.  Its
        application holds every worker core while it runs: ``stop_one("connect")``
        before another job needs them."""
        port = free_port()
        self.start("connect", [str(spark_home() / "sbin" / "start-connect-server.sh"), "--master", self.url,
                               "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                               "--conf", "spark.executor.cores=1", "--conf", "spark.executor.memory=1g",
                               "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4"],
                   "Spark Connect server started")
        return f"sc://127.0.0.1:{port}"


# -- a packed environment, as cluster users ship rmqlab -------------------------------------
def packed_environment(cache: Path) -> Path:
    """A venv holding rmqlab as built from this checkout (not editable) and what its
    readers need on a worker, packed by venv-pack: what the
    documentation (docs/howto/spark.md) tells cluster users to ship with ``--archives``.  Cached by the hash of the
    package's sources.  gzip, not a plain tar: Spark unpacks a plain tar without the
    files' modes, and the interpreter must stay executable."""
    h = hashlib.sha256()
    for p in sorted([ROOT / "pyproject.toml", ROOT / "setup.py", *ROOT.joinpath("rmqlab").rglob("*.py"), *ROOT.joinpath("rmqlab").rglob("*.c")]):
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    out = cache / f"rmqlab-env-{h.hexdigest()[:16]}.tar.gz"
    if out.exists():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    env = cache / f"venv-{os.getpid()}"
    # --copies: a real interpreter in bin/, not a link to one outside the archive (Spark
    # refuses to unpack a link that leaves the directory)
    subprocess.run([sys.executable, "-m", "venv", "--copies", str(env)], check=True)
    # rmqlab and its dependencies; pandas because pyspark's worker imports it for Arrow.
    # With uv where `make test` put it (its cache holds them already, it installs in
    # parallel and compiles no module up front), else pip without build isolation and
    # without byte-compiling (the workers compile what they import): half a plain install
    uv = Path(sys.executable).parent / "uv"
    if uv.exists():
        subprocess.run([str(uv), "pip", "install", "--quiet", "--system-certs", "--python", str(env / "bin" / "python"), str(ROOT), "pandas>=2.0,<3"], check=True, cwd=cache)
    else:
        pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "setuptools>=77", "wheel"], check=True)
        subprocess.run([*pip, "--no-build-isolation", "--no-compile", str(ROOT), "pandas>=2.0,<3"], check=True, cwd=cache)
    tmp = cache / f"partial-{os.getpid()}.tar.gz"
    subprocess.run([str(Path(sys.executable).parent / "venv-pack"), "-p", str(env), "-o", str(tmp), "--compress-level", "1", "--quiet", "--force"], check=True)
    tmp.rename(out)
    subprocess.run(["rm", "-rf", str(env)], check=True)
    return out


def unpacked(archive: Path) -> Path:
    """The packed environment unpacked beside the archive (once): the driver's ``env``."""
    import tarfile

    out = archive.parent / (archive.name.split(".")[0] + ".d")
    if not out.exists():
        tmp = archive.parent / f"unpacking-{os.getpid()}"
        with tarfile.open(archive) as tf:
            try:
                tf.extractall(tmp, filter="tar")
            except TypeError:  # Python before 3.11.4 has no extraction filters (our own archive)
                tf.extractall(tmp)
        tmp.rename(out)
    return out
