"""Write the driver JVM's class-data-sharing archive (job/run/driver_jvm.py).

    .venv/bin/python scripts/build_jvm_archive.py [--force]

Runs a small training pipeline through ./spark-submit.sh with
``-XX:ArchiveClassesAtExit``: the JVM writes every class the run loaded into the archive
as it exits. The pipeline is a generic mix, not the benchmarks' SQL (an archive trained
on one workload's code would favour it): over generated shop data (orders and customers
as Debezium changelogs, page views as appended JSON with event time), a grouped
aggregate, a regular join, a tumbling event-time window, a Top-N per key, a
deduplication and a filtered copy of generated rows into JSON files.
Nothing is contacted (no broker, no database), so setup.sh can run it on a
fresh machine. An existing archive for this JDK and PySpark is kept unless --force.

The archive only speeds the JVM up; when it cannot be written this says why and exits 0,
and the job runs as before.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from job.run.driver_jvm import archive_path, extract_rocksdb  # noqa: E402

TRAINING = """
CREATE TABLE orders (order_id BIGINT, customer_id INT, amount DECIMAL(10, 2), status STRING,
  PRIMARY KEY (order_id) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '{data}/orders', 'format' = 'debezium-json');
CREATE TABLE customers (customer_id INT, region STRING, tier INT, PRIMARY KEY (customer_id) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '{data}/customers', 'format' = 'debezium-json');
CREATE TABLE views (page STRING, visitor BIGINT, ms INT, viewed_at TIMESTAMP(3),
  WATERMARK FOR viewed_at AS viewed_at - INTERVAL '5' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{data}/views', 'format' = 'json');
CREATE TABLE readings (sensor INT, reading DOUBLE, taken TIMESTAMP(3))
  WITH ('connector' = 'datagen', 'number-of-rows' = '1000', 'fields.sensor.min' = '1', 'fields.sensor.max' = '50');
CREATE TABLE by_status (status STRING, n BIGINT, total DECIMAL(38, 2), biggest DECIMAL(10, 2),
  PRIMARY KEY (status) NOT ENFORCED) WITH ('connector' = 'blackhole');
CREATE TABLE by_region (order_id BIGINT, region STRING, tier INT, amount DECIMAL(10, 2),
  PRIMARY KEY (order_id) NOT ENFORCED) WITH ('connector' = 'blackhole');
CREATE TABLE per_minute (window_start TIMESTAMP(3), page STRING, views BIGINT, visitors BIGINT, avg_ms DOUBLE)
  WITH ('connector' = 'blackhole');
CREATE TABLE top_orders (customer_id INT, order_id BIGINT, amount DECIMAL(10, 2), rn BIGINT,
  PRIMARY KEY (customer_id, rn) NOT ENFORCED) WITH ('connector' = 'blackhole');
CREATE TABLE first_views (page STRING, visitor BIGINT, viewed_at TIMESTAMP(3)) WITH ('connector' = 'blackhole');
CREATE TABLE reading_files (sensor INT, reading DOUBLE, taken TIMESTAMP(3))
  WITH ('connector' = 'filesystem', 'path' = '{work}/readings', 'format' = 'json');
INSERT INTO by_status SELECT status, COUNT(*), SUM(amount), MAX(amount) FROM orders GROUP BY status;
INSERT INTO by_region SELECT o.order_id, c.region, c.tier, o.amount
  FROM orders o LEFT JOIN customers c ON o.customer_id = c.customer_id;
INSERT INTO per_minute SELECT window_start, page, COUNT(*), COUNT(DISTINCT visitor), AVG(CAST(ms AS DOUBLE))
  FROM TABLE(TUMBLE(TABLE views, DESCRIPTOR(viewed_at), INTERVAL '1' MINUTE))
  GROUP BY window_start, window_end, page;
INSERT INTO top_orders SELECT customer_id, order_id, amount, rn FROM (
  SELECT customer_id, order_id, amount,
    ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS rn FROM orders) WHERE rn <= 3;
INSERT INTO first_views SELECT page, visitor, viewed_at FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY page, visitor ORDER BY viewed_at) AS rn FROM views) WHERE rn = 1;
INSERT INTO reading_files SELECT sensor, reading, taken FROM readings WHERE reading > 0;
"""

STATUSES = ("placed", "paid", "shipped", "returned")
REGIONS = ("north", "south", "east", "west")
PAGES = ("/", "/search", "/item", "/cart", "/checkout", "/help")


def write_training_data(data: Path, files: int = 3, orders: int = 3000, customers: int = 300,
                        views: int = 3000, seed: int = 7) -> None:
    """The training pipeline's input: Debezium changelogs of orders (created, updated,
    deleted) and customers, and page views in event-time order, each in a few files."""
    rng = random.Random(seed)

    def write(table: str, events: list) -> None:
        (data / table).mkdir(parents=True, exist_ok=True)
        per = -(-len(events) // files)
        for i in range(files):
            with open(data / table / f"part-{i:03d}.json", "w") as f:
                f.writelines(json.dumps(e) + "\n" for e in events[i * per:(i + 1) * per])

    rows: dict[int, dict] = {}
    changes = []
    for _ in range(customers * 2):
        cid = rng.randrange(customers)
        new = {"customer_id": cid, "region": rng.choice(REGIONS), "tier": rng.randrange(3)}
        changes.append({"before": rows.get(cid), "after": new, "op": "u" if cid in rows else "c"})
        rows[cid] = new
    write("customers", changes)
    live: dict[int, dict] = {}
    changes = []
    for _ in range(orders):
        oid = rng.randrange(orders // 2)
        old = live.get(oid)
        if old is not None and rng.random() < 0.15:
            changes.append({"before": live.pop(oid), "after": None, "op": "d"})
            continue
        new = {"order_id": oid, "customer_id": rng.randrange(customers),
               "amount": round(rng.uniform(1, 500), 2), "status": rng.choice(STATUSES)}
        changes.append({"before": old, "after": new, "op": "u" if old else "c"})
        live[oid] = new
    write("orders", changes)
    start = 1_700_000_000_000
    write("views", [{"page": rng.choice(PAGES), "visitor": rng.randrange(views // 10), "ms": rng.randrange(2000),
                     "viewed_at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime((start + i * 400) / 1000))
                     + f".{(start + i * 400) % 1000:03d}"} for i in range(views)])


def build(target: Path, timeout: float) -> str:
    """Run the training pipeline and move its archive to ``target``; '' or why not."""
    with tempfile.TemporaryDirectory(prefix="streamsql-jvm-archive-") as work:
        data = Path(work) / "data"
        write_training_data(data)
        sql = Path(work) / "training.sql"
        sql.write_text(TRAINING.format(data=data, work=work))
        dumped = Path(work) / "archive.jsa"
        cmd = [str(ROOT / "spark-submit.sh"), "--driver-java-options", f"-XX:ArchiveClassesAtExit={dumped}",
               "--", str(sql), "--once", "--checkpoint-dir", str(Path(work) / "checkpoints")]
        try:
            # spark-submit returns when the JVM has exited, which is when the archive is written.
            run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                                 env={**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")})
        except subprocess.TimeoutExpired:
            return f"the training run did not finish within {timeout:.0f} s"
        if run.returncode != 0 or not dumped.is_file():
            tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-5:])
            return f"the training run exited with {run.returncode} and wrote no archive:\n{tail}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(dumped, target)  # /tmp and build/ may be different filesystems
        return ""


def replaced_archives(target: Path) -> list[Path]:
    """The archives ``target`` replaces: those of an earlier JDK or install of the same
    PySpark version, and ``target`` itself. Another version's archive stays: a second
    virtualenv (``setup.sh --spark 4.2.0``) uses it."""
    version = target.name.rsplit("-", 1)[0]  # spark-<PySpark version>
    return sorted(target.parent.glob(f"{version}-*.jsa"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--force", action="store_true", help="write it again even if it exists")
    p.add_argument("--timeout", type=float, default=900)  # a loaded machine took 5 min
    a = p.parse_args()
    # RocksDB's library, loaded in place from then on (job/run/driver_jvm.py); before the
    # training run, so that the archive is written by a JVM started as every later one is.
    library = extract_rocksdb()
    if library is not None:
        print(f"build_jvm_archive: RocksDB's library in {library.relative_to(ROOT)}")
    target = archive_path()
    if target is None:
        print("build_jvm_archive: no java or no PySpark found; skipped")
        return 0
    if target.is_file() and not a.force:
        print(f"build_jvm_archive: {target.relative_to(ROOT)} is up to date")
        return 0
    # spark-submit.sh must not start the training run from the archive it replaces.
    for old in replaced_archives(target):
        old.unlink()
    started = time.time()
    why = build(target, a.timeout)
    if why:
        print(f"build_jvm_archive: no archive, the job starts without it: {why}")
        return 0
    size = target.stat().st_size / 1e6
    print(f"build_jvm_archive: {target.relative_to(ROOT)} ({size:.0f} MB) in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
