"""The Spark UI's exposure: its kill links off, and on a local master bound where the REST API is.

Spark's UI has no host setting of its own: it binds to ``$SPARK_LOCAL_IP``, else every
interface (``WebUI.bind`` in Spark 4 still reads only that variable). ``SPARK_LOCAL_IP``
also moves the driver's RPC endpoint, which executors on other machines must reach, so
``./spark-submit.sh`` sets it only for ``local`` masters, where the executors are in the
driver's process. On YARN, standalone or Kubernetes the UI listens on every interface
(YARN's proxy fronts it); ``spark.ui.enabled false`` or ``spark.ui.filters`` limit it.

``spark.ui.killEnabled`` is off by default (conf/spark-defaults.conf, and the driver's
session when no properties file set it): the UI has no authentication by default, and
its kill links would stop connector queries behind the herder's back.

``python -m sparkcat.ui_host`` tells spark-submit.sh which address that is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

KILL_ENABLED = "spark.ui.killEnabled"
_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?|local-cluster\[[^\]]*\]")


def ui_conf(existing: Mapping[str, str]) -> dict[str, str]:
    """Settings the driver's session adds when spark-submit did not set them.

    >>> ui_conf({}), ui_conf({"spark.ui.killEnabled": "true"})
    ({'spark.ui.killEnabled': 'false'}, {})
    """
    return {} if KILL_ENABLED in existing else {KILL_ENABLED: "false"}


def ui_bind_address(master: str, hosts: Iterable[str]) -> str | None:
    """The REST API's host for a local master, when all its listeners' ``hosts`` are one specific host; else None.

    >>> ui_bind_address("local[*]", ["127.0.0.1"])
    '127.0.0.1'
    >>> ui_bind_address("yarn", ["127.0.0.1"]) is None
    True
    """
    if not _LOCAL_MASTER.fullmatch(master.strip()):
        return None
    hosts = set(hosts)
    if len(hosts) != 1:
        return None
    host = hosts.pop()
    return None if host in ("", "0.0.0.0", "::") else host
