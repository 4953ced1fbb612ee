"""Write the driver JVM's class-data-sharing archive (job/run/driver_jvm.py).

    .venv/bin/python scripts/build_jvm_archive.py [--force]

Runs a small training pipeline through ./spark-submit.sh — the two example changelog
queries over generated Debezium files, and generated rows into JSON files — with
``-XX:ArchiveClassesAtExit``: the JVM writes every class the run loaded into the archive
as it exits. Nothing is contacted (no broker, no database), so setup.sh can run it on a
fresh machine. An existing archive for this JDK and PySpark is kept unless --force.

The archive only speeds the JVM up; when it cannot be written this says why and exits 0,
and the job runs as before.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generate import write  # noqa: E402
from job.run.driver_jvm import archive_path, extract_rocksdb  # noqa: E402

TRAINING = """
CREATE TABLE users (uid STRING, accountId STRING, score INT, PRIMARY KEY (uid) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '{data}/users', 'format' = 'debezium-json');
CREATE TABLE colors (userUid STRING, favoriteColor STRING, PRIMARY KEY (userUid) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '{data}/colors', 'format' = 'debezium-json');
CREATE TABLE cheeses (userUid STRING, favoriteCheese STRING, PRIMARY KEY (userUid) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '{data}/cheeses', 'format' = 'debezium-json');
CREATE TABLE counts (accountId STRING, userCount BIGINT, PRIMARY KEY (accountId) NOT ENFORCED)
  WITH ('connector' = 'blackhole');
CREATE TABLE joined (accountId STRING, userUid STRING, favoriteColor STRING, favoriteCheese STRING,
  PRIMARY KEY (userUid) NOT ENFORCED) WITH ('connector' = 'blackhole');
CREATE TABLE orders (id BIGINT, amount DOUBLE, at TIMESTAMP(3))
  WITH ('connector' = 'datagen', 'number-of-rows' = '1000');
CREATE TABLE order_files (id BIGINT, amount DOUBLE, at TIMESTAMP(3))
  WITH ('connector' = 'filesystem', 'path' = '{work}/orders', 'format' = 'json');
INSERT INTO counts SELECT accountId, COUNT(*) FROM users GROUP BY accountId;
INSERT INTO joined SELECT u.accountId, u.uid, c.favoriteColor, ch.favoriteCheese
  FROM users u LEFT JOIN colors c ON u.uid = c.userUid LEFT JOIN cheeses ch ON u.uid = ch.userUid;
INSERT INTO order_files SELECT id, amount, at FROM orders WHERE amount > 0;
"""


def build(target: Path, timeout: float) -> str:
    """Run the training pipeline and move its archive to ``target``; '' or why not."""
    with tempfile.TemporaryDirectory(prefix="streamsql-jvm-archive-") as work:
        data = Path(work) / "data"
        write(data, 6000, 1000, 3, seed=1)
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
    p.add_argument("--timeout", type=float, default=300)
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
