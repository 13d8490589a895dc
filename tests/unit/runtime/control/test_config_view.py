"""The herder's config view across a rebuild: a re-read of the same log swaps in once it has read as far; a
recreated config topic's state only once all of it was read, naming the connectors that are gone."""

from __future__ import annotations

import logging

from sparkcat.runtime.control.config_view import ConfigView
from sparkcat.storage.config_log import ConfigLog
from sparkcat.storage.log import MemoryLog

CONFIG = {"connector.class": "increment", "increments": "1", "tasks.max": "1"}


def log_of(names: list[str], repeat: int = 1) -> MemoryLog:
    """A config log with each connector's config written ``repeat`` times."""
    log = ConfigLog(MemoryLog())
    for _ in range(repeat):
        for name in names:
            log.put_connector_config(name, CONFIG)
    return log.backend


def test_a_recreated_topics_state_replaces_the_old_one_only_once_read_to_its_end(caplog):
    view = ConfigView()
    view.apply(log_of(["a", "b"]).read())  # offsets 0, 1
    new = log_of(["y", "z"], repeat=3).read()  # offsets 0..5: past the old state's offset 1
    view.rebuild(recreated=True)
    view.apply(new[:4])
    assert view.snapshot().connectors() == ["a", "b"] and view.rebuilding  # never a part of the new topic
    view.apply(new[4:])
    assert view.snapshot().connectors() == ["a", "b"]
    with caplog.at_level(logging.WARNING, logger="sparkcat.runtime.control.config_view"):
        assert view.read_to_end()
    assert view.snapshot().connectors() == ["y", "z"] and not view.rebuilding
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "Connectors not in the config log read again, stopped: a, b (the config topic was deleted and created "
        "again without them)"]
    assert view.wait_for_offset(5, 0)


def test_a_reread_of_the_same_log_swaps_in_once_it_has_read_as_far():
    view = ConfigView()
    records = log_of(["a", "b"], repeat=2).read()
    view.apply(records)
    view.rebuild()
    view.apply(records[:2])
    assert view.rebuilding
    view.apply(records[2:])
    assert not view.rebuilding and view.snapshot().connectors() == ["a", "b"]
    assert not view.read_to_end()  # nothing left to swap
