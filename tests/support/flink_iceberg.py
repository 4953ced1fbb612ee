"""Run by PyFlink 2.3's interpreter (.services/flink-venv) with Iceberg's Flink runtime:
run the given statements (a pipeline writing an Iceberg table), then read each named
Iceberg table back and print its rows as one JSON object {table: [[col, ...], ...]}.

    HADOOP_CLASSPATH=<hadoop client jars> python flink_iceberg.py SPEC.json

SPEC: {"jars": [...], "statements": [...], "read": {"name": "CREATE TABLE ... WITH (...)"}}.
"""
import json
import sys

from pyflink.table import EnvironmentSettings, TableEnvironment


def main() -> None:
    spec = json.load(open(sys.argv[1]))
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("pipeline.jars", ";".join("file://" + j for j in spec["jars"]))
    config.set("parallelism.default", "1")
    # Iceberg's Flink sink commits on checkpoints; a bounded job commits at its end.
    config.set("execution.checkpointing.interval", "1 s")
    for sql in spec["statements"]:
        result = env.execute_sql(sql)
        if sql.lstrip().upper().startswith("INSERT"):
            result.wait()
    out = {}
    for name, ddl in spec["read"].items():
        env.execute_sql(ddl)
        with env.execute_sql(f"SELECT * FROM {name}").collect() as rows:
            out[name] = [[v for v in row] for row in rows]
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
