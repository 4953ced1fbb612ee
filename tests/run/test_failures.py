"""A JVM failure nobody turned into a PipelineError still ends as one line that names what
went wrong: never the first line of a Python traceback py4j put inside it."""
from job.run.failures import unexpected_message

CRASH = """[STREAM_FAILED] Query [id = 6044c799, runId = 816df626] terminated with exception: \
[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach batch sink. \
Reason: An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/x/py4j/clientserver.py", line 644, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
  File "/x/pyspark/sql/utils.py", line 163, in call
py4j.protocol.Py4JJavaError: An error occurred while calling o812.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 37.0 failed 1 times, most \
recent failure: Lost task 0.0 in stage 37.0 (TID 41) (localhost executor driver): java.lang.AssertionError: \
assertion failed: Can only upgrade readStore to writeStore with the same stateStoreId
\tat scala.Predef$.assert(Predef.scala:279)
Caused by: java.lang.AssertionError: assertion failed: Can only upgrade readStore to writeStore with the same \
stateStoreId
"""


class StreamingQueryException(Exception):
    """As PySpark raises it: the Java exception, if any, is not ``java_exception``."""


def test_a_python_traceback_inside_a_failure_gives_its_innermost_exception():
    message = unexpected_message(StreamingQueryException(CRASH))
    assert "AssertionError: assertion failed: Can only upgrade readStore to writeStore" in message
    assert "py4j" not in message and "File " not in message and "Traceback" not in message
    assert "\\n" not in message and "\n" not in message


def test_a_plain_exception_is_its_type_and_first_line():
    assert unexpected_message(ValueError("bad value\\nmore")) == "ValueError: bad value\\nmore"
