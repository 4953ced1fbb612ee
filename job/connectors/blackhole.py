"""blackhole: a sink that discards every row (Flink's 'blackhole'), for benchmarks.

The rows are still computed: Spark's ``noop`` sink runs the whole query and drops the
result, as Flink's blackhole consumes its input.
"""
from __future__ import annotations

from job.connectors.base import APPEND, CHANGELOG, UPSERT, Connector, Sink


class BlackholeSink(Sink):
    def write_stream(self, df):
        return df.writeStream.format("noop")

    def write_append(self, batch, batch_id):
        batch.write.format("noop").mode("overwrite").save()

    def write_changes(self, batch, batch_id):
        batch.write.format("noop").mode("overwrite").save()

    def write_upsert_stream(self, df):
        return df.writeStream.format("noop")

    def write_change_stream(self, df):
        return df.writeStream.format("noop")


CONNECTOR = Connector(
    identifier="blackhole",
    description="Discards every row (the query still runs in full); for benchmarks and tests.",
    sink_modes=(APPEND, UPSERT, CHANGELOG),
    create_sink=BlackholeSink,
    accepts_retractions=True,
)
