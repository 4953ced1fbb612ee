"""benchmarks/latency.py's bookkeeping: which micro-batch consumed which Kafka offsets, and when it ended."""
from benchmarks.latency import batch_ranges
from benchmarks.run import write_table


def progress(ts: str, ms: int, rows: int, start, end) -> dict:
    return {"timestamp": ts, "durationMs": {"triggerExecution": ms}, "numInputRows": rows,
            "sources": [{"startOffset": start, "endOffset": end}]}


def test_batch_ranges_per_partition_with_the_batch_end():
    reports = [
        # batch 0 starts from nothing; Spark reports offsets as JSON text or as objects
        progress("2026-11-22T10:00:00.000Z", 1500, 30, None, '{"in-users": {"0": 10, "1": 20}, "other": {"0": 5}}'),
        progress("2026-11-22T10:00:01.500Z", 200, 0, {"in-users": {"0": 10, "1": 20}}, {"in-users": {"0": 10, "1": 20}}),
        progress("2026-11-22T10:00:02.000Z", 250, 4, {"in-users": {"0": 10, "1": 20}}, {"in-users": {"0": 14, "1": 20}}),
    ]
    t0 = 1795341600000  # 2026-11-22T10:00:00Z in ms
    assert batch_ranges(reports, {"in-users"}) == [
        ("in-users", 0, 0, 10, t0 + 1500), ("in-users", 1, 0, 20, t0 + 1500),
        ("in-users", 0, 10, 14, t0 + 2250),  # empty batches and unread topics are left out
    ]


def test_write_table_replaces_only_between_its_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- x:start -->\nold\n<!-- x:end -->\nb\n<!-- y:start -->\nkeep\n<!-- y:end -->\n")
    write_table(readme, "x", ["| new |"])
    assert readme.read_text() == "a\n<!-- x:start -->\n| new |\n<!-- x:end -->\nb\n<!-- y:start -->\nkeep\n<!-- y:end -->\n"
