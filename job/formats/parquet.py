"""parquet: Spark's own columnar files (filesystem connector only)."""
from __future__ import annotations

from job.formats.base import Format
from job.options import Option

OPTIONS = (Option("compression", default="snappy", description="Parquet compression codec."),)

FORMAT = Format("parquet", "Apache Parquet files, read and written by Spark directly.", OPTIONS, file_format="parquet")
