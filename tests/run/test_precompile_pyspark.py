"""scripts/precompile_pyspark.py: bytecode added to a zip is what zipimport then loads."""
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import precompile_pyspark  # noqa: E402


def make_zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pkg/__init__.py", "")
        z.writestr("pkg/mod.py", "VALUE = sum(range(10))\n")
        z.writestr("pkg/future.py", "match = (\n")  # does not compile here: left as source
        z.writestr("pkg/data.txt", "not python")


def loaded_from(zip_path: Path) -> str:
    code = "import pkg.mod; print(pkg.mod.VALUE, pkg.mod.__file__)"
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(zip_path)},
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_adds_bytecode_that_zipimport_uses(tmp_path):
    zip_path = tmp_path / "lib.zip"
    make_zip(zip_path)
    assert loaded_from(zip_path) == f"45 {zip_path}/pkg/mod.py"

    assert precompile_pyspark.precompile(zip_path) == 2  # __init__ and mod; future.py skipped

    with zipfile.ZipFile(zip_path) as z:
        names = set(z.namelist())
        assert z.read("pkg/data.txt") == b"not python"  # every original entry kept
    assert {"pkg/__init__.pyc", "pkg/mod.pyc"} <= names and "pkg/future.pyc" not in names
    assert loaded_from(zip_path) == f"45 {zip_path}/pkg/mod.pyc"


def test_second_run_changes_nothing(tmp_path):
    zip_path = tmp_path / "lib.zip"
    make_zip(zip_path)
    precompile_pyspark.precompile(zip_path)
    before = zip_path.read_bytes()
    assert precompile_pyspark.precompile(zip_path) == 0
    assert zip_path.read_bytes() == before


def test_a_broken_zip_is_left_alone_without_failing(tmp_path, capsys):
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"not a zip")
    precompile_pyspark.main([str(broken)])
    assert broken.read_bytes() == b"not a zip"
    assert "left" in capsys.readouterr().err
