"""job.run.session.check_numpy_without_pandas: PySpark's numpy checks answer without
importing pandas, and everything else of pyspark.testing.utils is still PySpark's own."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> list[str]:
    prelude = "import sys\nfrom job.run.session import check_numpy_without_pandas\ncheck_numpy_without_pandas()\n"
    out = subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_numpy_check_imports_no_pandas_until_numpy_is_imported():
    assert run("from pyspark.testing.utils import have_numpy\n"
               "print(have_numpy, 'pandas' in sys.modules, 'numpy' in sys.modules)\n"
               "import numpy\n"
               "from pyspark.testing.utils import have_numpy\n"
               "print(have_numpy, 'pandas' in sys.modules)\n") == ["False", "False", "False", "True", "False"]


def test_any_other_name_is_pyspark_s_own_module():
    assert run("from pyspark.testing.utils import have_pandas\n"
               "import pyspark.testing.utils as utils\n"
               "print(have_pandas, 'pandas' in sys.modules, type(sys.modules['pyspark.testing.utils']).__name__)\n"
               "from pyspark.testing import assertDataFrameEqual\n"
               "import pyspark.testing\n"
               "print(pyspark.testing.utils is sys.modules['pyspark.testing.utils'], utils.have_numpy)\n"
               ) == ["True", "True", "module", "True", "True"]


def test_the_package_imported_first_loads_pyspark_s_module():
    assert run("from pyspark.testing import assertDataFrameEqual\n"
               "import pyspark.testing.utils\n"
               "print(type(pyspark.testing.utils).__name__, pyspark.testing.utils.have_pandas)\n") == ["module", "True"]


def test_the_module_imported_by_its_dotted_name():
    """``import pyspark.testing.utils [as u]`` first: the package is not imported yet, and
    the name still reaches the stand-in, then PySpark's module."""
    assert run("import pyspark.testing.utils as u\n"
               "print(u.have_numpy, 'pandas' in sys.modules, u.have_pandas)\n") == ["False", "False", "True"]
    assert run("import pyspark.testing.utils\n"
               "import pyspark\n"
               "print(pyspark.testing.utils.have_pyarrow, type(pyspark.testing).__name__)\n"
               "import pyspark.testing\n"
               "print(pyspark.testing.utils is sys.modules['pyspark.testing.utils'])\n") == ["True", "module", "True"]


def test_a_literal_of_a_numpy_value_keeps_its_type(spark):
    """In the test session (where the stand-in is in place unless PySpark's module was
    loaded first): lit() of a numpy value once numpy is imported, and of a plain value."""
    import numpy
    from pyspark.sql import functions as F

    row = spark.range(1).select(F.lit(numpy.int16(7)).alias("n"), F.lit("x").alias("s")).first()
    assert (row.n, row.s) == (7, "x")
    assert dict(spark.range(1).select(F.lit(numpy.int16(7)).alias("n")).dtypes)["n"] == "smallint"
