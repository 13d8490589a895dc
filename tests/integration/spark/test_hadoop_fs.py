"""Checkpoint directories through Hadoop's FileSystem API (sparkcat/spark/driver/hadoop_fs.py) with a real Spark session.

A streaming query writes its checkpoint under a ``file:`` URI, a plain absolute path and a path
relative to the working directory; sparkcat finds and deletes each the way Spark wrote it.
"""

from __future__ import annotations

import os

from sparkcat.runtime.execution.plan_builder import checkpoint_dir
from sparkcat.config.worker import WorkerConfig
from sparkcat.policy import paths
from sparkcat.spark.driver import hadoop_fs


def run_once(spark, checkpoint: str, name: str) -> None:
    """One batch of a tiny streaming query whose checkpoint is ``checkpoint``."""
    query = (spark.readStream.format("rate").option("rowsPerSecond", 1).load()
             .writeStream.format("noop").queryName(name).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(120)


def test_checkpoints_under_file_uris_absolute_and_relative_paths_are_found_and_deleted(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    roots = {"uri": (tmp_path / "uri-root").as_uri(), "absolute": str(tmp_path / "abs-root"), "relative": "rel-root"}
    for kind, root in roots.items():
        worker = WorkerConfig(state_dir=str(tmp_path / "state"), checkpoint_dir=root)
        ck = checkpoint_dir(worker, f"orders/{kind}")  # a name with a slash stays one directory
        run_once(spark, ck, f"hadoop_fs_{kind}")
        assert hadoop_fs.exists(spark, ck + "/commits/0"), f"{kind}: Spark committed batch 0 under {ck}"
        assert hadoop_fs.list_names(spark, worker.checkpoint_root) == [f"orders%2F{kind}"]
        assert hadoop_fs.delete(spark, ck) is True
        assert not hadoop_fs.exists(spark, ck) and hadoop_fs.list_names(spark, worker.checkpoint_root) == []
        assert hadoop_fs.delete(spark, ck) is False, "deleting what is gone is not an error"
    # the relative root was made absolute against the driver's working directory
    assert os.path.isdir(tmp_path / "rel-root") and not os.listdir(tmp_path / "rel-root")


def test_default_checkpoint_root_is_state_dir_checkpoints_and_mkdirs_creates_parents(spark, tmp_path):
    worker = WorkerConfig(state_dir=str(tmp_path / "state"))
    assert worker.checkpoint_root == str(tmp_path / "state" / "checkpoints")
    deep = paths.child_path(worker.checkpoint_root, "a") + "/b/c"
    hadoop_fs.mkdirs(spark, deep)
    assert (tmp_path / "state" / "checkpoints" / "a" / "b" / "c").is_dir()
    assert hadoop_fs.delete(spark, paths.child_path(worker.checkpoint_root, "a"))
    assert not (tmp_path / "state" / "checkpoints" / "a").exists()
