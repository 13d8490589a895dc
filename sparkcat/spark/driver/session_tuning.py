"""What sparkcat changes in a SparkSession right after it is built, so that many small batches stay cheap.

Both changes need sparkcat's JVM helpers (``jvm/sparkcat``); without them the session runs as Spark
made it and a warning says what that costs:

- stage ids start at ten digits, so the FAIR scheduler serves waiting batches oldest first
  (``pools.level_stage_ids``);
- query checkpoints on a local file system are written through Hadoop's ``FileSystem`` rather than its
  ``FileContext``, which without Hadoop's native library forks ``readlink`` for every rename, and their
  permissions set without forking ``chmod``: about 19 processes less per micro-batch of every query
  (``org.sparkcat.spark.LocalCheckpointFileManager``). A checkpoint file manager named by the user
  (``--conf spark.sql.streaming.checkpointFileManagerClass``) is kept.

It also turns on Spark's ``TIME`` type (``spark.sql.timeType.enabled``, off by default in Spark 4.2):
Kafka Connect's ``Time`` logical type is a Spark ``TIME`` column (TimestampConverter's ``Time``
target, JsonConverter's and AvroConverter's ``org.apache.kafka.connect.data.Time``).
"""

from __future__ import annotations

import logging
from typing import Any

from sparkcat.spark.driver.pools import level_stage_ids

__all__ = ["CHECKPOINT_MANAGER_SETTING", "LOCAL_CHECKPOINT_MANAGER", "TIME_TYPE_SETTING", "tune_session",
           "use_local_checkpoint_manager"]

log = logging.getLogger(__name__)

CHECKPOINT_MANAGER_SETTING = "spark.sql.streaming.checkpointFileManagerClass"
LOCAL_CHECKPOINT_MANAGER = "org.sparkcat.spark.LocalCheckpointFileManager"
#: Spark's switch for its TIME type, which holds Connect's Time logical type.
TIME_TYPE_SETTING = "spark.sql.timeType.enabled"


def tune_session(spark: Any) -> None:
    """Apply the changes above to a session that has just been built."""
    level_stage_ids(spark)
    use_local_checkpoint_manager(spark)
    spark.conf.set(TIME_TYPE_SETTING, "true")


def use_local_checkpoint_manager(spark: Any) -> bool:
    """Name sparkcat's checkpoint file manager in the session; False when the user named one or it is missing.

    Queries started afterwards pick it up (Spark reads the setting from the session's Hadoop configuration
    when a query opens its checkpoint). It changes nothing but the local file system's rename path.
    """
    chosen = spark.conf.get(CHECKPOINT_MANAGER_SETTING, None)
    if chosen:
        log.info("Query checkpoints are written by %s, as configured", chosen)
        return False
    try:
        spark.sparkContext._jvm.org.sparkcat.spark.LocalCheckpointFileManager.available()
    except Exception as e:  # sparkcat-jvm.jar missing from the driver's class path
        log.warning("Query checkpoints keep Spark's default file manager (%s): on a local file system each "
                    "micro-batch forks about 19 processes", str(e).splitlines()[0] if str(e) else type(e).__name__)
        return False
    spark.conf.set(CHECKPOINT_MANAGER_SETTING, LOCAL_CHECKPOINT_MANAGER)
    return True
