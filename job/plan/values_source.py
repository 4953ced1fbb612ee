"""``VALUES (…), (…)`` as a bounded streaming source.

A streaming query needs streaming inputs. The rows of a VALUES list are computed once, on
the driver, and served by a small Python data source that hands them out in its first
micro-batch (offset 0 → 1) and nothing after: a restarted query, whose checkpoint holds
offset 1, does not read them again, as Flink does not re-read a finished bounded source.
"""
from __future__ import annotations

import base64
import pickle

DATA_SOURCE_NAME = "streamsql_values"
_classes: dict[str, type] = {}


def _build_classes() -> dict[str, type]:
    if _classes:
        return _classes
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

    class ValuesPartition(InputPartition):
        def __init__(self) -> None:
            super().__init__(0)

    class ValuesStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def __init__(self, rows: list) -> None:
            self.rows = rows

        def initialOffset(self) -> dict:
            return {"done": 0}

        def latestOffset(self, start: dict, limit=None) -> dict:
            return {"done": 1}

        def prepareForTriggerAvailableNow(self) -> None:
            pass

        def partitions(self, start: dict, end: dict):
            return [ValuesPartition()] if int(start["done"]) == 0 and int(end["done"]) == 1 else []

        def read(self, partition):
            yield from (tuple(r) for r in self.rows)

        def commit(self, end: dict) -> None:
            pass

    class ValuesDataSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return DATA_SOURCE_NAME

        def schema(self):
            raise ValueError("the VALUES data source needs an explicit schema")

        def streamReader(self, schema):
            return ValuesStreamReader(pickle.loads(base64.b64decode(self.options["rows"])))

    for cls in (ValuesPartition, ValuesStreamReader, ValuesDataSource):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
        _classes[cls.__name__] = cls
    return _classes


def __getattr__(name: str):
    if name in ("ValuesPartition", "ValuesStreamReader", "ValuesDataSource"):
        return _build_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_values(spark, name: str, df):
    """A streaming DataFrame yielding the rows of the batch DataFrame ``df`` once."""
    rows = [tuple(r) for r in df.collect()]
    spark.dataSource.register(_build_classes()["ValuesDataSource"])
    encoded = base64.b64encode(pickle.dumps(rows)).decode("ascii")
    return spark.readStream.format(DATA_SOURCE_NAME).schema(df.schema).option("rows", encoded).load()
