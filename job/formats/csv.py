"""csv: one delimited line per record, fields in column order (Flink's 'csv' format)."""
from __future__ import annotations

from job.formats.base import CORRUPT, Decoded, Format, as_text, with_corrupt_field, without_corrupt_field
from job.options import Option

OPTIONS = (
    Option("field-delimiter", default=",", description="Field separator, one character."),
    Option("quote-character", default='"', description="Quote character for fields that contain the delimiter."),
    Option("null-literal", default="", description="The string that stands for NULL."),
    Option("ignore-parse-errors", "bool", default=False, description="Skip records that do not parse (same as 'on-error' = 'skip')."),
    Option("allow-comments", "bool", default=False, description="Ignore lines starting with '#'."),
)


def _spark_options(options, *, writing: bool = False) -> dict:
    # Reading accepts any fraction length; writing needs one fixed pattern.
    ts = "yyyy-MM-dd HH:mm:ss.SSS" if writing else "yyyy-MM-dd HH:mm:ss[.SSSSSS][.SSS][.S]"
    out = {"sep": options.get("field-delimiter", ","), "quote": options.get("quote-character", '"'),
           "nullValue": options.get("null-literal", ""), "timestampFormat": ts}
    if options.get("allow-comments"):
        out["comment"] = "#"
    return out


def decode(value, schema, options) -> Decoded:
    from pyspark.sql import functions as F

    text = as_text(value)
    parsed = F.from_csv(text, with_corrupt_field(schema).simpleString()[len("struct<"):-1].replace(":", " "),
                        {**_spark_options(options), "mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
    error = F.when(parsed[CORRUPT].isNotNull(), F.lit("malformed CSV line or a value that does not fit the declared type"))
    if options.get("allow-comments"):
        error = F.when(F.ltrim(text).startswith("#"), F.lit(None)).otherwise(error)
    return Decoded(without_corrupt_field(parsed, schema), error)


def encode(row, options):
    from pyspark.sql import functions as F

    return F.to_csv(row, _spark_options(options, writing=True))


FORMAT = Format("csv", "Delimited text, fields in column order.", OPTIONS, decode=decode, encode=encode)
