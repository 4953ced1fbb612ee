"""JSON_ARRAYAGG / JSON_OBJECTAGG: the forms not run yet are refused by name where the user
wrote them (dry runs: nothing is read). Their rows are compared with Flink's in
tests/flink/cases/json_aggregates.yaml."""
from __future__ import annotations

import pytest

from tests.support import dry_runs

TABLES = """
CREATE TABLE o (id INT, cat STRING, amount INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/o', 'format' = 'json');
CREATE TABLE out_rows (a STRING, b STRING) WITH ('connector' = 'blackhole');
"""


@pytest.mark.parametrize("query, at, message", [
    ("SELECT cat, JSON_ARRAYAGG(amount) FILTER (WHERE id > 1) FROM o GROUP BY cat", "JSON_ARRAYAGG",
     "JSON_ARRAYAGG with FILTER (WHERE …) is not supported yet"),
    ("SELECT CAST(window_start AS STRING), JSON_OBJECTAGG(cat VALUE amount) FROM TABLE(TUMBLE(TABLE o, "
     "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end", "JSON_OBJECTAGG",
     "not supported yet in a window aggregation"),
    ("SELECT cat, JSON_OBJECTAGG(KEY id VALUE amount) FROM o GROUP BY cat", "id VALUE",
     "the key of JSON_OBJECTAGG must be a string"),
])
def test_refused_by_name_where_written(query, at, message):
    dry_runs.assert_refused_at(TABLES, query, at, message)
