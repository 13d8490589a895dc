"""A driver of a multi-driver cluster to SIGKILL: ``python -m tests.ha_driver SPEC_JSON`` starts a Driver with
Kafka stores, its REST API and INFO logs on a local[4] Spark, and runs until killed (connectors come over REST);
SPEC.started appears once ``Driver.start`` returned."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from sparkcat.bootstrap import Driver, configure_logging
from sparkcat.config.worker import WorkerConfig
from tests.spark_fixture import make_spark


def main(spec_path: str) -> None:
    configure_logging()
    spec = json.loads(Path(spec_path).read_text())
    Driver(make_spark("local[4]"), WorkerConfig(**spec["worker"]), rest=True, watch_pipelines=False).start()
    Path(spec_path).with_suffix(".started").touch()  # Driver.start returned: a standby is warm now
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1])
