"""Checkpoint directories on any Hadoop file system (``file:``, ``hdfs:``, ``s3a:``, ...).

Spark writes a query's checkpoint through Hadoop's FileSystem API, so sparkcat creates, reads
and deletes checkpoints the same way, through the driver's JVM gateway and the session's Hadoop
configuration: a path Spark wrote to ``hdfs://`` or ``s3a://`` is deleted there, never by
``os``/``shutil`` on a local path that happens to share its name. Paths without a scheme mean
what they mean to Spark: the Hadoop configuration's ``fs.defaultFS``.
"""

from __future__ import annotations

import logging
from typing import Any

from sparkcat.errors import StorageError

__all__ = ["exists", "mkdirs", "delete", "list_names", "read_text"]

log = logging.getLogger(__name__)

def _fs(spark: Any, path: str) -> tuple[Any, Any]:
    """Hadoop's ``FileSystem`` for ``path`` and the ``Path`` itself, with the session's Hadoop configuration."""
    sc = spark.sparkContext
    jpath = sc._jvm.org.apache.hadoop.fs.Path(path)
    return jpath.getFileSystem(sc._jsc.hadoopConfiguration()), jpath


def exists(spark: Any, path: str) -> bool:
    """Whether ``path`` exists on its file system."""
    fs, jpath = _fs(spark, path)
    return bool(fs.exists(jpath))


def mkdirs(spark: Any, path: str) -> None:
    """Create the directory ``path`` and its parents (no error when it exists)."""
    fs, jpath = _fs(spark, path)
    fs.mkdirs(jpath)


def list_names(spark: Any, path: str) -> list[str]:
    """The names of the entries directly under directory ``path``, sorted; [] when it does not exist."""
    fs, jpath = _fs(spark, path)
    if not fs.exists(jpath):
        return []
    return sorted(str(status.getPath().getName()) for status in fs.listStatus(jpath))


def read_text(spark: Any, path: str) -> str | None:
    """The whole content of the file ``path`` as UTF-8 text; None when it does not exist (small files only)."""
    fs, jpath = _fs(spark, path)
    if not fs.exists(jpath):
        return None
    stream = fs.open(jpath)
    try:
        return str(spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def delete(spark: Any, path: str) -> bool:
    """Delete ``path`` and everything below it; True when something was deleted, False when it did not exist."""
    fs, jpath = _fs(spark, path)
    if not fs.exists(jpath):
        return False
    if not fs.delete(jpath, True):
        raise StorageError(f"Hadoop's {fs.getClass().getSimpleName()} did not delete {path}")
    log.info("Deleted checkpoint %s", path)
    return True
