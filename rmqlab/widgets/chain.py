"""``ChainExplorer``: type a key, follow its hash chain through every index file.

Shows ``topic#key``, its Java ``hashCode``, the slot, every entry visited (newest
file first, Java ``IndexService.queryOffset`` order), which entries only share the
slot, which share the hash but belong to another key (a collision such as
``Aa``/``BB``), and the records returned once the real key was compared.
"""

from __future__ import annotations

import ipywidgets as widgets

from ..format.hashing import index_key_hash
from ..format.indexfile import index_key
from ..format.properties import split_keys
from ..lookup import KeyQueryResult, query_by_key
from ..render.notebook import chain_html, records_html
from .base import Panel, as_store, topics_of


def collision_keys(store, result: KeyQueryResult) -> dict[int, str]:
    """For each colliding offset, the keys its record really carries (for display)."""
    out = {}
    for off in result.collisions:
        try:
            rec = store.commitlog.read(off, check_crc=False)
        except Exception:  # noqa: BLE001 - a collision pointing at garbage is shown as such
            out[off] = "(unreadable)"
            continue
        keys = split_keys(rec.keys)
        if rec.uniq_key:
            keys.append(rec.uniq_key)
        out[off] = ", ".join(f"{rec.topic}#{k}" for k in keys) or "(no keys)"
    return out


class ChainExplorer(Panel):
    """A key lookup you can watch.  ``.key.value = "Aa"; .lookup.click()``.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> explorer = ChainExplorer(shipped_dir() / "clean", topic="Orders", key="Aa")
    >>> found = explorer.run()               # what the button does
    >>> [r.physical_offset for r in found.records], found.collisions
    ([11371, 188986], [11781, 94947])
    """

    def __init__(self, store, topic: str | None = None, key: str = ""):
        self.store = as_store(store)
        topics = topics_of(self.store)
        self.topic = widgets.Dropdown(options=topics, value=topic if topic in topics else (topics[0] if topics else None), description="topic")
        self.key = widgets.Text(value=key, description="key", placeholder="a KEYS token or UNIQ_KEY", continuous_update=False)
        self.lookup = widgets.Button(description="look up", button_style="primary")
        super().__init__([widgets.HBox([self.topic, self.key, self.lookup])], primary=self.topic)
        self.result: KeyQueryResult | None = None
        self.lookup.on_click(lambda _: self.run())
        self.key.observe(lambda _: self.run(), "value")
        self.topic.observe(lambda _: self.run(), "value")  # the same key in another topic is another chain
        if key:
            self.run()

    def run(self) -> KeyQueryResult | None:
        if not self.key.value or self.topic.value is None:
            self.result = None
            self.show("<div>type a key, then <b>look up</b></div>")
            return None
        result = self.guarded(query_by_key, self.store, self.topic.value, self.key.value)
        if result is None:
            return None
        self.result = result
        kh = index_key_hash(index_key(result.topic, result.key))
        html = chain_html(result, slot_count=self.store.config.max_hash_slot_num, key_hash=kh, record_keys=collision_keys(self.store, result))
        if result.records:
            html += records_html(result.records, caption="records returned")
        self.show(html)
        return result
