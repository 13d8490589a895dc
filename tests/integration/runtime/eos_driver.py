"""A whole driver to SIGKILL: ``python -m tests.integration.runtime.eos_driver BOOTSTRAP TMP NAME CONFIG_JSON``.

Starts a local Spark session and sparkcat's ``Driver`` (herder, reconciler, config stream) on the
Kafka worker ``test_driver.kafka_worker`` builds for ``BOOTSTRAP``/``TMP``/``NAME``, puts the connector
``eos`` with the config in ``CONFIG_JSON``, and runs until killed. Kill points come from the
environment (``SPARKCAT_TEST_HOLD``, ``sparkcat.spark.source_txn.hold``), which the Python workers
inherit.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from tests.integration.runtime.test_driver import kafka_worker, start_driver
from tests.spark_fixture import make_spark

CONNECTOR = "eos"


def main(bootstrap: str, tmp: str, name: str, config_json: str) -> None:
    worker = kafka_worker(SimpleNamespace(bootstrap=bootstrap), Path(tmp), name)
    driver = start_driver(make_spark(), worker)
    driver.herder.put_connector_config(CONNECTOR, json.loads(config_json))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(*sys.argv[1:5])
