"""benchmarks/kafka/KafkaTool.java from Python: compiled once (javac, against the broker's
kafka-clients in jars/kafka/), each call a short JVM. See the Java file for the modes."""
from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "benchmarks" / "kafka" / "KafkaTool.java"
CLASSPATH = str(ROOT / "jars" / "kafka" / "*")


def classes() -> Path:
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    out = ROOT / ".services" / "bench-classes" / digest
    if not (out / "KafkaTool.class").exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", CLASSPATH, str(SOURCE)], check=True)
    return out


def command(*args: str) -> list[str]:
    return ["java", "-Xmx512m", "-XX:+UseSerialGC", f"-Dlog4j2.configurationFile={ROOT / 'conf' / 'log4j2.properties'}",
            "-cp", f"{classes()}:{CLASSPATH}", "KafkaTool", *args]


def call(*args: str, stdin=None) -> dict:
    out = subprocess.run(command(*args), stdin=stdin, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"KafkaTool {args[0]} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def create_topic(bootstrap: str, topic: str, partitions: int, **configs: str) -> None:
    call("create", bootstrap, topic, str(partitions), *(f"{k.replace('_', '.')}={v}" for k, v in configs.items()))


def end_offsets(bootstrap: str, topic: str) -> int:
    try:
        return call("ends", bootstrap, topic)["records"]
    except RuntimeError:
        return -1


def load_debezium(bootstrap: str, topic: str, key_field: str, files: list[Path]) -> int:
    return call("load-debezium", bootstrap, topic, key_field, *map(str, files))["records"]


def dump(bootstrap: str, topic: str) -> Iterator[tuple[int, int, int, Optional[str], Optional[str]]]:
    """(partition, offset, timestamp ms, key, value) of every record now in the topic."""
    proc = subprocess.Popen(command("dump", bootstrap, topic), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        part, offset, ts, key, value = line.rstrip("\n").split("\t", 4)
        yield int(part), int(offset), int(ts), None if key == "\\N" else key, None if value == "\\N" else value
    if proc.wait():
        raise RuntimeError(f"KafkaTool dump failed: {proc.stderr.read()[-2000:] if proc.stderr else ''}")


def start_rate(bootstrap: str, prefix: str, tables: list[str], rate: int, seconds: float, keys: int,
               seed: int, log: Path, events: Optional[Path] = None) -> subprocess.Popen:
    """The fixed-rate producer, started (its JSON summary is the last line of its stdout);
    ``events`` gets a line per record it produced (benchmarks/latency_credit.py reads it)."""
    return subprocess.Popen(command("rate", bootstrap, prefix, ",".join(tables), str(rate), str(seconds), str(keys),
                                    str(seed), *([str(events)] if events else [])), stdout=subprocess.PIPE, stderr=open(log, "ab"), text=True)
