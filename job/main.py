"""spark-submit entry point: ``spark-submit job/main.py …`` (or the ``streamsql`` script).

Parses arguments, runs the pipeline, exits with its code. The only ``sys.exit`` in the
job lives here.
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file by spark-submit: make 'job' importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from job.errors import PipelineError  # noqa: E402


def main(argv=None) -> int:
    from job.cli import parse_args
    from job.api import run

    try:
        options = parse_args(sys.argv[1:] if argv is None else argv)
    except PipelineError as exc:  # a bad command line ends as a failed run does: one error line
        from job.run.failures import report_failure
        from job.run.jvm_output import jvm_stderr, under_spark_submit

        return report_failure(exc.exit_code, exc.render(), (under_spark_submit() and jvm_stderr()) or sys.stderr)
    code = run(options)
    ended(code)
    return code


def ended(code: int) -> None:
    """The result is known: the process now exits with it within a bound, whatever the
    JVM's native threads do (job.run.shutdown)."""
    from job.run.jvm_output import under_spark_submit
    from job.run.shutdown import end_own_jvm, report_result

    if under_spark_submit():
        report_result(code)
    else:
        end_own_jvm(code)


if __name__ == "__main__":
    sys.exit(main())
