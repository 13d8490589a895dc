"""The worker's converters, inherited by every connector that names none, as Connect's Worker picks them.

Connect's ``Worker`` picks a task's converter per side (key, value, header): the connector's own class
with only the connector's own ``key.converter.*`` settings when its config names one
(``Plugins.newConverter`` with the ``ConnectorConfig``), else the worker's class with the worker's
settings. sparkcat makes that choice once, on the driver, by writing the worker's keys of each side
the connector leaves unset into the config the connector runs with (``inherit``): validation, the
connector, its query plan (so the Python executors) and the JVM host of a Java connector all see the
converters the connector really runs with, and the stored config stays as the user wrote it.

Where sparkcat differs: a connector that names no class of its own but sets settings of that side
(``value.converter.schemas.enable`` alone) has them applied over the worker's (Connect ignores them,
and sparkcat ignores no key).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["SIDES", "inherit", "is_converter_key", "side_of"]

#: The class keys of the three converters; each one's settings are the keys under it plus a dot.
SIDES = ("key.converter", "value.converter", "header.converter")


def side_of(key: str) -> str | None:
    """The side (``value.converter``) that ``key`` is the class key or a setting of, else None.

    >>> side_of("value.converter.schemas.enable"), side_of("key.converter"), side_of("topics")
    ('value.converter', 'key.converter', None)
    """
    for side in SIDES:
        if key == side or key.startswith(side + "."):
            return side
    return None


def is_converter_key(key: str) -> bool:
    """Whether ``key`` is a converter class key or one of its settings."""
    return side_of(key) is not None


def inherit(config: Mapping[str, str], worker: Mapping[str, str]) -> dict[str, str]:
    """``config`` with the worker's converter keys of every side it names no class for.

    >>> worker = {"value.converter": "org.apache.kafka.connect.storage.StringConverter",
    ...           "value.converter.encoding": "UTF-16"}
    >>> inherit({"topics": "t"}, worker)["value.converter.encoding"]
    'UTF-16'
    >>> inherit({"value.converter": "json"}, worker)
    {'value.converter': 'json'}
    >>> inherit({"value.converter.encoding": "UTF-8"}, worker)["value.converter.encoding"]
    'UTF-8'
    """
    out = dict(config)
    for side in SIDES:
        if str(out.get(side) or "").strip():
            continue  # the connector's own class, with its own settings only
        out.pop(side, None)  # an empty class key is an unset one
        inherited = {k: v for k, v in worker.items() if side_of(k) == side}
        out = {**inherited, **out}
    return out
