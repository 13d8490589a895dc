"""A Vault-style config provider written as a Python plugin (``sparkcat.api.ConfigProvider``).

Its "vault" is a dict of paths configured through ``param.secrets`` (``path/key=value;...``),
and it counts ``configure`` and ``close`` calls so tests can see one instance per process.
"""

from __future__ import annotations

from sparkcat.api.config_provider import ConfigData, ConfigProvider

#: How many times ``configure`` ran in this process.
CONFIGURED: list[dict[str, str]] = []


class VaultLikeProvider(ConfigProvider):
    def configure(self, params):
        if params.get("token") != "let-me-in":
            raise ValueError("the vault refused the token")
        CONFIGURED.append(dict(params))
        self.paths: dict[str, dict[str, str]] = {}
        for item in filter(None, params.get("secrets", "").split(";")):
            where, _, value = item.partition("=")
            path, _, key = where.rpartition("/")
            self.paths.setdefault(path, {})[key] = value

    def get(self, path, keys=None):
        data = self.paths.get(path, {})
        return ConfigData({k: v for k, v in data.items() if keys is None or k in keys}, ttl=60000)


class NotAProvider:
    """Has the methods but not the base class: refused."""

    def get(self, path, keys=None):
        return ConfigData({})
