"""How far a long pass over a store has come: what the library reports, whoever shows it.

A pass (verify, info, dump, salvage, generate...) takes an optional ``progress``
object and calls ``progress.update(done_bytes, records)`` now and then, with the
commitlog bytes it has passed so far and the records it has read so far (both
running totals).  The command line shows them with a progress bar on stderr
(:mod:`rmqlab.cli.common`); library callers pass nothing, or their own object.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def update(self, done_bytes: int, records: int) -> None:
        """``done_bytes`` of the pass's total have been passed, ``records`` read."""


class Silent:
    """Progress nobody watches."""

    def update(self, done_bytes: int, records: int) -> None:
        pass
