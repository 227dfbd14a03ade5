"""A real Apache RocketMQ broker, captured: a name server and a broker on loopback ports,
started by RocketMQ's own entry points (``NamesrvStartup``, ``BrokerStartup -c
broker.conf``) in two JVMs, an application driving it through RocketMQ's Java client
(``rmqlab.oracle.Client``: tags, keys, delay levels, timer messages, a batch,
transactions, two consumer groups), then SIGKILL, so the store directory is exactly
what a crashed broker leaves: commitlog, consume queues, index, checkpoint, abort,
the timer wheel and log, ``config/*.json`` with real consumer offsets.

    cap = capture(tmp_path / "capture", command)   # command: harness.build()
    cap.store          # the store root
    cap.sent           # what the client sent (SendResult of each)

Everything started is stopped; a failure raises :class:`CaptureError` with the tail of
the broker's log.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

#: small files so the capture stays small; RocketMQ's names (broker.conf)
BROKER_SETTINGS = {
    "brokerClusterName": "rmqlab",
    "brokerName": "capture",
    "brokerId": "0",
    "brokerIP1": "127.0.0.1",
    "brokerIP2": "127.0.0.1",
    "bindAddress": "127.0.0.1",
    "brokerRole": "ASYNC_MASTER",
    "flushDiskType": "ASYNC_FLUSH",
    "autoCreateTopicEnable": "true",
    "autoCreateSubscriptionGroup": "true",
    "mappedFileSizeCommitLog": str(1 << 20),
    "mappedFileSizeConsumeQueue": str(300 * 20),
    "maxHashSlotNum": "1000",
    "maxIndexNum": "4000",
    "mappedFileSizeTimerLog": str(1 << 20),
    "timerWheelEnable": "true",
    "flushConsumerOffsetInterval": "1000",
    "enablePropertyFilter": "true",
}

LOGBACK = """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="org.apache.rocketmq.logging.ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} [%thread] %-5level %logger - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


class CaptureError(RuntimeError):
    """The broker or the client failed; the message ends with the broker's log."""


@dataclass
class Capture:
    store: Path
    config: dict[str, str]
    sent: list[dict]
    consumed: dict
    log: Path


