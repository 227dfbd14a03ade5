"""The project's own errors.

Every problem found in store bytes is reported as a :class:`StoreFormatError` that
names the file and the byte offset, so a user can open the file at that offset
(``rmqlab hexdump FILE --offset N``) and see it.  Library errors from ``construct``
or the OS are translated here, never shown as tracebacks by the CLI.
"""

from __future__ import annotations

import os


class RmqlabError(Exception):
    """Base class of every error rmqlab raises on purpose."""


class StoreFormatError(RmqlabError):
    """Bytes that do not follow the RocketMQ store format.

    ``file`` is the path of the file (or a description such as ``"<bytes>"``),
    ``offset`` the byte offset inside that file where the problem starts (``None``
    when the problem is not at a byte, e.g. a missing directory).
    """

    def __init__(self, file: str | os.PathLike | None, offset: int | None, message: str):
        self.file = os.fspath(file) if file is not None else "<bytes>"
        self.offset = offset
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:  # one line, file and offset first
        if self.offset is None:
            return f"{self.file}: {self.message}"
        return f"{self.file} @ offset {self.offset} (0x{self.offset:x}): {self.message}"


class StoreLayoutError(StoreFormatError):
    """A store directory that is missing, or whose files have the wrong names or sizes."""


class StoreLockedError(RmqlabError):
    """The store is held by a running broker or another rmqlab writer."""


def install_hint(extra: str) -> str:
    """What to run for a missing extra, and where the install page is."""
    from .version import docs_url

    return f"pip install 'rmqlab[{extra}]' (see {docs_url('getting-started/install.html')})"


def require_extra(modules: tuple[str, ...], extra: str, what: str) -> None:
    """Raise :class:`ModuleNotFoundError` naming the extra to install when one of
    ``modules`` is not installed (``what`` needs them): where an optional dependency is
    missing, the user is told ``pip install 'rmqlab[extra]'``, not shown a traceback."""
    import importlib.util

    for name in modules:
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"{what} needs {name}, which is not installed: {install_hint(extra)}", name=name)
