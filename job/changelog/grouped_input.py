"""Vectorized input grouping for the changelog operators' Python workers.

PySpark 4.2's ``TransformWithStateInPandasSerializer.load_stream`` turns every Arrow
batch into pandas, then walks it row by row (``itertuples``) to find where the grouping
key changes, and rebuilds a DataFrame per group from the list of row tuples. For our
operators that row walk was the largest single cost of the whole Python side (about a
third of the worker CPU of the 3-way join benchmark): each bucket receives thousands of
rows per micro-batch, and all of them went through a namedtuple and back.

Rows arrive sorted by the grouping key (Spark sorts them for the operator), so the groups
are runs of equal keys: :func:`load_stream` finds the run boundaries with one numpy
comparison per Arrow batch and hands the operator slices of the batch's DataFrame. It
yields exactly what the original does — ``(PROCESS_DATA, key, iterator of (key, frame))``
per key with frames of at most ``arrow_max_records_per_batch`` rows, then the timer and
completion markers — so only the speed differs.

:func:`install` patches the serializer class when the worker imports the operators. It
applies only to the PySpark release line it was written against and only to a single
grouping column (our ``__bucket``); anything else keeps PySpark's own code.
"""
from __future__ import annotations

from itertools import groupby

SUPPORTED_PYSPARK = ("4.2.",)


def _runs(keys):
    """(start, end, key) for each run of equal values in a 1-D numpy array; keys as Python
    values (the state API serializes the key it is given)."""
    import numpy as np

    if not len(keys):
        return
    starts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    bounds = [0, *starts.tolist(), len(keys)]
    for start, end in zip(bounds, bounds[1:]):
        key = keys[start]
        yield start, end, key.item() if hasattr(key, "item") else key


def load_stream(self, stream):
    import pandas as pd
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql.streaming.stateful_processor_util import TransformWithStateInPandasFuncMode
    from pyspark.sql.conversion import ArrowBatchTransformer

    limit = self.arrow_max_records_per_batch

    def frames():
        for batch in ArrowStreamSerializer.load_stream(self, stream):
            self._update_batch_size_stats(batch)
            columns = ArrowBatchTransformer.to_pandas(
                batch, timezone=self._timezone, schema=self._input_type,
                struct_in_pandas=self._struct_in_pandas, ndarray_as_list=self._ndarray_as_list,
                prefer_int_ext_dtype=self._prefer_int_ext_dtype, df_for_struct=self._df_for_struct)
            frame = pd.concat(columns, axis=1)
            keys = frame.iloc[:, self.key_offsets[0]].to_numpy()
            for start, end, key in _runs(keys):
                for lo in range(start, end, limit):
                    yield (key,), frame.iloc[lo:min(end, lo + limit)].reset_index(drop=True)

    for key, chunks in groupby(frames(), key=lambda item: item[0]):
        yield TransformWithStateInPandasFuncMode.PROCESS_DATA, key, chunks
    yield TransformWithStateInPandasFuncMode.PROCESS_TIMER, None, None
    yield TransformWithStateInPandasFuncMode.COMPLETE, None, None


def install() -> bool:
    """Patch PySpark's serializer for a single grouping column; True when patched."""
    try:
        import pyspark
        from pyspark.sql.pandas import serializers
    except ImportError:  # pragma: no cover - the operators' unit tests run without it
        return False
    cls = getattr(serializers, "TransformWithStateInPandasSerializer", None)
    if cls is None or not pyspark.__version__.startswith(SUPPORTED_PYSPARK):
        return False
    if getattr(cls, "_streamsql_original_load_stream", None) is None:
        original = cls.load_stream

        def dispatch(self, stream):
            if len(self.key_offsets or ()) == 1 and type(self) is cls:
                return load_stream(self, stream)
            return original(self, stream)

        cls._streamsql_original_load_stream = original
        cls.load_stream = dispatch
    return True
