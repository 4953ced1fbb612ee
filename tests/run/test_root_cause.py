"""A failed query's message names what went wrong, not the layers Spark wraps it in."""
from job.run.queries import root_cause

OPERATOR = """[STREAM_FAILED] Query [id = 1] terminated with exception: [FOREACH_BATCH_USER_FUNCTION_ERROR] An error
occurred in the user provided function in foreach batch sink. Reason: An exception was raised by the Python Proxy.
Return Message: Traceback (most recent call last):
  File "/x/pyspark/sql/utils.py", line 163, in call
pyspark.errors.exceptions.captured.SparkRuntimeException: [TRANSFORM_WITH_STATE_USER_FUNCTION_ERROR] An error occurred
in the user-defined function handleInputRows of the StatefulProcessor. Reason: group [a1] received more retractions than
rows: the input is not a consistent changelog. SQLSTATE: 39000
"""

PYTHON = """[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach batch sink.
Reason: An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/work/job/connectors/jdbc.py", line 400, in write_changes
    raise ValueError("duplicate key value violates unique constraint")
py4j.protocol.Py4JJavaError: An error occurred while calling o12.save.
ValueError: duplicate key value violates unique constraint
"""


def test_an_operators_reason_is_the_message():
    assert root_cause(OPERATOR) == ("the engine's operator stopped: group [a1] received more retractions than rows: "
                                    "the input is not a consistent changelog.")


def test_a_sinks_python_error_is_the_innermost_exception():
    assert root_cause(PYTHON) == "ValueError: duplicate key value violates unique constraint"


def test_a_plain_spark_message_is_left_alone():
    assert root_cause("[DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012") is None
