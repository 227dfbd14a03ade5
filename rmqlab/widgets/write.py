"""``WriteForm``: put a message into a scratch store and watch what changes.

A broker's put is several steps that usually happen too fast to see.  The form runs
the engine (:class:`rmqlab.engine.MessageStore`) with ``dispatch="manual"`` and no
background services, so each step waits for a button:

1. **put** — the record is appended to the CommitLog (Java ``CommitLog.putMessage``);
   the producer is answered; no consume queue points at it yet;
2. **dispatch** — one pending record goes to its consume queue and to the index
   (Java ``ReputMessageService`` → ``CommitLogDispatcherBuildConsumeQueue`` and
   ``…BuildIndex``): a 20-byte entry appears, slots move, chains grow;
3. **flush** — everything is forced to disk and the checkpoint records how far.

After every step :attr:`changes` holds what moved (plain data) and the output shows
it: the new bytes in coloured hex, slot values before and after, checkpoint fields.
"""

from __future__ import annotations

import atexit
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import ipywidgets as widgets

from ..format.consumequeue import CQ_STORE_UNIT_SIZE
from ..format.hashing import index_key_hash
from ..format.indexfile import entry_position
from ..rules import index_keys
from ..forensics.hexview import HexView
from ..render.notebook import badge, esc, table
from ..render.text import fmt_time
from ..store.reader import StoreReader
from .base import Panel, StatusLine, scratch_dir


@dataclass
class Snapshot:
    """What the store looks like on disk at one moment (read with a fresh reader)."""

    commitlog_end: int
    queues: dict[str, int]  # "topic/qid" -> max offset (one past the last entry)
    index_files: list[tuple[str, int]]  # (name, indexCount)
    slots: dict[str, tuple[str, int, int]]  # indexed key -> (index file, slot, slot value)
    checkpoint: dict[str, int] = field(default_factory=dict)


def take_snapshot(root: Path, config, keys: list[str]) -> Snapshot:
    with StoreReader(root, config) as r:
        end = r.commitlog.max_offset() if r.commitlog.queue.files else 0
        queues = {}
        for q in r.queue_ids():
            lo, hi = r.consume_queue(q.topic, q.queue_id).valid_range()
            queues[str(q)] = hi
        files = [(f.name, f.index_count) for f in r.index.files]
        slots = {}
        if r.index.files:
            last = r.index.files[-1]
            for k in keys:
                s = index_key_hash(k) % last.max_hash_slot_num
                slots[k] = (last.name, s, int(last.slots()[s]))
        cp = r.checkpoint()
        return Snapshot(end, queues, files, slots, cp.to_dict() if cp else {})


def indexed_keys(topic: str, keys: str, uniq: str) -> list[str]:
    """``topic#key`` strings the index gets for a message (UNIQ_KEY first, then KEYS)."""
    return index_keys(topic, uniq, keys)


#: checkpoint fields a flush may leave alone, and why (shown beside them)
UNCHANGED_WHY = {
    "index_msg_timestamp": "indexMsgTimestamp moves only when an index file is full: IndexService flushes the full file, then the checkpoint takes its endTimestamp",
    "master_flushed_offset": "masterFlushedOffset: written by a slave in a master/slave pair (HA), 0 on a master",
    "confirm_phy_offset": "confirmPhyOffset: the offset confirmed by the replicas (5.x controller mode), 0 without",
    "logics_physical_offset": "logicsPhysicalOffset (5.5+): the log offset of that last consume-queue entry; 0 as 5.3 writes",
}


