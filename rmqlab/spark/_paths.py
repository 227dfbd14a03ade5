"""Paths and options shared by the data sources.

Everything goes through :mod:`pyarrow.fs`, so a path may be local (``/data/store``)
or a URI of any filesystem pyarrow knows (``hdfs://nn:8020/stores/b1``,
``s3://bucket/stores/b1``, ``file:///data/store``).  Local files are memory-mapped
(zero copy); other filesystems are read by range.

Options arrive as strings (Spark passes them so); the parsers here turn them into
values and say clearly what they expected.

Object storage settings (:data:`S3_SETTINGS`) are resolved once, where Spark plans the
read (on the driver: its options, else its standard AWS environment variables), and
travel inside each split to the executors, whose environment may hold none of them.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import parse_qs, urlsplit

from ..errors import RmqlabError, StoreLayoutError

_DIGITS20 = re.compile(r"^\d{20}$")


class OptionError(RmqlabError, ValueError):
    """An option value that cannot be used; names the option."""


class StorageError(RmqlabError, OSError):
    """A file of the store could not be read from its filesystem; names it."""


#: S3 settings a source takes as options, and the AWS variables each falls back to
#: (read where the read is planned, on the driver)
S3_SETTINGS = {
    "fs.s3.endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "fs.s3.region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "fs.s3.scheme": (),
    "fs.s3.accessKey": ("AWS_ACCESS_KEY_ID",),
    "fs.s3.secretKey": ("AWS_SECRET_ACCESS_KEY",),
    "fs.s3.sessionToken": ("AWS_SESSION_TOKEN",),
}
#: an S3 request gives up after this many tries of at most these seconds (a wrong
#: endpoint fails in seconds, not minutes)
S3_ATTEMPTS, S3_CONNECT_TIMEOUT, S3_REQUEST_TIMEOUT = 3, 5, 60


def fs_settings(options, path: str) -> tuple:
    """The filesystem settings for ``path``, resolved now: the ``fs.s3.*`` options, else
    the AWS variables of this process (``()`` for a path that is not ``s3://``).  A
    tuple of pairs, small and picklable, carried by every split."""
    if not str(path).startswith("s3://"):
        return ()
    out = {}
    for name, env in S3_SETTINGS.items():
        v = _get(options, name)
        if v is None:
            v = next((os.environ[e] for e in env if os.environ.get(e)), None)
        if v is not None:
            out[name] = str(v)
    if ("fs.s3.accessKey" in out) != ("fs.s3.secretKey" in out):
        raise OptionError("fs.s3.accessKey and fs.s3.secretKey go together (as options or as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
    return tuple(sorted(out.items()))


def _s3(uri: str, settings: dict):
    from pyarrow import fs as pafs

    u = urlsplit(uri)
    query = {k: v[-1] for k, v in parse_qs(u.query).items()}
    endpoint = settings.get("fs.s3.endpoint") or query.get("endpoint_override")
    scheme = settings.get("fs.s3.scheme") or query.get("scheme")
    if endpoint and "://" in endpoint:  # AWS_ENDPOINT_URL style
        given, endpoint = endpoint.split("://", 1)
        scheme = scheme or given
    kw = dict(
        region=settings.get("fs.s3.region") or query.get("region"),
        endpoint_override=endpoint,
        scheme=scheme,
        access_key=settings.get("fs.s3.accessKey"),
        secret_key=settings.get("fs.s3.secretKey"),
        session_token=settings.get("fs.s3.sessionToken"),
        connect_timeout=S3_CONNECT_TIMEOUT,
        request_timeout=S3_REQUEST_TIMEOUT,
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=S3_ATTEMPTS),
    )
    fs = pafs.S3FileSystem(**{k: v for k, v in kw.items() if v is not None})
    return fs, (u.netloc + u.path).rstrip("/")


@contextlib.contextmanager
def storage(what: str):
    """Turn a filesystem's error into one :class:`StorageError` naming ``what``."""
    try:
        yield
    except RmqlabError:
        raise
    except OSError as exc:
        raise StorageError(f"{what}: cannot read it: {exc}") from None


def requested_columns(fmt: str, ours, asked) -> list[str] | None:
    """The columns Spark asks a reader of format ``fmt`` for: ``asked`` is the schema
    Spark passes to ``DataSource.reader`` — the source's own (``ours``, perhaps cut
    down by an option), or one the user gave with ``spark.read.schema(...)``.  Returns
    their names in the order asked, or None for all of ``ours``.

    A user's schema may name any of the source's columns in any order (a second way,
    besides an option, to decode only what a query needs), each with the source's type
    and nullable; anything else is refused here, naming the column, rather than as a
    schema mismatch inside a Spark task."""
    by_name = {f.name: f for f in ours.fields}
    for f in asked.fields:
        mine = by_name.get(f.name)
        if mine is None:
            raise OptionError(f"{fmt}: the schema given names column {f.name!r}, which this source does not have; its columns are {', '.join(by_name)}")
        if f.dataType != mine.dataType:
            raise OptionError(f"{fmt}: column {f.name} is {mine.dataType.simpleString()}, the schema given says {f.dataType.simpleString()}")
        if not f.nullable:
            raise OptionError(f"{fmt}: column {f.name} is declared NOT NULL; declare it nullable, as the source does")
    names = asked.fieldNames()
    return None if names == ours.fieldNames() else names


def filesystem(path: str, settings: tuple = ()):
    """``(pyarrow FileSystem, path inside it)`` for a local path or a URI; ``settings``
    from :func:`fs_settings`."""
    from pyarrow import fs as pafs

    if "://" in path:
        if path.startswith("s3://") and settings:
            return _s3(path, dict(settings))
        with storage(path):
            return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(path)


def is_local(fs) -> bool:
    from pyarrow import fs as pafs

    return isinstance(fs, pafs.LocalFileSystem)


def display_path(uri: str, inner: str) -> str:
    """What the ``file`` column shows: a local path as a path, else a URI."""
    if "://" not in uri or uri.startswith("file://"):
        return inner
    return child_uri(uri, inner)


def _authority(uri: str) -> str:
    rest = uri.split("://", 1)[1]
    return rest.split("/", 1)[0]


def child_uri(uri: str, inner: str) -> str:
    """A URI (or local path) that :func:`filesystem` maps to ``inner`` on the same fs."""
    if "://" not in uri:
        return inner
    scheme = uri.split("://", 1)[0]
    if scheme == "file":
        return "file://" + inner
    if scheme in ("s3", "gs", "gcs"):
        query = "?" + uri.split("?", 1)[1] if "?" in uri else ""
        return f"{scheme}://{inner.lstrip('/')}{query}"
    query = "?" + uri.split("?", 1)[1] if "?" in uri else ""
    return f"{scheme}://{_authority(uri)}/{inner.lstrip('/')}{query}"


def is_dir(fs, p: str) -> bool:
    from pyarrow import fs as pafs

    return fs.get_file_info(p).type == pafs.FileType.Directory


def list_files(fs, p: str) -> list:
    """Files directly under directory ``p`` (FileInfo), sorted by name."""
    from pyarrow import fs as pafs

    out = [i for i in fs.get_file_info(pafs.FileSelector(p, recursive=False)) if i.type == pafs.FileType.File]
    return sorted(out, key=lambda i: i.base_name)


def list_dirs(fs, p: str) -> list:
    from pyarrow import fs as pafs

    out = [i for i in fs.get_file_info(pafs.FileSelector(p, recursive=False)) if i.type == pafs.FileType.Directory]
    return sorted(out, key=lambda i: i.base_name)


def offset_named_files(fs, directory: str) -> list[tuple[int, str, int]]:
    """``(start offset, path, size)`` of the 20-digit files of a MappedFileQueue
    directory, in offset order; a zero-length last file is left out (Java
    ``MappedFileQueue.load``)."""
    files = [(int(i.base_name), i.path, i.size) for i in list_files(fs, directory) if _DIGITS20.match(i.base_name)]
    files.sort()
    if files and files[-1][2] == 0:
        files.pop()
    return files


def store_subdir(fs, p: str, name: str, shown: str | None = None) -> str:
    """``p/name`` when ``p`` is a store root, else ``p`` itself (already the subdir);
    errors name ``shown`` (the path or URI as the user gave it)."""
    from pyarrow import fs as pafs

    sub = p.rstrip("/") + "/" + name
    if is_dir(fs, sub):
        return sub
    kind = fs.get_file_info(p).type
    if kind == pafs.FileType.Directory:
        return p
    if kind == pafs.FileType.NotFound:
        raise StoreLayoutError(shown or p, None, "no such file or directory")
    raise StoreLayoutError(shown or p, None, f"neither a store root with {name}/ nor a {name} directory")


# -- options --------------------------------------------------------------------------------
def lower_keys(options) -> dict:
    """Spark option names are case-insensitive (it may hand them over lower-cased)."""
    return {str(k).lower(): v for k, v in dict(options).items()}


def _get(options, name: str):
    return options.get(name.lower(), options.get(name))


@dataclass(frozen=True)
class Option:
    """One option of a data source, declared once: its name, the kind of value it takes,
    its default and what it does. Readers read it with :meth:`read`; the documentation's
    option tables are made from these declarations (a source's ``OPTIONS``)."""

    name: str
    kind: str  # bool, size, int, time, list, choice or text
    default: object
    doc: str
    choices: tuple[str, ...] = ()

    def read(self, options):
        """The option's value in ``options`` (any case), else its default; a value that
        cannot be used raises :class:`OptionError` naming the option."""
        if self.kind == "bool":
            return opt_bool(options, self.name, self.default)
        if self.kind == "size":
            return opt_size(options, self.name, self.default)
        if self.kind == "int":
            return opt_int(options, self.name, self.default)
        if self.kind == "time":
            return opt_time(options, self.name)
        if self.kind == "list":
            return opt_list(options, self.name)
        if self.kind == "choice":
            return opt_choice(options, self.name, self.choices, self.default)
        if self.kind == "text":
            v = _get(options, self.name)
            return self.default if v is None else str(v)
        raise ValueError(f"{self.name}: unknown option kind {self.kind!r}")

    def default_text(self) -> str:
        if self.kind == "choice":
            return " | ".join(f"**{c}**" if c == self.default else c for c in self.choices)
        if self.default is None:
            return "none"
        if self.kind == "bool":
            return str(self.default).lower()
        if self.kind == "size" and isinstance(self.default, int) and self.default >= 1 << 20 and self.default % (1 << 20) == 0:
            return f"{self.default >> 20}MiB"
        return str(self.default)


#: every source's choice of reader (:class:`rmqlab.spark._source.StoreDataSource`)
PUSHDOWN = Option("pushdown", "bool", False, (
    "``true``: a query's filters (``=``, ``IN``, ranges; ANDed) are pushed into the scan, and the store's own indexes "
    "say which bytes can hold a match (:mod:`rmqlab.spark.pushdown`): a ``msg_id`` reads the one record at the offset "
    "it holds; ``uniq_key``/``keys`` with ``topic`` read the records the index files name and scan only what they do "
    "not cover; a ``store_timestamp`` window leaves out the files whose records all lie outside it; an offset range, "
    "the splits outside it. Where an index is damaged or cannot answer, the plan scans and says so. Needs "
    "``spark.sql.python.filterPushdown.enabled=true`` (``rmqlab.spark.register`` sets it). Off by default because of "
    "Spark 4.3.0 itself: it keeps the read a query's filters planned on the data source, and a later query of the "
    "*same DataFrame* without filters reads with it; on 4.3.0 load a fresh DataFrame for each filtered query. In "
    "strict mode a pushed read fails only on damage in the bytes it reads."))

#: the object-storage settings every source takes, for an ``s3://`` path
_S3_WHAT = {"fs.s3.endpoint": "``host:port`` of an S3-compatible server", "fs.s3.region": "the region", "fs.s3.scheme": "``http`` or ``https``",
            "fs.s3.accessKey": "the access key (with ``fs.s3.secretKey``)", "fs.s3.secretKey": "the secret key",
            "fs.s3.sessionToken": "a session token"}
FS_OPTIONS = tuple(
    Option(name, "text", None, f"for an ``s3://`` path, {_S3_WHAT[name]}" + (f"; else ``{'``, ``'.join(env)}`` of the driver's environment" if env else "")
           + ". Resolved on the driver and carried to the workers in the splits: executors need no AWS variables.")
    for name, env in S3_SETTINGS.items()
)


def with_options(doc: str | None, options: tuple[Option, ...]) -> str:
    """A source's docstring (its manual) with its options listed from their declarations."""
    lines = [(doc or "").rstrip(), ""]
    for o in options:
        lines += [f"    ``{o.name}`` ({o.kind}, default {o.default_text()})", f"        {o.doc}"]
    return "\n".join(lines) + "\n"


def opt_bool(options, name: str, default: bool) -> bool:
    v = _get(options, name)
    if v is None:
        return default
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    raise OptionError(f"option {name}={v!r}: expected true or false")


def opt_size(options, name: str, default: int) -> int:
    v = _get(options, name)
    if v is None:
        return default
    from ..lab.generate import parse_size

    try:
        n = parse_size(v)
    except ValueError:
        raise OptionError(f"option {name}={v!r}: expected a byte count such as 134217728 or 128MiB") from None
    if n <= 0:
        raise OptionError(f"option {name}={v!r}: must be positive")
    return n


def opt_int(options, name: str, default: int | None) -> int | None:
    v = _get(options, name)
    if v is None:
        return default
    try:
        return int(str(v).strip())
    except ValueError:
        raise OptionError(f"option {name}={v!r}: expected an integer") from None


def opt_time(options, name: str) -> int | None:
    """Milliseconds since the epoch, or an ISO-8601 time (no zone = UTC)."""
    v = _get(options, name)
    if v is None:
        return None
    s = str(v).strip()
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    try:
        t = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise OptionError(f"option {name}={v!r}: expected ms since the epoch or an ISO-8601 time like 2026-01-01T00:05:00") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return int(t.timestamp() * 1000)


def opt_list(options, name: str) -> list[str] | None:
    v = _get(options, name)
    if v is None:
        return None
    items = [x.strip() for x in str(v).split(",") if x.strip()]
    return items


def opt_choice(options, name: str, choices: tuple[str, ...], default: str) -> str:
    v = _get(options, name)
    if v is None:
        return default
    s = str(v).strip().lower()
    if s not in choices:
        raise OptionError(f"option {name}={v!r}: expected one of {', '.join(choices)}")
    return s
