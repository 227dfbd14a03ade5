"""A Spark job's task that stopped on an rmqlab error, told as the local command tells it."""

from __future__ import annotations

import contextlib
import re

#: the last line of a Python worker's traceback when an rmqlab error stopped the task
_WORKER_ERROR = re.compile(r"^(rmqlab(?:\.\w+)*\.(\w+)): (.+)$", re.M)


@contextlib.contextmanager
def worker_errors():
    """A job whose task stopped on an rmqlab error (damaged bytes in strict mode, a file
    gone) fails here with that error's one line, as the local command does, instead of
    Spark's ``PythonException`` and the worker's traceback; anything else is Spark's."""
    from ..errors import RmqlabError

    try:
        yield
    except Exception as err:
        if type(err).__name__ not in ("PythonException", "Py4JJavaError", "SparkException"):
            raise
        found = _WORKER_ERROR.findall(str(err))
        if not found:
            raise
        raise RmqlabError(found[-1][2].strip()) from None
