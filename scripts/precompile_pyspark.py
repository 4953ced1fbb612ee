"""Add bytecode to PySpark's pyspark.zip, so Python workers stop compiling PySpark.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on every Python worker's path,
including the driver-side process each stateful Python operator starts while a query is
planned. Python never writes bytecode for modules imported from a zip, so every such
process compiles PySpark's modules from source: about 0.8 s per process on a 2-core
machine (measured: 1.3-1.5 s to import the worker modules from the zip, 0.55-0.65 s from
site-packages), paid at every query start and by every new worker.

This script adds an *unchecked-hash* ``.pyc`` next to each ``.py`` in the zip (zipimport
prefers it, and does not compare it with a timestamp, so time zones do not matter). A
Python whose bytecode version differs ignores these files and compiles as before; a new
PySpark install replaces the zip, and running this again adds them anew.

    .venv/bin/python scripts/precompile_pyspark.py [ZIP ...]   # default: pyspark's own zips
"""
from __future__ import annotations

import copy
import importlib.util
import os
import sys
import tempfile
import zipfile
from pathlib import Path


def default_zips() -> list[Path]:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SystemExit("precompile_pyspark: pyspark is not installed in this Python")
    homes = {Path(spec.origin).parent}
    if os.environ.get("SPARK_HOME"):
        homes.add(Path(os.environ["SPARK_HOME"]))
    return sorted(z for home in homes for z in (home / "python" / "lib").glob("*.zip"))


def bytecode(source: bytes, name: str) -> bytes:
    from importlib._bootstrap_external import _code_to_hash_pyc  # what py_compile uses

    code = compile(source, name, "exec", dont_inherit=True)
    return bytes(_code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False))


def precompile(path: Path) -> int:
    """Rewrites ``path`` with a .pyc per .py; returns how many were added (0: up to date)."""
    with zipfile.ZipFile(path) as zin:
        names = set(zin.namelist())
        compiled = {}
        for name in sorted(n for n in names if n.endswith(".py") and n + "c" not in names):
            try:
                compiled[name] = bytecode(zin.read(name), name)
            except SyntaxError:  # not for this Python: zipimport compiles it as before
                pass
        if not compiled:
            return 0
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
        os.close(fd)
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
                for info in zin.infolist():  # a copy: writestr() moves the info's offset
                    zout.writestr(copy.copy(info), zin.read(info))
                for name, code in compiled.items():
                    pyc = zipfile.ZipInfo(name + "c", date_time=zin.getinfo(name).date_time)
                    pyc.compress_type = zipfile.ZIP_DEFLATED
                    zout.writestr(pyc, code)
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
            os.replace(tmp, path)  # atomic: a worker starting now reads the old or the new zip
        except BaseException:
            os.unlink(tmp)
            raise
    return len(compiled)


def main(argv: list[str]) -> None:
    for path in [Path(a) for a in argv] or default_zips():
        try:
            added = precompile(path)
        except Exception as exc:  # an optimisation: never fail setup over it
            print(f"precompile_pyspark: left {path} as it is ({exc})", file=sys.stderr)
            continue
        print(f"precompile_pyspark: {path}: " + (f"added bytecode for {added} modules" if added else "up to date"))


if __name__ == "__main__":
    main(sys.argv[1:])