class WriteForm(Panel):
    """A form over a scratch store (a new temporary directory unless ``root`` is given).

    ``form.topic.value = "Orders"; form.message_keys.value = "order-1"; form.put.click()``
    then ``form.dispatch.click()`` and ``form.flush.click()``.
    """

    def __init__(self, root: str | os.PathLike | None = None, *, config=None, clock=None, start_ms: int = 1_767_261_600_000):
        from ..writers.clock import ManualClock
        from ..engine.message_store import MessageStore
        from ..lab.samples import STORE_HOST, sample_config

        self.root = Path(root) if root is not None else scratch_dir("write") / "store"
        if root is None:  # our own scratch directory: gone when the kernel exits normally
            atexit.register(_remove_scratch, self)
        self.config = config or sample_config()
        self.clock = clock or ManualClock(start_ms, tick_ms=0)
        self.store = MessageStore.open(self.root, self.config, clock=self.clock, store_host=STORE_HOST, dispatch="manual", services=False)
        self.topic = widgets.Text(value="Orders", description="topic")
        self.queue_id = widgets.BoundedIntText(value=0, min=0, max=1023, description="queue id")
        self.tags = widgets.Text(value="created", description="tags")
        self.message_keys = widgets.Text(value="order-1", description="keys", placeholder="space separated")
        self.body = widgets.Textarea(value='{"order": 1}', description="body")
        self.put = widgets.Button(description="put", button_style="primary")
        self.dispatch = widgets.Button(description="dispatch one")
        self.flush = widgets.Button(description="flush")
        self.status = StatusLine()
        super().__init__([widgets.HBox([self.topic, self.queue_id]), widgets.HBox([self.tags, self.message_keys]), self.body, widgets.HBox([self.put, self.dispatch, self.flush]), self.status], primary=self.put)
        self.sent = 0
        self.last_result = None
        self.changes: dict = {}
        self._pending_keys: list[list[str]] = []  # indexed keys of each pending record
        self.put.on_click(lambda _: self.do_put())
        self.dispatch.on_click(lambda _: self.do_dispatch())
        self.flush.on_click(lambda _: self.do_flush())
        self._status()
        self.show("<div>fill the form and press <b>put</b></div>")

    # -- actions -----------------------------------------------------------------------
    def do_put(self):
        from ..engine.message import Message
        from ..lab.samples import uniq_key

        self.clock.advance(1000)  # one second between puts: index timeDiff moves visibly
        born = self.clock.ms - 3
        uniq = uniq_key(self.sent, born)
        properties = {}
        if self.message_keys.value.strip():
            properties["KEYS"] = self.message_keys.value
        properties["UNIQ_KEY"] = uniq
        if self.tags.value:
            properties["TAGS"] = self.tags.value
        msg = Message(self.topic.value, self.body.value.encode(), properties, queue_id=self.queue_id.value, born_timestamp=born, born_host=(b"\x7f\x00\x00\x01", 50000))
        keys = indexed_keys(self.topic.value, self.message_keys.value, uniq)
        before = take_snapshot(self.root, self.config, keys)
        result = self.store.put(msg)
        self.last_result = result
        if not result.ok:
            self.changes = {"step": "put", "status": result.status.value, "reason": result.reason}
            self.show(f"<div>{badge(result.status.value, False)} {esc(result.reason)}</div>")
            self._status()
            return result
        self.sent += 1
        self._pending_keys.append(keys)
        after = take_snapshot(self.root, self.config, keys)
        self.changes = {
            "step": "put",
            "status": result.status.value,
            "physical_offset": result.wrote_offset,
            "size": result.wrote_bytes,
            "queue_offset": result.queue_offset,
            "commitlog_end": (before.commitlog_end, after.commitlog_end),
            "queue_max_offset": (before.queues.get(f"{msg.topic}/{msg.queue_id}", 0), after.queues.get(f"{msg.topic}/{msg.queue_id}", 0)),
        }
        path, pos = self._commitlog_position(result.wrote_offset)
        hv = HexView(path, pos, result.wrote_bytes)
        q = f"{msg.topic}/{msg.queue_id}"
        self.show(
            f"<div><b>put</b>: {badge(result.status.value, True)} — record of {result.wrote_bytes} bytes appended at physical offset "
            f"<b>{result.wrote_offset}</b>, stored at {fmt_time(result.store_timestamp)}; queue offset {result.queue_offset} reserved in {esc(q)}; "
            f"msgId {esc(result.msg_id)}.</div>"
            f"<div>The producer has its answer, but the consume queue {esc(q)} still ends at {self.changes['queue_max_offset'][1]}: "
            f"no consumer can see this message until it is <b>dispatched</b>.</div>" + hv._repr_html_()
        )
        self._status()
        return result

    def do_dispatch(self):
        if not self._pending_keys:
            self.changes = {"step": "dispatch", "dispatched": 0}
            self.show("<div>nothing to dispatch: every record is in its queue and the index</div>")
            self._status()
            return 0
        keys = self._pending_keys[0]
        before = take_snapshot(self.root, self.config, keys)
        n = self.store.reput(1)
        self._pending_keys.pop(0)
        after = take_snapshot(self.root, self.config, keys)
        moved = {q: (before.queues.get(q, 0), hi) for q, hi in after.queues.items() if before.queues.get(q, 0) != hi}
        self.changes = {"step": "dispatch", "dispatched": n, "queues": moved, "slots": {}, "index_count": (before.index_files[-1][1] if before.index_files else 0, after.index_files[-1][1] if after.index_files else 0)}
        parts = [f"<div><b>dispatch</b>: {n} record went to its consume queue and to the index.</div>"]
        for q, (lo, hi) in moved.items():
            topic, _, qid = q.rpartition("/")
            entry = hi - 1
            path, pos = self._cq_position(topic, int(qid), entry)
            parts.append(f"<div>consume queue {esc(q)}: max offset {lo} → {hi}; the new 20-byte entry {entry} (offset, size, tagsCode):</div>")
            parts.append(HexView(path, pos, CQ_STORE_UNIT_SIZE)._repr_html_())
        rows = []
        for k in keys:
            fname, slot, new = after.slots[k]
            old = before.slots.get(k, (fname, slot, 0))
            old_value = old[2] if old[0] == fname else 0
            self.changes["slots"][k] = (old_value, new)
            rows.append((k, index_key_hash(k), slot, old_value, new, f"entry {new}.prevIndex = {old_value}" + (" (chain starts here)" if old_value == 0 else " (the chain grows)")))
        if rows:
            fname = after.index_files[-1][0]
            parts.append(table(["indexed key", "keyHash", "slot", "slot before", "slot after", "chain"], rows, caption=f"index file {fname}: indexCount {self.changes['index_count'][0]} → {self.changes['index_count'][1]}"))
            newest = max(r[4] for r in rows)
            p = self.root / "index" / fname
            parts.append(HexView(p, entry_position(self.config.max_hash_slot_num, newest), CQ_STORE_UNIT_SIZE, max_hash_slot_num=self.config.max_hash_slot_num)._repr_html_())
        self.show("".join(parts))
        self._status()
        return n

    def do_flush(self):
        before = take_snapshot(self.root, self.config, [])
        self.store.flush()
        self._pending_keys.clear()  # flush dispatches what is pending first
        after = take_snapshot(self.root, self.config, [])
        changed = {k: (before.checkpoint.get(k, 0), v) for k, v in after.checkpoint.items() if before.checkpoint.get(k, 0) != v}
        self.changes = {"step": "flush", "checkpoint": changed}
        rows = []
        for k, v in after.checkpoint.items():
            a = before.checkpoint.get(k, 0)
            why = UNCHANGED_WHY.get(k, "") if a == v else ""
            rows.append((k, a, v, fmt_time(v) if k.endswith("timestamp") and v else "", why))
        self.show(
            "<div><b>flush</b>: commitlog, consume queues and index forced to disk; the checkpoint records the store time of the last "
            "record each of them holds durably — recovery after a crash starts from there (lesson 8).</div>"
            + table(["checkpoint field", "before", "after", "after (UTC)", "why it did not move"], rows)
        )
        self._status()

    # -- helpers ------------------------------------------------------------------------
    def _commitlog_position(self, phy: int) -> tuple[Path, int]:
        size = self.config.mapped_file_size_commit_log
        base = phy - phy % size
        return self.root / "commitlog" / f"{base:020d}", phy - base

    def _cq_position(self, topic: str, queue_id: int, entry: int) -> tuple[Path, int]:
        size = self.config.mapped_file_size_consume_queue
        pos = entry * CQ_STORE_UNIT_SIZE
        base = pos - pos % size
        return self.root / "consumequeue" / topic / str(queue_id) / f"{base:020d}", pos - base

    def _status(self) -> None:
        self.status.value = (
            f"<div style='color:#555'>scratch store: {self.store.max_phy_offset} bytes of CommitLog, "
            f"{self.store.dispatch_behind} record(s) waiting for dispatch, flushed up to {self.store.flushed_where}</div>"
        )

    def close_store(self) -> None:
        """Shut the scratch store down cleanly (checkpoint written, ``abort`` removed)."""
        self.store.shutdown()


def _remove_scratch(form: "WriteForm") -> None:
    try:
        form.store.shutdown()
    finally:
        shutil.rmtree(form.root.parent, ignore_errors=True)
