"""Query checkpoints on a local file system go through sparkcat's checkpoint file manager, and still resume exactly
(sparkcat/spark/driver/session_tuning.py, jvm LocalCheckpointFileManager)."""

from __future__ import annotations

import pytest

from sparkcat.spark.driver.session_tuning import CHECKPOINT_MANAGER_SETTING, LOCAL_CHECKPOINT_MANAGER

pytestmark = pytest.mark.integration

SPARK_MANAGERS = "org.apache.spark.sql.execution.streaming.checkpointing."


def _manager(spark, path: str, **hadoop: str):
    """The checkpoint file manager Spark creates for ``path`` in this session (with extra Hadoop settings)."""
    jvm = spark.sparkContext._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    for key, value in hadoop.items():
        conf.set(key, value)
    return jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.create(
        jvm.org.apache.hadoop.fs.Path(path), conf)


def test_the_session_names_sparkcats_manager(spark):
    assert spark.conf.get(CHECKPOINT_MANAGER_SETTING) == LOCAL_CHECKPOINT_MANAGER


def test_a_local_checkpoint_is_renamed_through_hadoops_file_system(spark, tmp_path):
    for path in (str(tmp_path / "plain"), f"file:{tmp_path}/uri"):
        manager = _manager(spark, path)
        assert manager.getClass().getName() == LOCAL_CHECKPOINT_MANAGER
        assert manager.delegateClass() == SPARK_MANAGERS + "FileSystemBasedCheckpointFileManager"
        assert manager.localFileSystemClass() == "org.sparkcat.spark.NioLocalFileSystem"


def test_the_local_file_system_sets_permissions_itself(spark, tmp_path):
    """NioLocalFileSystem sets modes without a chmod process, and exactly: 0640 stays 0640."""
    jvm = spark.sparkContext._jvm
    fs = jvm.org.sparkcat.spark.NioLocalFileSystem()
    fs.initialize(jvm.java.net.URI("file:///"), spark._jsparkSession.sessionState().newHadoopConf())
    target = tmp_path / "f"
    target.write_text("x")
    hadoop = jvm.org.apache.hadoop.fs
    fs.setPermission(hadoop.Path(str(target)), hadoop.permission.FsPermission(0o640))
    assert target.stat().st_mode & 0o777 == 0o640


def test_another_file_system_keeps_sparks_default(spark, tmp_path):
    """A ``viewfs://`` mount (over a local directory, so no cluster is needed) is not the local file system:
    Spark's own choice, the ``FileContext`` manager, serves it, and works."""
    mount = {"fs.viewfs.mounttable.sparkcattest.link./data": f"file://{tmp_path}"}
    manager = _manager(spark, "viewfs://sparkcattest/data/ck", **mount)
    assert manager.delegateClass() == SPARK_MANAGERS + "FileContextBasedCheckpointFileManager"
    manager.mkdirs(spark.sparkContext._jvm.org.apache.hadoop.fs.Path("viewfs://sparkcattest/data/ck"))
    assert (tmp_path / "ck").is_dir()


def test_a_restarted_query_resumes_after_its_last_committed_batch(spark, tmp_path):
    """The checkpoint written through the manager is what a restart reads: the second run sees only new input."""
    source, checkpoint = tmp_path / "in", tmp_path / "ck"
    source.mkdir()
    seen: list[list[str]] = []

    def run() -> None:
        rows: list[str] = []
        query = (spark.readStream.text(str(source)).writeStream
                 .foreachBatch(lambda frame, _: rows.extend(r.value for r in frame.collect()))
                 .option("checkpointLocation", str(checkpoint)).start())
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        seen.append(sorted(rows))

    (source / "a.txt").write_text("a1\na2\n")
    run()
    (source / "b.txt").write_text("b1\n")
    run()
    assert seen == [["a1", "a2"], ["b1"]]
    assert sorted(p.name for p in (checkpoint / "commits").iterdir() if not p.name.startswith(".")) == ["0", "1"]
    leftovers = [p.name for p in checkpoint.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []  # every atomic write was renamed into place
    assert (checkpoint / "offsets" / ".1.crc").is_file()  # Hadoop's checksum files, as Spark's default writes them
