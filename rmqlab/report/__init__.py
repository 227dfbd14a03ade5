"""``rmqlab report STORE`` — one self-contained file a support engineer attaches to a
postmortem: the verdict, the store's timeline, its map with the findings on it, the
findings by kind with what the broker does with each, what recovery would do per
candidate release, the consumers' positions against it, and the evidence (every file's
size and SHA-256, the command, rmqlab's version, the time).

The layer above recovery and the renderings: it reads nothing the layers below do not
already read, in at most one pass per part — verify's pass (whose batches the map's
counts and the timeline are fed too), recovery's dry run, one read of every file for
the digests.
Every part that fails says why ("could not be read because …") and the others stand.
Read-only: nothing of the store is written.

    >>> import tempfile
    >>> from rmqlab.lab.samples import shipped_dir
    >>> from rmqlab.report import build_report
    >>> r = build_report(shipped_dir() / "crashed")
    >>> verdict = r.sections["verdict"]
    >>> verdict["consequence"], verdict["records_cut"], verdict["level"]
    ('records lost', 12, 'bad')
    >>> r.write(f"{tempfile.mkdtemp()}/report.html")    # or r.to_dict(), r.write("report.json")
    PosixPath('.../report.html')

:func:`rmqlab.spark.report` builds the same report with the Spark jobs for the parts
that read the whole store.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreLayoutError
from ..version import version
from .parts import SECTIONS, Unavailable, consumers_part, evidence_part, findings_part, guarded, recovery_part, timeline_part, verdict_part

__all__ = ["StoreReport", "build_report", "format_of", "SECTIONS"]


@dataclass
class StoreReport:
    """A store's report: each section's data (plain JSON-ready dicts; a section that
    could not be read holds ``{"unavailable": "could not be read because …"}``) and how
    it was made.  :meth:`write` writes the HTML page or, for a ``.json`` path, the data.

    >>> import json, tempfile
    >>> from rmqlab.lab.samples import shipped_dir
    >>> r = build_report(shipped_dir() / "damaged")
    >>> list(r.sections)
    ['map', 'timeline', 'findings', 'recovery', 'consumers', 'evidence', 'summary', 'verdict']
    >>> cause = r.sections["verdict"]["cause"]
    >>> cause["kind"], cause["file"], cause["file_offset"], cause["lost_on_disk"], cause["lost_unwritten"]
    ('BODY_CRC', 'commitlog/00000000000000262144', 1506, 39, 13)
    >>> saved = r.write(f"{tempfile.mkdtemp()}/report.json")
    >>> json.loads(saved.read_text())["verdict"]["records_cut"]
    52
    """

    root: str
    made: str  # UTC, ISO 8601
    command: str
    version: str
    sections: dict = field(default_factory=dict)
    #: the map's picture (SVG), drawn from the ``map`` section's data
    map_svg: str | None = None

    def to_dict(self) -> dict:
        return {"root": self.root, "made": self.made, "command": self.command, "rmqlab_version": self.version,
                **{key: self.sections.get(key) for key, _ in SECTIONS}, "store": self.sections.get("summary")}

    def to_html(self) -> str:
        from .html import report_html

        return report_html(self)

    def text(self, format: str = "html") -> str:
        """The report as ``format``: "html" (the page) or "json" (:meth:`to_dict`)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n" if format == "json" else self.to_html()

    def write(self, path: str | os.PathLike, format: str | None = None) -> Path:
        """Write the report to ``path``: HTML, or JSON when ``format="json"`` or the
        name ends in ``.json``.  Returns the path."""
        path = Path(path)
        path.write_text(self.text(format or format_of(path)), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:  # notebooks: the report inline
        from .html import report_html

        return report_html(self, inline=True)


def format_of(path: Path | None) -> str:
    """The format a report written to ``path`` takes from its name: "json" for
    ``*.json``, else "html" (stdout too)."""
    return "json" if path is not None and path.suffix.lower() == ".json" else "html"


class _Beside:
    """``add(*args)`` called for each call of this object, on ``pool``'s one thread, in
    the order called, at most :attr:`AHEAD` calls waiting (what they hold stays
    bounded); :meth:`done` waits for the last and raises the first one's error."""

    AHEAD = 4

    def __init__(self, pool: ThreadPoolExecutor, add):
        import threading

        self.pool, self.add, self.slots, self.error = pool, add, threading.BoundedSemaphore(self.AHEAD), None

    def _run(self, args):
        try:
            if self.error is None:
                self.add(*args)
        except Exception as err:  # noqa: BLE001 - told by done()
            self.error = err
        finally:
            self.slots.release()

    def __call__(self, *args) -> None:
        self.slots.acquire()
        self.pool.submit(self._run, args)

    def done(self) -> None:
        self.pool.submit(lambda: None).result()
        if self.error is not None:
            raise self.error


def _stage(progress, name: str, total: int):
    return progress(name, total) if progress is not None else nullcontext(None)


def build_report(
    root: str | os.PathLike,
    *,
    config=None,
    rocketmq_version: str | None = None,
    progress=None,
    command: str | None = None,
    verify_report=None,
    timeline=None,
    digests: dict | None = None,
    draw_map: bool = True,
    map_width: int = 1100,
) -> StoreReport:
    """The report of the store at ``root`` (read-only).

    ``config``: a :class:`~rmqlab.config.MessageStoreConfig` (default: sizes inferred from
    the files); ``rocketmq_version``: whose recovery rules to follow when the bytes do not
    say; ``progress(stage, total_bytes)``: a context manager giving each pass's progress
    sink (:class:`rmqlab.progress.Progress`) or None; ``command``: the command line to
    record (default: this process's).  The Spark build passes what its jobs computed:
    ``verify_report`` (a :class:`~rmqlab.forensics.verify.VerifyReport`), ``timeline``
    (a :class:`~rmqlab.forensics.timeline.Timeline`), ``digests`` (path → SHA-256), and
    ``draw_map=False`` where the map would be one more pass on one machine.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> r = build_report(shipped_dir() / "clean")
    >>> r.sections["verdict"]["consequence"], r.sections["verdict"]["level"]
    ('clean', 'good')
    """
    from ..forensics.timeline import Timeline
    from ..forensics.verify import verify_store
    from ..recovery import recover
    from ..forensics.consequences import complete_findings
    from ..forensics.storemap import LogPixels, mark_findings
    from ..render.storemap import map_of_store, storemap_svg
    from ..store.layout import commitlog_bytes
    from ..store.reader import StoreReader
    from ..store.summary import summarize

    path = Path(root)
    if not path.is_dir():
        raise StoreLayoutError(root, None, "not a directory: a report reads a store's root (it holds commitlog/, consumequeue/, ...)")
    rep = StoreReport(str(path), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), command or " ".join([Path(sys.argv[0]).name] + sys.argv[1:]), version())
    size = commitlog_bytes(path, config)

    def summary_of():
        with StoreReader(path, config, strict=False) as store:
            return summarize(store, scan=False).to_dict()

    summary = guarded(summary_of)
    # every file's digest is read on a thread of its own while the passes below run
    # (hashlib and the reads release the GIL): the report then takes about the time of
    # its passes, not that plus one more read of the whole store
    pool = ThreadPoolExecutor(1, thread_name_prefix="rmqlab-digests")
    beside = ThreadPoolExecutor(1, thread_name_prefix="rmqlab-map")
    evidence = pool.submit(guarded, evidence_part, path, digests=digests)
    try:
        # the next start's dry run first: verify judges the findings against it (one plan)
        dry = guarded(recover, path, config=config, rocketmq_version=rocketmq_version)
        planned = None if isinstance(dry, Unavailable) else dry

        def verified(told=None):
            if verify_report is not None:
                return verify_report
            with _stage(progress, "verify", size) as bar:
                v = verify_store(path, config, progress=bar, rocketmq_version=rocketmq_version, recovery=planned, on_batch=told)
            complete_findings(v.findings, path, config, rocketmq_version=rocketmq_version, recovery=planned)
            return v

        flushed = (summary.get("checkpoint") or {}).get("physic_msg_timestamp") if "unavailable" not in summary else None
        # the map's pass feeds a timeline of its own unless one was counted elsewhere
        fed = Timeline(flushed or None) if draw_map and timeline is None else None
        # ... and is verify's own: each batch verify's walk reads is handed to the map's
        # counts on a thread of their own (verify's thread goes on; the counts are mostly
        # compiled loops that release the GIL), one decode of the log for both; a log
        # verify reads entry by entry (DLedger) gets the map's own pass, beside verify's
        drawing = pixels = None
        if draw_map and verify_report is None:
            pixels = guarded(LogPixels.of_log, path, config, map_width, fed)
            pixels = None if isinstance(pixels, Unavailable) else pixels
        told = _Beside(beside, pixels.add) if pixels is not None else None

        def map_pass(pixels=None):
            return map_of_store(path, config=config, width=map_width, verify=False, findings=[],
                                recovery=None if isinstance(dry, Unavailable) else dry, timeline=fed, pixels=pixels)

        if draw_map and told is None:
            drawing = beside.submit(guarded, map_pass)
        v = guarded(verified, told)
        if told is not None:
            # verify stopped part way: its counts are partial, and so is the timeline they fed
            counted = guarded(told.done)
            if isinstance(v, Unavailable) or isinstance(counted, Unavailable):
                fed = Timeline(flushed or None)
                drawing = beside.submit(guarded, map_pass)
            else:
                drawing = beside.submit(guarded, map_pass, pixels)
        # where the bytes leave releases whose start-ups differ, each one's own dry run says
        # what it rebuilds (one more plan each: they read from their start file on)
        others = {} if isinstance(dry, Unavailable) else {
            first: guarded(recover, path, config=config, rocketmq_version=first) for first in (o.release.split(" and ")[0] for o in dry.release_outcomes)}
        recovery = dry if isinstance(dry, Unavailable) else guarded(recovery_part, path, dry, {r: o for r, o in others.items() if not isinstance(o, Unavailable)})

        if drawing is not None:
            def drawn():
                m = drawing.result()
                if isinstance(m, Unavailable):
                    return m
                mark_findings(m, [] if isinstance(v, Unavailable) else v.findings)
                rep.map_svg = storemap_svg(m)
                return m.to_dict()

            rep.sections["map"] = guarded(drawn)
        else:
            rep.sections["map"] = Unavailable("it is not drawn in this build (one more pass over the log on one machine: `rmqlab map` draws it)")
        # a map pass that failed part way leaves its timeline partial: a pass of its own then
        tl = timeline or (fed if fed is not None and not isinstance(rep.sections["map"], Unavailable) else None)
        if tl is None:
            def timeline_pass():
                from ..forensics.timeline import store_timeline

                with _stage(progress, "timeline", size) as bar:
                    return store_timeline(path, config=config, flushed_ms=flushed or None, progress=bar)

            tl = guarded(timeline_pass)
        rep.sections["timeline"] = tl if isinstance(tl, Unavailable) else guarded(timeline_part, tl, {} if isinstance(summary, Unavailable) else summary)
        rep.sections["findings"] = v if isinstance(v, Unavailable) else guarded(findings_part, path, v)
        rep.sections["recovery"] = recovery
        rep.sections["consumers"] = guarded(consumers_part, path, config, None if isinstance(dry, Unavailable) else dry)
        rep.sections["evidence"] = evidence.result()
    finally:
        beside.shutdown()
        pool.shutdown()
    rep.sections["summary"] = summary
    rep.sections["verdict"] = guarded(verdict_part, summary, rep.sections["findings"], recovery, rep.sections["consumers"])
    return rep
