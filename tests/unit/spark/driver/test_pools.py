"""level_stage_ids without sparkcat's JVM helper (the driver starts, and says what it could not do), and in FIFO mode."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from sparkcat.spark.driver.pools import level_stage_ids


class _MissingHelper:
    """A py4j JVM view on which sparkcat-jvm.jar's class is absent (py4j raises when it is called)."""

    def __getattr__(self, name: str):
        return self

    def __call__(self, *args):
        raise TypeError("'JavaPackage' object is not callable")


def _context(mode: str) -> SimpleNamespace:
    return SimpleNamespace(_jvm=_MissingHelper(), _jsc=SimpleNamespace(sc=lambda: None),
                           getConf=lambda: {"spark.scheduler.mode": mode})


def test_without_the_helper_stage_ids_are_left_alone_with_a_warning(caplog):
    context = _context("FAIR")
    with caplog.at_level(logging.WARNING, logger="sparkcat.spark.driver.pools"):
        assert level_stage_ids(SimpleNamespace(sparkContext=context)) is False
    assert "'JavaPackage' object is not callable" in caplog.text
    assert "starve" in caplog.text


def test_a_fifo_session_is_left_alone_without_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="sparkcat.spark.driver.pools"):
        assert level_stage_ids(SimpleNamespace(sparkContext=_context("FIFO"))) is False
    assert caplog.text == ""


def test_the_allocation_file_is_a_file_uri_so_a_cluster_whose_default_file_system_is_hdfs_reads_it_locally(tmp_path):
    """Spark opens the allocation file through Hadoop's FileSystem: a bare path would be read from fs.defaultFS
    (HDFS on a YARN gateway: "File does not exist: <state dir>/spark/fairscheduler.xml", issue 44)."""
    from urllib.parse import urlparse

    from sparkcat.spark.driver.pools import scheduler_conf

    conf = scheduler_conf(tmp_path / "spark")
    uri = urlparse(conf["spark.scheduler.allocation.file"])
    assert uri.scheme == "file"
    assert "sparkcat-connectors" in (tmp_path / "spark" / "fairscheduler.xml").read_text()
    assert uri.path == str((tmp_path / "spark" / "fairscheduler.xml").resolve())
