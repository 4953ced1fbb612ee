"""A micro-batch's rows as Arrow record batches, streamed to the driver one at a time.

``DataFrame.toArrow()`` would hold the whole micro-batch in the driver before pyiceberg
writes a byte. Spark's collect-as-Arrow protocol already sends each partition's batches
as they are computed (out of order, then their order, or -1 and the JVM's error); this
reads them off the socket as they come and hands each to the writer, so the driver holds
about one Arrow batch (``spark.sql.execution.arrow.maxRecordsPerBatch`` rows) at a time.
Row order does not matter to the sink: a micro-batch has at most one change per key.
"""
from __future__ import annotations

from typing import Iterator


def arrow_batches(df) -> Iterator:
    """Yield ``df``'s rows as ``pyarrow.RecordBatch``es, in no particular order."""
    from pyspark.serializers import UTF8Deserializer, read_int
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.util import _load_from_socket

    class Unordered(ArrowStreamSerializer):
        def load_stream(self, stream):
            yield from super().load_stream(stream)
            if read_int(stream) == -1:  # the JVM failed computing a partition
                raise RuntimeError(UTF8Deserializer().loads(stream))

    port, secret, server = df._jdf.collectAsArrowToPython()
    try:
        with _load_from_socket((port, secret), Unordered()) as stream:
            yield from stream
    finally:
        server.getResult()  # raises the job's own error, if it failed
