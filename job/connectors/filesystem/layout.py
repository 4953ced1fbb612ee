"""How the filesystem connector lays a table out in files: the columns stored in the
files and those in ``col=value`` directory names (PARTITIONED BY), the file metadata
columns, and the format of the files.
"""
from __future__ import annotations

from job.connectors.base import columns_named
from job.connectors.registry import format_for
from job.formats.base import format_options

# Flink's file metadata keys → fields of Spark's hidden _metadata column.
METADATA_KEYS = {
    "file.path": "file_path",
    "file.name": "file_name",
    "file.size": "file_size",
    "file.modification-time": "file_modification_time",
}
# Directory names that stand for a NULL partition value: Spark's and Flink's defaults.
DEFAULT_PARTITION_NAMES = ("__HIVE_DEFAULT_PARTITION__", "__DEFAULT_PARTITION__")

_COMPLEX = ("struct<", "array<", "map<")


def is_complex(spark_type: str) -> bool:
    return spark_type.strip().lower().startswith(_COMPLEX)


def file_format(table, options):
    """The format of the files ('format')."""
    return format_for(options["format"], table=table, option="format")


def file_format_options(fmt, options):
    """The options of the files' format, without their '<format>.' prefix."""
    return format_options(options, fmt.name + ".")


def partition_columns(table) -> list[str]:
    return columns_named(table, table.partitioned_by)


def data_columns(table) -> list[str]:
    """Physical columns stored inside the files (partition columns live in directory names)."""
    parts = {p.lower() for p in table.partitioned_by}
    return [c.name for c in table.physical_columns if c.name.lower() not in parts]
