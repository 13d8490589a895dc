"""use_local_checkpoint_manager keeps a checkpoint file manager the user named; says so when sparkcat's is absent."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from sparkcat.spark.driver.session_tuning import (
    CHECKPOINT_MANAGER_SETTING,
    LOCAL_CHECKPOINT_MANAGER,
    use_local_checkpoint_manager,
)


class _Conf(dict):
    """The session's runtime settings (``spark.conf``)."""

    def get(self, key: str, default=None):
        return super().get(key, default)

    def set(self, key: str, value: str) -> None:
        self[key] = value


class _Jvm:
    """A py4j JVM view: sparkcat-jvm.jar's class answers, or is absent (py4j raises when it is called)."""

    def __init__(self, present: bool):
        self.present = present

    def __getattr__(self, name: str):
        return self

    def __call__(self, *args):
        if not self.present:
            raise TypeError("'JavaPackage' object is not callable")
        return True


def _session(present: bool = True, **settings: str) -> SimpleNamespace:
    return SimpleNamespace(conf=_Conf(settings), sparkContext=SimpleNamespace(_jvm=_Jvm(present)))


def test_sparkcats_manager_is_named_when_nobody_chose_one():
    spark = _session()
    assert use_local_checkpoint_manager(spark) is True
    assert spark.conf[CHECKPOINT_MANAGER_SETTING] == LOCAL_CHECKPOINT_MANAGER


def test_a_manager_the_user_named_is_kept():
    spark = _session(**{CHECKPOINT_MANAGER_SETTING: "com.example.S3CheckpointFileManager"})
    assert use_local_checkpoint_manager(spark) is False
    assert spark.conf[CHECKPOINT_MANAGER_SETTING] == "com.example.S3CheckpointFileManager"


def test_without_sparkcats_jar_sparks_default_stays_with_a_warning(caplog):
    spark = _session(present=False)
    with caplog.at_level(logging.WARNING, logger="sparkcat.spark.driver.session_tuning"):
        assert use_local_checkpoint_manager(spark) is False
    assert CHECKPOINT_MANAGER_SETTING not in spark.conf
    assert "'JavaPackage' object is not callable" in caplog.text and "forks" in caplog.text
