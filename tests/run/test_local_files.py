"""Local files through the engine's java.nio Hadoop file system (job.run.session)."""
from __future__ import annotations

import os
import stat

from job.run.session import LOCAL_FILE_SYSTEMS, use_engine_local_files


def _hadoop_path(spark, path):
    return spark._jvm.org.apache.hadoop.fs.Path(f"file://{path}")


def _local_fs(spark, conf):
    """A new instance: FileSystem.get's cache may hold one made before the job's session."""
    return spark._jvm.org.apache.hadoop.fs.FileSystem.newInstance(_hadoop_path(spark, "/").toUri(), conf)


def test_the_session_uses_the_engines_local_file_systems(spark):
    use_engine_local_files(spark)  # what build_session does (the tests' session is their own)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, (_hadoops, ours) in LOCAL_FILE_SYSTEMS.items():
        assert conf.get(key) == ours
    fs = _local_fs(spark, conf)
    assert fs.getRaw().getClass().getName() == "streamsql.engine.fs.NioRawLocalFileSystem"


def test_created_files_get_hadoops_permissions_without_chmod(spark, tmp_path):
    use_engine_local_files(spark)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    jvm = spark._jvm
    fs = _local_fs(spark, conf)
    target = tmp_path / "data.txt"
    stream = fs.create(_hadoop_path(spark, target), True)
    stream.write(bytearray(b"x"))
    stream.close()
    umask = jvm.org.apache.hadoop.fs.permission.FsPermission.getUMask(conf).toShort()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o666 & ~umask  # Hadoop's file default
    assert (tmp_path / ".data.txt.crc").exists()
    for mode in (0o640, 0o755, 0o600):
        fs.setPermission(_hadoop_path(spark, target), jvm.org.apache.hadoop.fs.permission.FsPermission(mode))
        assert stat.S_IMODE(os.stat(target).st_mode) == mode


def test_a_rename_through_file_context_sees_files_and_links(spark, tmp_path):
    use_engine_local_files(spark)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    jvm = spark._jvm
    context = jvm.org.apache.hadoop.fs.FileContext.getFileContext(_hadoop_path(spark, "/").toUri(), conf)
    assert context.getDefaultFileSystem().getClass().getName() == "streamsql.engine.fs.LocalFs"
    (tmp_path / "a").write_text("a")
    (tmp_path / "target").write_text("t")
    os.symlink(tmp_path / "target", tmp_path / "link")
    options = spark.sparkContext._gateway.new_array(jvm.org.apache.hadoop.fs.Options.Rename, 0)
    context.rename(_hadoop_path(spark, tmp_path / "a"), _hadoop_path(spark, tmp_path / "b"), options)
    assert (tmp_path / "b").read_text() == "a" and not (tmp_path / "a").exists()
    hadoops = jvm.org.apache.hadoop.fs.RawLocalFileSystem()
    hadoops.initialize(_hadoop_path(spark, "/").toUri(), conf)
    for name in ("b", "link", "target"):  # as Hadoop's own answers (which runs readlink)
        ours = context.getFileLinkStatus(_hadoop_path(spark, tmp_path / name))
        theirs = hadoops.getFileLinkStatus(_hadoop_path(spark, tmp_path / name))
        assert (ours.isSymlink(), ours.isFile(), ours.getLen()) == (theirs.isSymlink(), theirs.isFile(), theirs.getLen())


def test_a_users_own_file_system_is_kept(spark):
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    key = "fs.file.impl"
    before = conf.get(key)
    try:
        conf.set(key, "org.apache.hadoop.fs.RawLocalFileSystem")
        use_engine_local_files(spark)
        assert conf.get(key) == "org.apache.hadoop.fs.RawLocalFileSystem"
    finally:
        conf.set(key, before)
