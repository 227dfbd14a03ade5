"""A RocksDB instance a broker left, opened read-only without writing beside it.

RocketMQ keeps some state in RocksDB (Java ``AbstractRocksDBStorage``): the consume
queues of ``storeType=defaultRocksDB`` (``consumequeue/``) and, with it, the broker's
offsets, topics and groups (``config/consumerOffsets/`` …, ``RocksDBConfigManager``).

Reading evidence must not change it, and a RocksDB open is not a plain read: the
binding records its options in the directory, and RocksDB may write an info log.  So
the instance is opened read-only from a *view*: a temporary directory holding links
to RocksDB's immutable table files (``*.sst``, ``*.blob``) and copies of the small
files RocksDB rewrites (``CURRENT``, ``MANIFEST-*``, ``OPTIONS-*``, the WAL).  Whatever
is written at open lands in the view, which :meth:`ReadOnlyRocksDB.close` removes.
The binding is the optional ``rmqlab[rocksdb]`` (rocksdict); without it, opening is
an error that says how to install it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..errors import StoreLayoutError, install_hint

#: files RocksDB never rewrites once written: linked into the view, not copied
_IMMUTABLE = (".sst", ".blob")
_MISSING = f"reading RocksDB needs the RocksDB binding: {install_hint('rocksdb')}"


class RocksDBUnavailable(StoreLayoutError):
    """The RocksDB binding (rmqlab[rocksdb]) is not installed: what RocksDB holds cannot be
    read here, which says nothing about the store."""


def is_rocksdb_names(file_names) -> bool:
    """Files of a directory RocksDB owns: its CURRENT and a MANIFEST (RocksDB's ``DB::Open``)."""
    names = set(file_names)
    return "CURRENT" in names and any(n.startswith("MANIFEST-") for n in names)


def is_rocksdb_dir(directory: str | os.PathLike) -> bool:
    d = Path(directory)
    return d.is_dir() and is_rocksdb_names(p.name for p in d.iterdir() if p.is_file())


class ReadOnlyRocksDB:
    """``directory``'s RocksDB, opened read-only from a view (see the module), every
    column family raw (keys and values as bytes).  ``what`` names it in errors."""

    def __init__(self, directory: str | os.PathLike, what: str = "RocksDB"):
        self.directory = Path(directory)
        self.view: str | None = None
        self.db = None
        try:
            from rocksdict import AccessType, Options, Rdict
        except ImportError:
            raise RocksDBUnavailable(self.directory, None, f"{what}: {_MISSING}") from None
        self.view = tempfile.mkdtemp(prefix="rmqlab-rocksdb-")
        try:
            for p in self.directory.iterdir():
                if not p.is_file() or p.name == "LOCK":
                    continue
                if p.name.endswith(_IMMUTABLE):
                    os.symlink(p.resolve(), os.path.join(self.view, p.name))
                else:
                    shutil.copyfile(p, os.path.join(self.view, p.name))
            opts = Options(raw_mode=True)
            opts.set_db_log_dir(self.view)
            self.families = Rdict.list_cf(self.view, opts)
            self.db = Rdict(self.view, options=opts, column_families={f: Options(raw_mode=True) for f in self.families if f != "default"},
                            access_type=AccessType.read_only())
        except Exception as err:  # OSError, or the binding's plain Exception with RocksDB's status text
            self.close()
            raise StoreLayoutError(self.directory, None, f"RocksDB cannot open this {what} read-only: {str(err).replace(self.view or '', str(self.directory))}") from None

    def family(self, name: str):
        """A column family (None when the instance has none of that name)."""
        return self.db.get_column_family(name) if name in self.families else None

    def items(self, family=None, start: bytes | None = None, end: bytes | None = None):
        """``(key, value)`` in key order, of ``family`` (default: the default family),
        from ``start`` up to (not including) ``end``."""
        from rocksdict import ReadOptions

        ro = ReadOptions()
        if end is not None:
            ro.set_iterate_upper_bound(end)
        src = self.db if family is None else family
        # a generator, so that the read options (which own the upper bound) outlive the
        # binding's iterator: it does not keep them alive itself
        yield from (src.items(from_key=start, read_opt=ro) if start is not None else src.items(read_opt=ro))

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        if self.view is not None:
            shutil.rmtree(self.view, ignore_errors=True)
            self.view = None

    def __enter__(self) -> "ReadOnlyRocksDB":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # a forgotten close must not leave a copy of the store's metadata behind
        try:
            self.close()
        except Exception:
            pass


def open_writable(directory: str | os.PathLike, what: str = "RocksDB"):
    """``directory``'s RocksDB opened for writing, every column family it has open and
    raw (RocksDB refuses an open that leaves one out), written so that the RocksDB
    inside RocketMQ's broker reads it: table files of ``format_version`` 5 and no
    compression.  The binding's default tables (format_version 6) are unreadable to
    the RocksDB RocketMQ 5.3 to 5.5 ship (rocksdbjni 8.4 and its ``rocketmq-rocksdb``
    builds): such a store no longer loads.  Only ever used on a copy the user asked for
    (``rmqlab recover --out``) or a store recovered in place; :func:`close_writable`
    closes it and removes the binding's own file."""
    try:
        from rocksdict import BlockBasedOptions, DBCompressionType, Options, Rdict
    except ImportError:
        raise RocksDBUnavailable(Path(directory), None, f"{what}: {_MISSING}") from None

    def options():
        o = Options(raw_mode=True)
        table = BlockBasedOptions()
        table.set_format_version(5)
        o.set_block_based_table_factory(table)
        o.set_compression_type(DBCompressionType.none())
        o.create_if_missing(False)
        return o

    try:
        families = Rdict.list_cf(str(directory), Options(raw_mode=True))
        return Rdict(str(directory), options=options(), column_families={f: options() for f in families if f != "default"})
    except Exception as err:  # the binding's plain Exception with RocksDB's status text
        raise StoreLayoutError(Path(directory), None, f"RocksDB cannot open this {what} for writing: {err}") from None


def close_writable(db, directory: str | os.PathLike) -> None:
    """Flush (table files RocketMQ reads without replaying a log) and close a RocksDB of
    :func:`open_writable`, and remove the options file the binding leaves beside it."""
    try:
        db.flush()
    finally:
        db.close()
        (Path(directory) / "rocksdict-config.json").unlink(missing_ok=True)
