"""The Spark conf sparkcat produces keeps the UI's kill links off and, locally, the UI on the REST host."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkcat.spark.driver.ui import ui_bind_address, ui_conf

REPO = Path(__file__).resolve().parents[4]


def spark_defaults() -> dict[str, str]:
    out = {}
    for line in (REPO / "conf" / "spark-defaults.conf").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.strip().partition(" ")
            out[key] = value.strip()
    return out


def session_conf(submitted: dict[str, str]) -> dict[str, str]:
    """What the driver's session ends up with: the submitted settings plus what ``ui_conf`` adds."""
    return {**submitted, **ui_conf(submitted)}


@pytest.mark.parametrize("submitted", [{"spark.master": "local[*]"}, spark_defaults()],
                         ids=["bare submit", "shipped spark-defaults.conf"])
def test_the_driver_session_has_no_kill_links(submitted):
    assert session_conf(submitted)["spark.ui.killEnabled"] == "false"


def test_an_operators_explicit_kill_setting_stands():
    assert session_conf({"spark.ui.killEnabled": "true"})["spark.ui.killEnabled"] == "true"


@pytest.mark.parametrize("master", ["local", "local[*]", "local[2]", "local[4,3]", "local-cluster[2,1,1024]"])
def test_a_local_master_binds_the_ui_to_the_rest_host(master):
    assert ui_bind_address(master, ["127.0.0.1"]) == "127.0.0.1"
    assert ui_bind_address(master, ["localhost", "localhost"]) \
        == "localhost"


@pytest.mark.parametrize("master", ["yarn", "spark://m:7077", "k8s://https://api:6443"])
def test_a_cluster_master_leaves_the_driver_address_alone(master):
    # SPARK_LOCAL_IP would also move the driver's RPC endpoint out of the executors' reach.
    assert ui_bind_address(master, ["127.0.0.1"]) is None


def test_a_wildcard_or_mixed_rest_host_leaves_the_ui_on_every_interface():
    assert ui_bind_address("local[*]", ["0.0.0.0"]) is None
    assert ui_bind_address("local[*]", ["127.0.0.1", "10.0.0.1"]) is None


def run_ui(*args: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "sparkcat.ui_host", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def test_spark_submit_sh_gets_the_address_from_the_worker_config_and_flags(tmp_path):
    worker = tmp_path / "worker.yaml"
    worker.write_text("rest.host: localhost\nrest.port: 8083\n")
    assert run_ui("local[*]", cwd=REPO) == "127.0.0.1"  # the shipped conf/worker.yaml
    assert run_ui("local[*]", "--worker-config", str(worker), cwd=tmp_path) == "localhost"
    assert run_ui("local[*]", "--rest-host", "0.0.0.0", cwd=REPO) == ""
    assert run_ui("yarn", cwd=REPO) == ""
    assert run_ui("local[*]", "--no-such-flag", cwd=REPO) == ""  # the driver reports bad args itself
