"""A driver to SIGKILL: ``python -m tests.eos_driver SPEC_JSON`` starts a Driver with Kafka stores on a
local[8] Spark (kill points hold executor slots), puts the spec's connectors and runs until killed."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.spark_fixture import make_spark


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    driver = Driver(make_spark("local[8]"), WorkerConfig(**spec["worker"]), rest=False, watch_pipelines=False)
    driver.start()
    for name, config in spec["connectors"].items():
        driver.herder.put_connector_config(name, config)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1])
