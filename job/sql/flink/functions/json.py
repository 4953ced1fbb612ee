"""Flink's JSON functions."""
from __future__ import annotations

from job.sql.flink.functions import AGGREGATE, not_supported

CATEGORY = "json"

for _name in ("JSON_EXISTS", "JSON_STRING", "JSON_VALUE", "JSON_QUERY", "JSON_OBJECT", "JSON_ARRAY"):
    not_supported(_name, CATEGORY)
for _name in ("JSON_OBJECTAGG", "JSON_ARRAYAGG"):
    not_supported(_name, CATEGORY, kind=AGGREGATE)
