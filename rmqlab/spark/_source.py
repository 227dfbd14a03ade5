"""What every data source of this package shares: options read one way (names in any
case), a path required, object-storage settings resolved where the read is planned, a
user's schema checked against the source's (:func:`_paths.requested_columns`), and each
batch cut to the columns asked for.  A source names its format, schema and reader; its
reader reads its own options on top of these."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader

from . import _paths


class StoreSourceReader(DataSourceReader):
    """A reader of one store path (``load(PATH)``), for the columns a user's schema chose."""

    #: the format (``spark.read.format(...)``), for messages
    FORMAT = "rocketmq"
    #: what ``load()`` takes, said when the path is missing
    LOADS = "STORE"

    def __init__(self, options: dict, columns: list[str] | None = None):
        self.options = options
        self.columns = columns  # a user's schema chose these (None: all)
        self.path = options.get("path")
        if not self.path:
            raise _paths.OptionError(f'no path: use spark.read.format("{self.FORMAT}").load({self.LOADS})')
        self.fs = _paths.fs_settings(options, self.path)

    def project(self, batch):
        """``batch`` with the columns asked for, in their order."""
        return batch if self.columns is None else batch.select(self.columns)


class StoreDataSource(DataSource):
    """A source whose rows are :attr:`SCHEMA`, read by :attr:`READER` (each module sets
    it below the reader's class: the source's docstring, its manual, comes first)."""

    SCHEMA = None
    READER: type = StoreSourceReader

    @classmethod
    def name(cls) -> str:
        return cls.READER.FORMAT

    def schema(self):
        return self.SCHEMA

    def reader(self, schema):
        return self.READER(_paths.lower_keys(self.options), _paths.requested_columns(self.name(), self.SCHEMA, schema))
