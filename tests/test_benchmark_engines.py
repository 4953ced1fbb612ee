"""The pure parts of the Flink-vs-job benchmark harness (no engine, no broker, nothing timed):
statement splitting, template rendering, changelog/upsert bookkeeping, result comparison,
latency matching, Nexmark's event conversion and connector-option rewriting, the summary."""
import json

from benchmarks import engines, nexmark, summary, throughput
from benchmarks.job_collect import root_cause
from benchmarks.latency_engines import kept_up


def test_split_statements_keeps_semicolons_in_quotes_and_drops_comments():
    text = ("-- a comment; not a statement\nCREATE TABLE t (a STRING) WITH ('x' = 'a;b', `odd;name` = 'it''s');\n"
            "/* block; comment */ INSERT INTO s SELECT ';' FROM t;\n\n;  \n")
    assert engines.split_statements(text) == [
        "CREATE TABLE t (a STRING) WITH ('x' = 'a;b', `odd;name` = 'it''s')",
        "INSERT INTO s SELECT ';' FROM t",
    ]


def test_insert_parts():
    assert engines.insert_parts("INSERT INTO nexmark_q0\nSELECT a FROM bid") == ("nexmark_q0", "SELECT a FROM bid")
    assert engines.insert_parts("insert into `my sink` (a, b) select 1, 2") == ("my sink", "select 1, 2")
    assert engines.insert_parts("CREATE VIEW v AS SELECT 1") is None


def test_render_is_strict_and_handles_the_pipelines_conditionals():
    text = "WITH ({{ sink_options }}{% if sink_topics %}, 'topic' = '{{ topic_prefix }}counts'{% endif %})"
    assert engines.render(text, {"sink_options": "'connector' = 'blackhole'", "sink_topics": "", "topic_prefix": "x"}) \
        == "WITH ('connector' = 'blackhole')"
    assert engines.render(text, {"sink_options": "'c' = 'k'", "sink_topics": "1", "topic_prefix": "p-"}) \
        == "WITH ('c' = 'k', 'topic' = 'p-counts')"
    try:
        engines.render("{{ missing }}", {})
    except Exception as exc:  # noqa: BLE001
        assert "missing" in str(exc)
    else:
        raise AssertionError("an undefined variable must fail")


def test_seed_pipelines_render_for_both_engines(tmp_path):
    for query in ("count", "join"):
        for source in ("files", "kafka"):
            flink = throughput.render_pipeline(query, source, "flink", tmp_path, "127.0.0.1:1", {"users": "u-topic"},
                                               "blackhole")
            job = throughput.render_pipeline(query, source, "job", tmp_path, "127.0.0.1:1", {"users": "u-topic"},
                                             "blackhole")
            assert "'connector' = 'blackhole')" in flink and "'topic'" not in flink.split("blackhole")[-1]
            # The same SQL for both: Kafka sources end at the offsets they start with.
            assert flink == job
            assert ("'scan.bounded.mode' = 'latest-offset'" in flink) == (source == "kafka")
            assert len(engines.split_statements(flink)) == 5


def test_upsert_table_and_compare_rows():
    table = engines.upsert_table([("a", '{"n": 1}'), ("b", '{"n": 2}'), ("a", None), ("b", '{"n": 3}')])
    assert table == {"b": {"n": 3}}
    same = engines.compare_rows([[1, "x"], [2, None]], [[2, None], [1, "x"]])
    assert same["same"] and same["rows"] == [2, 2]
    diff = engines.compare_rows([[1], [1], [2]], [[1], [3]])
    assert not diff["same"] and diff["only_first"] == 2 and diff["only_second"] == 1


