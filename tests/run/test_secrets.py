"""The masker and the masking streams (no Spark)."""
from __future__ import annotations

import io
import sys

from job.pipeline.load import load_statements
from job.plan.program import build_program
from job.run.secrets import MASK, Masker, MaskingStream, collect_secrets, masked_output, parts_of


def test_masks_every_occurrence_longest_first():
    m = Masker(["s3cr3t", "s3cr3t-and-more"])
    assert m.mask("a s3cr3t-and-more b s3cr3t c") == f"a {MASK} b {MASK} c"


def test_masks_escaped_forms():
    secret = 'pa"ss\\word'
    m = Masker([secret])
    assert secret not in m.mask(f"x {secret} y")
    assert 'pa\\"ss\\\\word' not in m.mask('json: "pa\\"ss\\\\word"')


def test_short_and_empty_values_are_not_masked():
    m = Masker(["", "ab"])
    assert not m
    assert m.mask("ab cd") == "ab cd"


def test_secret_pieces_of_a_jaas_config():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="hunter22";'
    assert parts_of(jaas) == {"hunter22"}
    m = Masker([jaas])
    assert m.mask("Login failed for password hunter22") == f"Login failed for password {MASK}"
    assert parts_of("jdbc:postgresql://db/x?user=a&password=topsecret1") == {"topsecret1"}


def test_the_password_of_a_urls_user_info():
    """A schema registry's URL may carry its credentials: the password is a secret piece
    of any option's value, and a path with ':' and '@' is none."""
    assert parts_of("https://reader:s3cr3t@registry:8081/x") == {"s3cr3t"}
    assert parts_of("http://registry:8081/a:b@c") == set()


def test_stream_masks_lines_split_across_writes():
    target = io.StringIO()
    stream = MaskingStream(target, Masker(["hunter22"]))
    stream.write("password hun")
    assert target.getvalue() == ""          # held until the line is complete
    stream.write("ter22 ok\nnext ")
    assert target.getvalue() == f"password {MASK} ok\n"
    stream.flush()
    assert target.getvalue() == f"password {MASK} ok\nnext "


def test_masked_output_swaps_and_restores_sys_streams():
    saved_out, saved_err = sys.stdout, sys.stderr
    m = Masker(["hunter22"])
    with masked_output(m):
        assert isinstance(sys.stdout, MaskingStream) and isinstance(sys.stderr, MaskingStream)
        m.add(["later-secret"])  # secrets learnt during the run apply at once
        assert sys.stdout.masker.mask("later-secret") == MASK
    assert sys.stdout is saved_out and sys.stderr is saved_err


def test_collect_secrets_from_env_and_secret_looking_options(tmp_path):
    sql = """
    CREATE TABLE t (a STRING) WITH ('connector' = 'kafka', 'topic' = 't', 'format' = 'json',
      'properties.bootstrap.servers' = 'h:1',
      'properties.sasl.jaas.config' = 'PlainLoginModule required username="u" password="literal-pw";',
      'properties.ssl.truststore.password' = '{{ env("TS_PASSWORD") }}');
    CREATE TABLE o (a STRING) WITH ('connector' = 'print');
    INSERT INTO o SELECT a FROM t;
    """
    loaded = load_statements(args=[sql], environ={"TS_PASSWORD": "from-env-pw"})
    found = collect_secrets(build_program(loaded))
    assert {"from-env-pw", "literal-pw"} <= found
    assert any(v.startswith("PlainLoginModule") for v in found)
    assert "h:1" not in found and "t" not in found


def test_a_preview_cut_inside_a_secret_hides_its_beginning():
    m = Masker(["hunter2-very-long"])
    assert m.mask("where pw = 'hunter2-ve…") == "where pw = '****…"
    assert m.mask("nothing secret…") == "nothing secret…"


def test_fd_filter_masks_and_thins_what_child_processes_write():
    """What a process started under the filter (as the JVM is) writes to fd 1/2 is masked,
    noise lines are dropped, and everything written before stop() comes out."""
    import subprocess
    import textwrap

    script = textwrap.dedent("""
        import subprocess, sys
        from job.run.secrets import Masker, filtered_fds
        with filtered_fds(Masker(["hunter22"]), drop=("NOISE",)):
            subprocess.run(["sh", "-c", "echo child hunter22; echo NOISE line >&2; echo; echo child err >&2"])
            print("parent hunter22", flush=True)
            print("last line", file=sys.stderr, flush=True)
        print("after", flush=True)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"child {MASK}\n\nparent {MASK}\nafter\n"
    assert proc.stderr == "child err\nlast line\n"