def _free_port(avoid: set[int]) -> int:
    """A loopback port p with p-2 and p+1 free too (the broker's VIP channel listens on
    listenPort-2, its HA service on haListenPort = listenPort+1)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p < 1100 or {p - 2, p - 1, p, p + 1} & avoid:
            continue
        ok = True
        for q in (p - 2, p + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", q))
                except OSError:
                    ok = False
        if ok:
            return p
    raise CaptureError("no free loopback port")


def _tail(log: Path, n: int = 60) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no broker log)"


#: a port found free can be taken before the JVM binds it (the other test worker's brokers
#: and clients open ports too): a start that fails so is tried again on other ports
_BIND_TRIES = 3


def capture(workdir: Path, command: list[str], messages: int = 60, timeout: float = 180, settings: dict[str, str] | None = None) -> Capture:
    """``settings``: broker settings beside :data:`BROKER_SETTINGS`."""
    for attempt in range(_BIND_TRIES):
        try:
            return _capture(workdir if attempt == 0 else workdir.with_name(f"{workdir.name}-{attempt + 1}"), command, messages, timeout, settings or {})
        except CaptureError as err:
            if "Address already in use" not in str(err) or attempt == _BIND_TRIES - 1:
                raise
    raise AssertionError("unreachable")


def _prepare(workdir: Path, command: list[str], extra: dict[str, str]):
    """The files a name server and a broker on loopback start from (ports picked free):
    ``(store, settings, broker.conf, namesrv.conf, jvm command, environment, log)``."""
    workdir.mkdir(parents=True, exist_ok=True)
    store = workdir / "store"
    log = workdir / "broker.log"
    namesrv_port = _free_port(set())
    broker_port = _free_port({namesrv_port})
    settings = {**BROKER_SETTINGS, **extra}
    settings.update({
        "namesrvAddr": f"127.0.0.1:{namesrv_port}", "listenPort": str(broker_port), "haListenPort": str(broker_port + 1),
        "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
    })
    conf = workdir / "broker.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    nsconf = workdir / "namesrv.conf"
    nsconf.write_text(f"listenPort={namesrv_port}\nbindAddress=127.0.0.1\n")
    logback = workdir / "logback.xml"
    logback.write_text(LOGBACK.format(log=log))
    # RocketMQ 4.9's startups configure plain logback from ROCKETMQ_HOME/conf
    (workdir / "conf").mkdir(exist_ok=True)
    plain = LOGBACK.replace("org.apache.rocketmq.logging.ch.qos.logback", "ch.qos.logback").format(log=log)
    for name in ("logback_namesrv.xml", "logback_broker.xml"):
        (workdir / "conf" / name).write_text(plain)
    java, *opts = command
    jvm = [java, f"-Drmq.logback.configurationFile={logback}", f"-Duser.home={workdir}", *opts[1:]]
    env = dict(os.environ, ROCKETMQ_HOME=str(workdir))  # NamesrvStartup and BrokerStartup insist on it
    return store, settings, conf, nsconf, jvm, env, log


def _start(workdir: Path, jvm: list[str], env: dict, log: Path, name: str, main: str, conf_file: Path, heap: str, booted: str = "boot success") -> subprocess.Popen:
    """One of RocketMQ's servers, started and booted (its output in ``workdir/name.out``)."""
    out = open(workdir / f"{name}.out", "w+")
    p = subprocess.Popen([jvm[0], heap, *jvm[1:], main, "-c", str(conf_file)], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 90
    text = ""
    while time.time() < deadline:
        out.seek(0)
        text = out.read()
        if booted in text:
            return p
        if p.poll() is not None:
            break
        time.sleep(0.2)
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    raise CaptureError(f"the {name} did not start:\n{text[-3000:]}\nlog:\n{_tail(log)}")


NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"


def _capture(workdir: Path, command: list[str], messages: int, timeout: float, extra: dict[str, str]) -> Capture:
    store, settings, conf, nsconf, jvm, env, log = _prepare(workdir, command, extra)
    namesrv_port = int(settings["namesrvAddr"].rsplit(":", 1)[1])
    procs = []

    def start(name: str, main: str, conf_file: Path, heap: str, booted: str) -> None:
        procs.append(_start(workdir, jvm, env, log, name, main, conf_file, heap, booted))

    try:
        start("namesrv", NAMESRV_MAIN, nsconf, "-Xmx256m", "boot success")
        start("broker", BROKER_MAIN, conf, "-Xmx512m", "boot success")
        broker = procs[-1]
        try:
            client = subprocess.run(
                [jvm[0], "-Xmx256m", *jvm[1:], "rmqlab.oracle.Client", f"127.0.0.1:{namesrv_port}", str(messages)],
                capture_output=True, text=True, timeout=timeout, env=env,
            )
        except subprocess.TimeoutExpired as exc:
            raise CaptureError(f"the client did not finish in {timeout:.0f} s:\n{(exc.stderr or b'')[-3000:]!r}\nbroker log:\n{_tail(log)}") from None
        if client.returncode != 0 or not client.stdout.strip():
            raise CaptureError(f"the client failed (exit {client.returncode}):\n{client.stderr[-3000:]}\nbroker log:\n{_tail(log)}")
        result = json.loads(client.stdout.strip().splitlines()[-1])
        # the broker persists consumer offsets every flushConsumerOffsetInterval: wait for both groups
        offsets = store / "config" / "consumerOffset.json"
        deadline = time.time() + 30
        while time.time() < deadline:
            text = offsets.read_text() if offsets.exists() else ""
            if "capture-all" in text and "capture-half" in text:
                break
            time.sleep(0.5)
        else:
            raise CaptureError(f"{offsets}: the consumer groups' offsets were not persisted in 30 s\nbroker log:\n{_tail(log)}")
        broker.send_signal(signal.SIGKILL)  # a crash: no shutdown hook, no last flush
        broker.wait(30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait(30)
    return Capture(store, settings, result["sent"], {"all": result["consumed"], "half": result["consumedHalf"]}, log)


class LiveBroker:
    """A name server and a broker on loopback that keep running: what ``rmqlab tail``
    and the streaming source follow in the tests.  :meth:`kill` is SIGKILL (a crash),
    :meth:`restart` starts the broker again on the same store (its recovery runs);
    :meth:`stream` starts RocketMQ's Java client sending a steady stream
    (``rmqlab.oracle.Stream``: one JSON line per acknowledgement).  Everything started
    is stopped on exit."""

    def __init__(self, workdir: Path, command: list[str], settings: dict[str, str] | None = None):
        for attempt in range(_BIND_TRIES):  # ports found free can be taken before the JVMs bind them
            self.workdir = workdir if attempt == 0 else workdir.with_name(f"{workdir.name}-{attempt + 1}")
            self.store, self.settings, self.conf, nsconf, self.jvm, self.env, self.log = _prepare(self.workdir, command, settings or {})
            self.namesrv_addr = self.settings["namesrvAddr"]
            self.procs: list[subprocess.Popen] = []
            self.broker = None
            try:
                self.procs.append(_start(self.workdir, self.jvm, self.env, self.log, "namesrv", NAMESRV_MAIN, nsconf, "-Xmx256m"))
                self.restart()
                return
            except CaptureError as err:
                self.close()
                if "Address already in use" not in str(err) or attempt == _BIND_TRIES - 1:
                    raise
            except BaseException:
                self.close()
                raise

    def restart(self) -> None:
        self.broker = _start(self.workdir, self.jvm, self.env, self.log, f"broker-{len(self.procs)}", BROKER_MAIN, self.conf, "-Xmx512m")
        self.procs.append(self.broker)

    def kill(self) -> None:
        self.broker.send_signal(signal.SIGKILL)
        self.broker.wait(30)

    def stream(self, topic: str, messages: int, pause_ms: int = 0, body: int = 200) -> subprocess.Popen:
        out = open(self.workdir / f"stream-{topic}.jsonl", "w")
        p = subprocess.Popen([self.jvm[0], "-Xmx256m", *self.jvm[1:], "rmqlab.oracle.Stream", self.namesrv_addr, topic, str(messages), str(pause_ms), str(body)],
                             stdout=out, stderr=open(self.workdir / f"stream-{topic}.err", "w"), env=self.env)
        p.acks_path = self.workdir / f"stream-{topic}.jsonl"
        self.procs.append(p)
        return p

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait(30)

    def __enter__(self) -> "LiveBroker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