def test_reference_of_the_seed_queries(tmp_path):
    for table, lines in {
        "users": [{"before": None, "after": {"uid": "u1", "accountId": "a1", "score": 1}, "op": "c"},
                  {"before": None, "after": {"uid": "u2", "accountId": "a1", "score": 1}, "op": "c"},
                  {"before": {"uid": "u2", "accountId": "a1", "score": 1},
                   "after": {"uid": "u2", "accountId": "a2", "score": 1}, "op": "u"},
                  {"before": None, "after": {"uid": "u3", "accountId": "a2", "score": 1}, "op": "c"},
                  {"before": {"uid": "u3", "accountId": "a2", "score": 1}, "after": None, "op": "d"}],
        "colors": [{"before": None, "after": {"userUid": "u1", "favoriteColor": "red"}, "op": "c"}],
        "cheeses": [],
    }.items():
        (tmp_path / table).mkdir()
        (tmp_path / table / "part-00000.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    tables = throughput.final_tables(tmp_path)
    assert throughput.reference("count", tables) == {"a1": {"accountId": "a1", "userCount": 1},
                                                     "a2": {"accountId": "a2", "userCount": 1}}
    join = throughput.reference("join", tables)
    assert join["u1"]["favoriteColor"] == "red" and join["u2"]["favoriteColor"] is None and "u3" not in join


def test_every_event_is_credited_with_the_first_sink_record_that_shows_it():
    """The count: an event a later change replaced before it was written is credited with
    the record of that change; a tombstone with the account's row after it; an event no
    record shows is unanswered; a tombstone of a user that does not exist changes nothing."""
    from benchmarks.latency_credit import Event, all_latencies, credit

    us = 1_000_000_000_000  # 1e6 s after the epoch, in microseconds
    events = [
        Event("users", "u1", us + 100_000, "a1", False),   # a1: (1, .1) shown at 150 ms: 50 ms
        Event("users", "u2", us + 200_000, "a1", False),   # a1: (2, .2) never written: merged into u3's
        Event("users", "u3", us + 300_000, "a1", False),   # a1: (3, .3) shown at 700 ms: 400 ms (u2: 500 ms)
        Event("users", "u3", us + 400_000, None, True),    # a1: (2, .2) again, shown at 1,000 ms: 600 ms
        Event("users", "u9", us + 450_000, None, True),    # u9 never existed: changes nothing
        Event("users", "u4", us + 500_000, "a2", False),   # never shown
        Event("users", "u5", us + 9_000_000, "a3", False),  # outside the window
    ]
    records = [
        (0, 0, 1_000_000_150, "a1", json.dumps({"userCount": 1, "ts": us + 100_000})),
        (0, 1, 1_000_000_700, "a1", json.dumps({"userCount": 3, "ts": us + 300_000})),
        (0, 2, 1_000_001_000, "a1", json.dumps({"userCount": 2, "ts": us + 200_000})),
    ]
    got = credit("count", events, records, (1e6, 1e6 + 5), end_s=1e6 + 2)
    assert [(round(t - 1e6, 1), round(l)) for t, l in got.samples] == [(0.1, 50), (0.2, 500), (0.3, 400), (0.4, 600)]
    assert [round(t - 1e6, 1) for t in got.unanswered] == [0.5] and got.unaffected == 1
    assert sorted(round(l) for l in all_latencies(got, end_s=1e6 + 2)) == [50, 400, 500, 600, 1500]


def test_a_side_change_counts_only_while_its_user_exists():
    """The join: a color for a user that does not exist changes nothing; once the user
    exists, a color tombstone is shown by the row losing its color, and a user's
    tombstone by the row's."""
    from benchmarks.latency_credit import Event, credit

    us = 1_000_000_000_000
    events = [
        Event("colors", "u1", us + 100_000, None, False),   # no user u1 yet: unaffected
        Event("users", "u1", us + 200_000, "a1", False),    # the row appears at 300 ms
        Event("colors", "u1", us + 400_000, None, True),    # its color goes at 900 ms
        Event("cheeses", "u2", us + 500_000, None, True),   # nothing to delete: unaffected
        Event("users", "u1", us + 600_000, None, True),     # the row goes at 1,000 ms
    ]
    records = [
        (0, 0, 1_000_000_300, "u1", json.dumps({"user_ts": us + 200_000, "color_ts": us + 100_000})),
        (0, 1, 1_000_000_900, "u1", json.dumps({"user_ts": us + 200_000, "color_ts": None})),
        (0, 2, 1_000_001_000, "u1", None),
    ]
    got = credit("join", events, records, (1e6, 1e6 + 5), end_s=1e6 + 2)
    assert [round(l) for _, l in got.samples] == [100, 500, 400] and got.unaffected == 2 and not got.unanswered


def test_kept_up():
    steady = [(t, 100.0) for t in range(100)]
    assert kept_up(steady, drain_s=0.5)["kept_up"]
    assert not kept_up(steady, drain_s=30)["kept_up"]
    growing = [(t, 100.0 + t * 100) for t in range(100)]
    assert not kept_up(growing, drain_s=0.5)["kept_up"]


def test_nexmark_events_in_flinks_schema():
    bid = nexmark.convert_event({"Bid": {"auction": 1000, "bidder": 1001, "price": 5, "channel": "Apple",
                                         "url": "https://x/y", "date_time": 1795515110285, "extra": ""}})
    assert bid["event_type"] == 2 and bid["person"] is None and bid["auction"] is None
    assert bid["bid"]["dateTime"] == "2026-11-24 10:11:50.285"
    person = nexmark.convert_event({"Person": {"id": 7, "name": "n", "email_address": "e", "credit_card": "c",
                                               "city": "x", "state": "or", "date_time": 0, "extra": ""}})
    assert person["event_type"] == 0 and person["person"]["emailAddress"] == "e"
    assert person["person"]["dateTime"] == "1970-01-01 00:00:00.000" == person["dateTime"]


def test_nexmark_rewrites_only_connector_options(tmp_path):
    # a stand-in for the queries' files, in their shape (the real ones are not kept here)
    (tmp_path / "ddl_gen.sql").write_text(
        "-- the source\nCREATE TABLE datagen (\n  event_type int,\n  bid ROW<price BIGINT, `dateTime` TIMESTAMP(3)>,\n"
        "  `dateTime` AS bid.`dateTime`,\n  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND\n"
        ") WITH (\n  'connector' = 'nexmark',\n  'events.num' = '${EVENTS_NUM}'\n);\n")
    (tmp_path / "ddl_views.sql").write_text("CREATE VIEW bid AS SELECT bid.price, `dateTime` FROM ${NEXMARK_TABLE} "
                                            "WHERE event_type = 2;\n")
    (tmp_path / "q1.sql").write_text(
        "CREATE TABLE nexmark_q1 (price BIGINT) PARTITIONED BY (price) WITH (\n 'connector' = 'filesystem',\n"
        " 'path' = 'file://${NEXMARK_DIR}/x'\n);\nINSERT INTO nexmark_q1 SELECT price FROM bid;\n")
    text = nexmark.pipeline("q1", tmp_path, tmp_path / "data")
    statements = engines.split_statements(text)
    assert statements[0].endswith(f"WITH ('connector' = 'filesystem', 'path' = '{tmp_path / 'data' / 'events'}', "
                                  "'format' = 'json')")
    assert "WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND" in statements[0]
    assert "FROM datagen WHERE" in statements[1]
    assert statements[2] == "CREATE TABLE nexmark_q1 (price BIGINT) PARTITIONED BY (price) WITH ('connector' = 'blackhole')"
    assert statements[3] == "INSERT INTO nexmark_q1 SELECT price FROM bid"


def test_nexmark_diagnostic_variant_makes_datetime_physical(tmp_path):
    (tmp_path / "ddl_gen.sql").write_text(
        "CREATE TABLE datagen (\n  event_type int,\n  bid ROW<`dateTime` TIMESTAMP(3)>,\n  `dateTime` AS\n    CASE\n"
        "      WHEN event_type = 2 THEN bid.`dateTime`\n    END,\n"
        "  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND\n) WITH ('connector' = 'nexmark');\n")
    (tmp_path / "ddl_views.sql").write_text("CREATE VIEW bid AS SELECT `dateTime` FROM ${NEXMARK_TABLE};\n")
    (tmp_path / "q0.sql").write_text("CREATE TABLE s (d TIMESTAMP(3)) WITH ('connector' = 'print');\n"
                                     "INSERT INTO s SELECT `dateTime` FROM bid;\n")
    source = engines.split_statements(nexmark.pipeline("q0", tmp_path, tmp_path, "physical-datetime"))[0]
    assert "`dateTime` TIMESTAMP(3),\n  WATERMARK FOR `dateTime`" in source and "CASE" not in source


def test_with_clause_ignores_with_inside_names_and_literals():
    s = "CREATE TABLE `with` (a STRING COMMENT 'with (x)') WITH ('k' = 'v (1)')"
    start, end = nexmark.with_clause(s)
    assert s[start:end] == "'k' = 'v (1)'"


def test_summary_tables_from_records():
    base = {"query": "count", "source": "files", "per_table": 500000, "events_read": 500000, "round": "r1",
            "exit": 0, "cpu_s": 10.0, "peak_rss_mb": 900}
    records = [dict(base, engine="flink", cache="cold", wall_s=10.0, events_per_s=50000, load_before=[1.0]),
               dict(base, engine="job", cache="cold", wall_s=5.0, events_per_s=100000, load_before=[1.5]),
               dict(base, engine="job", cache="warm", wall_s=5.0, events_per_s=100000, load_before=[1.5], exit=1,
                    round="r0")]
    rows = summary.throughput_table(records)
    assert len(rows) == 3 and "| 2.00 |" in rows[2] and "1.0–1.5" in rows[2]
    nex = summary.nexmark_table([{"query": "q5", "events": 10, "when": "2026-01-01T00:00:00Z",
                                  "flink": {"ok": True, "timed": {"events_per_s": 7, "load_before": [0.5]}},
                                  "job": {"runs": False, "refused": "OVER | not yet"}}])
    assert "refused: OVER \\| not yet" in nex[2] and "| 7 |" in nex[2]


def test_throughput_cells_by_keys_and_sink_show_medians_spread_and_sink_checks():
    base = {"query": "join", "source": "files", "per_table": 20000, "events_read": 60000, "round": "r2",
            "exit": 0, "cpu_s": 10.0, "peak_rss_mb": 900, "cache": "warm", "load_before": [9.0]}
    runs = []
    for pair, (f, j) in enumerate([(10.0, 5.0), (12.0, 6.0), (11.0, 8.0)]):
        runs += [dict(base, engine="flink", pair=pair, wall_s=f, events_per_s=60000 / f),
                 dict(base, engine="job", pair=pair, wall_s=j, events_per_s=60000 / j)]
    blackhole = [dict(r, keys=1_000_000, sink="blackhole") for r in runs]
    kafka = [dict(r, keys=1_000_000, sink="upsert-kafka", sink_records=900 if r["engine"] == "job" else 4000,
                  sink_same_as_reference=True, sink_same_as_other=r["engine"] == "job" or None) for r in runs]
    kafka[-1]["sink_same_as_reference"] = False
    older = [dict(r, round="r1") for r in runs[:2]]  # no keys, no sink: the benchmark's 100k keys, a blackhole
    rows = summary.throughput_table(blackhole + kafka + older)
    assert len(rows) == 5
    cells = {tuple(c.strip() for c in row.split("|")[4:6]): row for row in rows[2:]}
    assert set(cells) == {("1,000,000", "blackhole"), ("1,000,000", "upsert-kafka"), ("100,000", "blackhole")}
    row = cells[("1,000,000", "blackhole")]
    assert "| 3 |" in row and "| 11.0 (10.0–12.0) |" in row and "| 6.0 (5.0–8.0) |" in row and "| 1.83 |" in row
    assert "1 (fewer than 3)" in cells[("100,000", "blackhole")]
    assert "| 4,000/900 |" in cells[("1,000,000", "upsert-kafka")]
    assert "**5/6 = ref, 3/3 = other engine**" in cells[("1,000,000", "upsert-kafka")]


def test_a_runs_sink_topic_is_checked_against_the_reference_and_the_other_engine(monkeypatch):
    topics = {"f": [(0, 0, 0, "a1", '{"n": 1}'), (0, 1, 0, "a1", '{"n": 2}'), (1, 0, 0, "a2", '{"n": 1}')],
              "j": [(0, 0, 0, "a1", '{"n": 2}'), (1, 0, 0, "a2", '{"n": 1}'), (1, 1, 0, "a3", '{"n": 5}'),
                    (1, 2, 0, "a3", None)],
              "bad": [(0, 0, 0, "a1", '{"n": 3}')]}
    monkeypatch.setattr(throughput.kafka_tool, "dump", lambda bootstrap, topic: iter(topics[topic]))
    expected = [{"n": 2, "__key": "a1"}, {"n": 1, "__key": "a2"}]
    tables: dict = {}
    first = throughput.sink_verdicts("b", "f", expected, tables, "flink")
    assert first["sink_records"] == 3 and first["sink_same_as_reference"] and first["sink_same_as_other"] is None
    second = throughput.sink_verdicts("b", "j", expected, tables, "job")
    assert second["sink_records"] == 4 and second["sink_same_as_reference"] and second["sink_same_as_other"] is True
    bad = throughput.sink_verdicts("b", "bad", expected, tables, "job")
    assert bad["sink_same_as_reference"] is False and bad["sink_same_as_other"] is False


def test_latency_rows_per_window_compare_like_with_like():
    run = {"query": "count", "rate": 1000, "latency_p50_ms": 800, "latency_p99_ms": 1400, "latency_max_ms": 1500,
           "kept_up": True, "drain_s": 1.0, "measured": 50000, "engine_run": {"load_before": [1.0]}}
    rows = summary.earlier_latency_table([dict(run, engine="job", warmup_s=40, cpu_ms_per_event=1.4),
                                  dict(run, engine="flink", cpu_ms_per_event=0.2),
                                  dict(run, engine="job", cpu_ms_per_event=0.5),
                                  dict(run, engine="flink", warmup_s=150, cpu_ms_per_event=0.16),
                                  dict(run, engine="job", warmup_s=150, cpu_ms_per_event=0.32)])
    # The standard window (a record without warmup_s is one) shows its newest run; a settled
    # window is a row of its own, and each job row is set against Flink's of the same window.
    assert [r.split("|")[3:5] for r in rows[2:]] == [[" 30 ", " flink "], [" 30 ", " job "],
                                                     [" 150 ", " flink "], [" 150 ", " job "]]
    assert "| 0.5 | 2.50 |" in rows[3] and "| 0.32 | 2.00 |" in rows[5]


def test_latency_rows_show_the_newest_rounds_medians_and_spread():
    run = {"query": "count", "rate": 1000, "warmup_s": 30, "kept_up": True, "measured": 50000, "unanswered": 0,
           "engine_run": {"load_before": [2.0]}}
    old = [dict(run, engine="job", mode="micro-batch", round="r1", latency_p50_ms=800, latency_p99_ms=1400,
                cpu_ms_per_event=1.0)]
    new = [dict(run, engine=e, round="r2", latency_p50_ms=p50, latency_p99_ms=p50 * 2, cpu_ms_per_event=cpu,
                **({"mode": "real-time"} if e == "job" else {}))
           for e, p50, cpu in [("flink", 100, 0.2), ("job", 30, 0.3), ("flink", 90, 0.2), ("job", 40, 0.1),
                               ("flink", 120, 0.4), ("job", 35, 0.2)]]
    rows = summary.latency_table(old + new)
    assert len(rows) == 4  # the newest round only: Flink's row, then the job's
    assert "| flink | 3 | 100 (90–120) | 200 (180–240) | 3/3 |" in rows[2], rows[2]
    assert "| job (real-time) | 3 | 35 (30–40) | 70 (60–80) | 3/3 |" in rows[3], rows[3]
    assert "| 0.200 (0.100–0.300) | 1.00 |" in rows[3], rows[3]


def test_root_cause_of_a_spark_failure():
    text = ("StreamingQueryException: [STREAM_FAILED] Query terminated with exception: [FOREACH_BATCH_USER_FUNCTION_ERROR]"
            " Reason: An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):\n"
            '  File "x.py", line 1, in f\n'
            "pyspark.errors.exceptions.captured.AnalysisException: More than one event time columns are available.\n"
            "=== Streaming Query ===\n")
    assert root_cause(text).startswith("pyspark.errors.exceptions.captured.AnalysisException: More than one")
    assert root_cause("nothing to see") == ""
