"""Commit cost of the iceberg sink's per-micro-batch transaction, without Spark: how long
one upsert batch takes to commit and how many data files the table holds after it, as the
table grows. What docs/connectors.md ("iceberg") reports came from this script.

    .venv/bin/python benchmarks/iceberg_commit.py --keys 20000 --batch 1000 --batches 20
"""
from __future__ import annotations

import argparse
import tempfile
import time

import pyarrow as pa
from pyiceberg.expressions import In
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from job.connectors.iceberg.catalog import HadoopCatalog


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=20000, help="distinct keys the batches update")
    ap.add_argument("--batch", type=int, default=1000, help="upserts per micro-batch")
    ap.add_argument("--batches", type=int, default=20)
    args = ap.parse_args()
    catalog = HadoopCatalog("bench", warehouse=tempfile.mkdtemp(prefix="iceberg-bench-"))
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "k", StringType(), required=True), NestedField(2, "n", LongType()),
                    identifier_field_ids=[1])
    table = catalog.create_table(("db", "t"), schema, properties={"format-version": "2"})
    arrow = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("n", pa.int64())])
    print("batch\tseconds\tdata_files\trows")
    for b in range(args.batches):
        keys = [f"k{(b * args.batch + i) * 7919 % args.keys}" for i in range(args.batch)]
        rows = pa.table({"k": keys, "n": [b] * len(keys)}, schema=arrow)
        start = time.perf_counter()
        table = catalog.load_table(("db", "t"))
        tx = table.transaction()
        if table.current_snapshot() is not None:
            tx.delete(In("k", set(keys)))
        tx.append(rows)
        tx.commit_transaction()
        seconds = time.perf_counter() - start
        table = catalog.load_table(("db", "t"))
        files = len(table.inspect.files())
        print(f"{b}\t{seconds:.3f}\t{files}\t{table.scan().to_arrow().num_rows}")


if __name__ == "__main__":
    main()
