"""A config provider whose values rotate, given with a time to live: a secret manager's short leases.

``get(path, keys)`` reads the properties file ``path`` on every call (so every process, driver or
executor, sees the value the test wrote last) and gives the values ``param.ttl.ms`` as their
``ConfigData.ttl``. ``GETS`` counts the calls made in this process.
"""

from __future__ import annotations

from sparkcat.api.config_provider import ConfigData, ConfigProvider
from sparkcat.policy.config_providers import read_properties

#: (path, keys) of every ``get`` in this process.
GETS: list[tuple[str, frozenset[str]]] = []


class RotatingProvider(ConfigProvider):
    def configure(self, params):
        self.ttl = int(params["ttl.ms"]) if params.get("ttl.ms") else None

    def get(self, path, keys=None):
        from pathlib import Path

        GETS.append((path, frozenset(keys or ())))
        values = read_properties(Path(path))
        return ConfigData({k: v for k, v in values.items() if keys is None or k in keys}, ttl=self.ttl)
