"""The scan layer: passes over many records at once, between the byte layouts
(``rmqlab.format``) and the store pieces (``rmqlab.store``).

- :mod:`.acceptance` — Java's acceptance rule (``CommitLog.checkMessageAndReturnSize``
  as recovery applies it) over whole files in bulk: where a log's valid record chain
  ends and why.  Recovery plans with it; the reader asks it where RocketMQ's log ends.
- :mod:`.compute` — the Arrow kernels the passes call, reached without importing
  ``pyarrow.compute`` (a read command's start on a small store).
"""
