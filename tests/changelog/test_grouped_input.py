"""The vectorized TWS input grouping yields what PySpark's row-by-row original yields."""
import io
import random

import pandas as pd
import pyarrow as pa
import pytest
from pandas.testing import assert_frame_equal

from job.changelog import grouped_input
from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer


def serializer(max_records: int) -> TransformWithStateInPandasSerializer:
    ser = TransformWithStateInPandasSerializer(
        timezone="UTC", safecheck=True, assign_cols_by_name=True, prefer_int_ext_dtype=False,
        arrow_max_records_per_batch=max_records, arrow_max_bytes_per_batch=2**31 - 1,
        int_to_decimal_coercion_enabled=False)
    ser.key_offsets = [0]
    return ser


def arrow_stream(batches: list[pa.RecordBatch]) -> io.BytesIO:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    sink.seek(0)
    return sink


def random_batches(rng: random.Random) -> list[pa.RecordBatch]:
    """Rows sorted by bucket (as Spark delivers them), cut into Arrow batches at random
    places, so a bucket's run may span batches; values include NULLs and big ints."""
    buckets = sorted(rng.choice(range(8)) for _ in range(rng.randrange(1, 120)))
    rows = {"__bucket": buckets,
            "row": [rng.choice([None, "", '{"a":1}', "é"]) for _ in buckets],
            "sign": [rng.choice([-1, 1]) for _ in buckets],
            "seq": [rng.choice([None, 2**62 + rng.randrange(5)]) for _ in buckets]}
    schema = pa.schema([("__bucket", pa.int64()), ("row", pa.string()), ("sign", pa.int32()), ("seq", pa.int64())])
    table = pa.Table.from_pydict(rows, schema)
    cuts = sorted({0, len(buckets), *(rng.randrange(len(buckets)) for _ in range(3))})
    return [table.slice(lo, hi - lo).to_batches()[0] for lo, hi in zip(cuts, cuts[1:]) if hi > lo]


def collected(items) -> list:
    """(mode, key, [chunk sizes], all rows of the key as one frame) per yielded item, each
    key's chunks consumed before the next item (they come from one groupby)."""
    out = []
    for mode, key, chunks in items:
        if chunks is None:
            out.append((mode, key, None, None))
            continue
        frames = [frame for _key, frame in chunks]
        whole = pd.concat(frames, ignore_index=True)
        out.append((mode, key, [len(f) for f in frames], whole))
    return out


@pytest.mark.parametrize("seed", range(25))
def test_vectorized_grouping_matches_pyspark(seed):
    rng = random.Random(seed)
    batches = random_batches(rng)
    limit = rng.choice([3, 7, 10_000])
    assert grouped_input.install()
    cls = TransformWithStateInPandasSerializer
    expected = collected(cls._streamsql_original_load_stream(serializer(limit), arrow_stream(batches)))
    actual = collected(serializer(limit).load_stream(arrow_stream(batches)))
    assert [(m, k) for m, k, _, _ in actual] == [(m, k) for m, k, _, _ in expected]
    for (_, key, sizes, frame), (_, _, exp_sizes, exp_frame) in zip(actual, expected):
        if frame is None:
            continue
        assert all(size <= limit for size in sizes), (key, sizes)
        assert sum(sizes) == sum(exp_sizes)
        # PySpark rebuilds frames from namedtuples (renaming '__bucket'); compare by position.
        exp_frame.columns = frame.columns
        assert_frame_equal(frame.astype(object).where(frame.notna(), None),
                           exp_frame.astype(object).where(exp_frame.notna(), None), check_dtype=False)


def test_keys_are_python_values():
    batches = random_batches(random.Random(3))
    keys = [key for mode, key, chunks in serializer(10).load_stream(arrow_stream(batches)) if chunks is not None]
    assert keys and all(type(k) is tuple and type(k[0]) is int for k in keys)
