"""What every data source of this package shares: options read one way (names in any
case), a path required, object-storage settings resolved where the read is planned, a
user's schema checked against the source's (:func:`_paths.requested_columns`), and each
batch cut to the columns asked for.  A source names its format, schema and reader; its
reader reads its own options on top of these.  With the option ``pushdown=true`` a
source's reader also takes a query's filters (``pushFilters``) where they can cut its
work: :class:`Pushed`."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader

from . import _paths


class StoreSourceReader(DataSourceReader):
    """A reader of one store path (``load(PATH)``), for the columns a user's schema chose."""

    #: the format (``spark.read.format(...)``), for messages
    FORMAT = "rocketmq"
    #: what ``load()`` takes, said when the path is missing
    LOADS = "STORE"

    #: the columns ``pushFilters`` takes equality / ``IN`` on, and whole-number ranges on
    PUSH_EQUAL: tuple = ()
    PUSH_RANGE: tuple = ()

    def __init__(self, options: dict, columns: list[str] | None = None):
        self.options = options
        self.columns = columns  # a user's schema chose these (None: all)
        #: what pushFilters took from the query (a :class:`PushFilters` reader); nothing otherwise
        self.pushed = Pushed()
        self.path = options.get("path")
        if not self.path:
            raise _paths.OptionError(f'no path: use spark.read.format("{self.FORMAT}").load({self.LOADS})')
        self.fs = _paths.fs_settings(options, self.path)

    def project(self, batch):
        """``batch`` with the columns asked for, in their order."""
        return batch if self.columns is None else batch.select(self.columns)


class PushFilters:
    """A reader that takes a query's filters (Spark ≥ 4.1 with
    ``spark.sql.python.filterPushdown.enabled``, which :func:`rmqlab.spark.register`
    turns on; chosen by the option ``pushdown=true``): what its ``PUSH_EQUAL`` /
    ``PUSH_RANGE`` columns allow goes to :attr:`StoreSourceReader.pushed`, and every
    filter is handed back for Spark to check again."""

    def pushFilters(self, filters):
        self.pushed, _ = push_filters(filters, self.PUSH_EQUAL, self.PUSH_RANGE)
        return filters


class StoreDataSource(DataSource):
    """A source whose rows are :attr:`SCHEMA`, read by :attr:`READER` (each module sets
    it below the reader's class: the source's docstring, its manual, comes first), or
    by :attr:`PUSHDOWN_READER` with the option ``pushdown=true``.

    Pushdown is asked for, not the default: Spark 4.3.0 reuses one query's pushed read
    for another query of the same DataFrame, and refuses a reader that implements
    ``pushFilters`` while the session has filter pushdown off."""

    SCHEMA = None
    READER: type = StoreSourceReader
    PUSHDOWN_READER: type | None = None
    #: the options it reads (:class:`rmqlab.spark._paths.Option`), listed at the end of its docstring
    OPTIONS: tuple = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "OPTIONS" in cls.__dict__:  # one owner: the declarations say what the manual lists
            cls.__doc__ = _paths.with_options(cls.__doc__, cls.OPTIONS)

    @classmethod
    def name(cls) -> str:
        return cls.READER.FORMAT

    def schema(self):
        return self.SCHEMA

    def reader(self, schema):
        options = _paths.lower_keys(self.options)
        cls = self.PUSHDOWN_READER if self.PUSHDOWN_READER and _paths.PUSHDOWN.read(options) else self.READER
        return cls(options, _paths.requested_columns(self.name(), self.SCHEMA, schema))


@dataclass(frozen=True)
class Pushed:
    """What a reader's ``pushFilters`` took from a query's WHERE clause (Spark's
    filters, ANDed): per column a set of values (``=``, ``IN``) and an inclusive range
    (``>``, ``>=``, ``<``, ``<=``).  Each source uses it to leave out what cannot hold a
    match (the commitlog source: splits, files and byte ranges, :mod:`rmqlab.spark.pushdown`;
    the consume-queue source: queues; the index source: files; the offsets source:
    groups) and filters its batches with it (:func:`filter_batch`).  Every filter is
    also left to Spark, which checks it again: pushing one can only save work, never
    change the rows."""

    values: tuple = ()  # ((column, frozenset of values), ...)
    ranges: tuple = ()  # ((column, lo or None, hi or None), ...), inclusive

    def value_set(self, column: str):
        sets = [v for c, v in self.values if c == column]
        if not sets:
            return None
        out = sets[0]
        for v in sets[1:]:
            out = out & v
        return out

    def bounds(self, column: str) -> tuple[int | None, int | None]:
        lo = hi = None
        for c, a, b in self.ranges:
            if c == column:
                lo = a if lo is None or (a is not None and a > lo) else lo
                hi = b if hi is None or (b is not None and b < hi) else hi
        vals = self.value_set(column)
        if vals is not None and vals and all(isinstance(v, int) for v in vals):
            lo = min(vals) if lo is None else max(lo, min(vals))
            hi = max(vals) if hi is None else min(hi, max(vals))
        return lo, hi

    def __bool__(self) -> bool:
        return bool(self.values or self.ranges)

    def describe(self) -> str:
        parts = [f"{c} IN {sorted(v, key=str)[:5]}{'…' if len(v) > 5 else ''}" for c, v in self.values]
        parts += [f"{c} in [{'-∞' if a is None else a}, {'∞' if b is None else b}]" for c, a, b in self.ranges]
        return " AND ".join(parts) or "nothing"


def push_filters(filters, equal: tuple, ranges_on: tuple) -> tuple[Pushed, list]:
    """Spark's pushed filters → (:class:`Pushed`, the filters it took): equality / ``IN``
    on the columns ``equal``, whole-number bounds on the whole-number columns
    ``ranges_on``; anything else is left."""
    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual

    values, ranges, taken = [], [], []
    for f in filters:
        col = f.attribute[0] if len(getattr(f, "attribute", ())) == 1 else None
        if isinstance(f, EqualTo) and col in equal and f.value is not None:
            values.append((col, frozenset([f.value])))
        elif isinstance(f, In) and col in equal and all(v is not None for v in f.value):
            values.append((col, frozenset(f.value)))
        elif isinstance(f, (GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)) and col in ranges_on and isinstance(f.value, int) and not isinstance(f.value, bool):
            v = f.value
            lo, hi = {GreaterThan: (v + 1, None), GreaterThanOrEqual: (v, None), LessThan: (None, v - 1), LessThanOrEqual: (None, v)}[type(f)]
            ranges.append((col, lo, hi))
        else:
            continue
        taken.append(f)
    return Pushed(tuple(values), tuple(ranges)), taken

def filter_batch(batch, pushed: Pushed):
    """The rows of ``batch`` that can match ``pushed`` (columns it lacks are not judged)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.schema.names
    mask = None
    for col, vals in pushed.values:
        if col in names:
            m = pc.is_in(batch.column(col), value_set=pa.array(sorted(vals), batch.schema.field(col).type))
            mask = m if mask is None else pc.and_kleene(mask, m)
    for col, lo, hi in pushed.ranges:
        if col in names:
            c = batch.column(col)
            for m in ([pc.greater_equal(c, lo)] if lo is not None else []) + ([pc.less_equal(c, hi)] if hi is not None else []):
                mask = m if mask is None else pc.and_kleene(mask, m)
    return batch if mask is None else batch.filter(pc.fill_null(mask, False))
