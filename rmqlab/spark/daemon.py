"""PySpark's worker daemon (``pyspark.daemon``) importing PySpark from the installed
package instead of Spark's ``pyspark.zip``, and freezing what survives its collection
after each task: ``spark.python.daemon.module`` in
:data:`rmqlab.spark.session.WORKER_SETTINGS`, which
:func:`rmqlab.spark.session.local_spark` gives.

Spark puts ``pyspark.zip`` and py4j's zip first on the path of every Python process it
starts.  Python keeps no compiled bytecode for modules imported from a zip, so each
daemon — the workers' and the three that plan a Python data source (look it up, create
it, plan its read) — and each worker forked from one compiles PySpark's modules from
source again: ~0.5 s a process (importing what the daemons need took 0.78 s from the zip
against 0.25 s from the package, measured here), paid one daemon after another at a
session's first query of a Python data source.  The pip package of PySpark ships both,
the same release; when the installed package is the zip's release, the zips are taken
off the path before ``pyspark.daemon`` runs, and otherwise the path stays as Spark set it.
Only the workers' daemon is this module: Spark starts the three planning daemons with
``pyspark.daemon`` whatever ``spark.python.daemon.module`` says.

And after each task PySpark's daemon runs a full garbage collection in the worker
(``gc.collect()`` in ``pyspark.daemon.manager``), which walks every object the worker
holds: ~40 ms with PySpark, pyarrow, numpy and rmqlab's modules loaded (measured here: a
full collection of their 113,070 objects took 41 ms), paid by every task before the
worker takes the next — most of what a Python task costs Spark on this machine.  Here
each of those collections is followed by ``gc.freeze()``: what survived it (modules,
caches, compiled loops) is not walked again, so the next walks only what later tasks
made.  Frozen objects are still freed by reference counting; only a reference cycle
among them that becomes garbage afterwards is not collected (measured: one worker's
resident memory over 1,920 tasks of the commitlog source, 204,072 → 204,100 kB).

Run as ``python -m rmqlab.spark.daemon [WORKER_MODULE]``, as Spark runs its own.
"""

from __future__ import annotations

import gc
import os
import sys
import zipfile
from importlib.machinery import PathFinder


def _release_in_zip(path: str) -> bytes | None:
    try:
        with zipfile.ZipFile(path) as z:
            return z.read("pyspark/version.py")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def _installed_release(path: list[str]) -> bytes | None:
    spec = PathFinder.find_spec("pyspark", path)
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        with open(os.path.join(list(spec.submodule_search_locations)[0], "version.py"), "rb") as f:
            return f.read()
    except OSError:
        return None


def path_without_spark_zips(path: list[str]) -> list[str]:
    """``path`` without Spark's ``pyspark*.zip`` and ``py4j*.zip`` when the PySpark
    importable without them is the zip's own release (and py4j is importable too);
    ``path`` unchanged otherwise."""
    zips = [p for p in path if p.endswith(".zip") and os.path.basename(p).startswith(("pyspark", "py4j"))]
    rest = [p for p in path if p not in zips]
    pyspark_zip = next((p for p in zips if os.path.basename(p).startswith("pyspark")), None)
    if pyspark_zip is None:
        return path
    release = _release_in_zip(pyspark_zip)
    if release is None or release != _installed_release(rest) or PathFinder.find_spec("py4j", rest) is None:
        return path
    return rest


class CollectThenFreeze:
    """``gc`` as ``pyspark.daemon`` sees it: :meth:`collect` collects, then freezes the
    survivors (Python's ``gc.freeze``); anything else is the ``gc`` module's."""

    def collect(self, *args):
        found = gc.collect(*args)
        gc.freeze()
        return found

    def __getattr__(self, name):
        return getattr(gc, name)


def worker_collection() -> str | None:
    """In a Python worker: the name of the collection its daemon runs after each task
    (``CollectThenFreeze`` under this module, ``module`` under PySpark's own), None in a
    process no daemon forked.  What a job can ask its executors to see its settings took."""
    daemon = sys.modules.get("pyspark.daemon")
    return None if daemon is None else type(daemon.gc).__name__


def main() -> None:
    sys.path[:] = path_without_spark_zips(sys.path)
    import pyspark.daemon

    pyspark.daemon.gc = CollectThenFreeze()
    # what ``python -m pyspark.daemon`` runs; it reads its worker module from
    # sys.argv[1], as Spark passes it to this module
    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
