"""Files and errors of the JVM that Spark runs, as connectors need them.

Files go through Hadoop's FileSystem, so that what a connector keeps beside a query's
checkpoint (a jdbc snapshot, a postgres-cdc slot marker, the lake's staging) lives wherever
the checkpoint does: local disk, HDFS, S3. Java exceptions reach Python wrapped by py4j;
:func:`java_chain` and :func:`java_causes` get at the throwables behind them.
"""
from __future__ import annotations

import json
from typing import Optional


def filesystem(spark, path: str):
    """(Hadoop FileSystem, Path) for ``path``."""
    p = spark._jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(spark._jsc.hadoopConfiguration()), p


def exists(spark, path: str) -> bool:
    fs, p = filesystem(spark, path)
    return bool(fs.exists(p))


def read_text(spark, path: str) -> str:
    fs, p = filesystem(spark, path)
    stream = fs.open(p)
    try:
        return spark._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def write_text(spark, path: str, text: str) -> None:
    """Create or overwrite ``path`` with ``text``."""
    fs, p = filesystem(spark, path)
    out = fs.create(p, True)
    try:
        out.write(bytearray(text.encode()))
    finally:
        out.close()


def numbered_dirs(spark, path: str) -> list[int]:
    """The numbers of ``path``'s children named by a number, in order ([] if none)."""
    fs, p = filesystem(spark, path)
    if not fs.exists(p):
        return []
    return sorted(int(s.getPath().getName()) for s in fs.listStatus(p) if s.getPath().getName().isdigit())


def rename(spark, src: str, dst: str) -> None:
    fs, s = filesystem(spark, src)
    d = spark._jvm.org.apache.hadoop.fs.Path(dst)
    fs.mkdirs(d.getParent())
    if not fs.rename(s, d):
        raise RuntimeError(f"could not rename {src} to {dst}")


def delete(spark, path: str) -> None:
    fs, p = filesystem(spark, path)
    fs.delete(p, True)


def qualified(spark, path: str) -> str:
    """``path`` as the catalog stores a location (``file:/tmp/x``, ``s3a://bucket/x``)."""
    fs, p = filesystem(spark, path)
    # 'file:/x' and 'file:///x' name one directory: compare paths in one spelling.
    return fs.makeQualified(p).toUri().normalize().toString().replace(":///", ":/", 1)


def checkpoint_query_id(spark, checkpoint: str) -> str:
    """The id Spark gave the streaming query of ``checkpoint`` (in its ``metadata``
    file): stable across restarts of one checkpoint, new for a fresh one."""
    return json.loads(read_text(spark, checkpoint.rstrip("/") + "/metadata").splitlines()[0])["id"]


def empty_directory() -> str:
    """A new empty local directory, removed at exit: what a --dry-run plans over instead
    of a source's real files, which it must not touch."""
    import atexit
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="streamsql-dry-run-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


# --------------------------------------------------------------------------- Java errors

def java_chain(exc) -> list:
    """The Java throwables behind a py4j/PySpark exception, outermost first, with each
    SQLException's ``getNextException()`` (where PostgreSQL puts a batch's real error)."""
    start = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    out, seen = [], set()
    todo = [start] if start is not None else []
    try:
        while todo and len(out) < 20:
            t = todo.pop(0)
            if t is None or t.hashCode() in seen:
                continue
            seen.add(t.hashCode())
            out.append(t)
            try:
                nxt = t.getNextException()
                if nxt is not None:
                    todo.append(nxt)
            except Exception:  # noqa: BLE001 - not an SQLException
                pass
            todo.append(t.getCause())
    except Exception:  # noqa: BLE001 - the JVM is gone: the Python text will do
        pass
    return out


def java_causes(exc: BaseException, limit: int = 12) -> list[str]:
    """'Type: message' for a py4j Java exception and its causes (at most ``limit``)."""
    throwable: Optional[object] = getattr(exc, "java_exception", None)
    out: list[str] = []
    try:
        while throwable is not None and len(out) < limit:
            message = throwable.getMessage()
            text = f"{throwable.getClass().getSimpleName()}: {message}" if message else throwable.getClass().getSimpleName()
            text = " ".join(str(text).split())
            if not out or text not in out[-1]:
                out.append(text)
            cause = throwable.getCause()
            throwable = None if cause is None or cause.equals(throwable) else cause
    except Exception:  # noqa: BLE001 - the JVM is gone; the Python text will do
        return out
    return out


def sink_id(spark, checkpoint: str) -> str:
    """What a sink that records its committed batches in the target (jdbc, iceberg) calls
    the query writing it: the checkpoint's path and the query id Spark stored in it, so a
    fresh checkpoint is a new query, which writes its batches (numbered from 0 again) anew."""
    import hashlib

    query_id = ""
    try:
        query_id = checkpoint_query_id(spark, checkpoint)
    except Exception:  # noqa: BLE001 - called outside a query (tests): the path alone
        pass
    return hashlib.sha1(f"{checkpoint}|{query_id}".encode()).hexdigest()[:32]
