"""Pieces of the REST layer on their own: restart plans, error messages, metrics text, the server."""

from __future__ import annotations

import logging
import socket
from types import SimpleNamespace

import httpx
import pytest

from sparkcat.errors import SparkcatError
from sparkcat.rest import metrics
from sparkcat.rest.errors import validation_message
from sparkcat.runtime.control.logger_levels import level_name, parse_level
from sparkcat.rest.server import RestServer
from sparkcat.config.rest import Listener
from sparkcat.rest.views import restart_plan

STATUS = {"name": "c", "type": "source", "connector": {"state": "RUNNING", "worker_id": "d:1"},
          "tasks": [{"id": 0, "state": "FAILED", "worker_id": "e:1", "trace": "boom"},
                    {"id": 1, "state": "RUNNING", "worker_id": "e:2"}]}


def states(plan: dict) -> tuple[str, list[str]]:
    return plan["connector"]["state"], [t["state"] for t in plan["tasks"]]


@pytest.mark.parametrize("include_tasks,only_failed,expected", [
    (False, False, ("RESTARTING", ["FAILED", "RUNNING"])),
    (True, False, ("RESTARTING", ["RESTARTING", "RESTARTING"])),
    (True, True, ("RUNNING", ["RESTARTING", "RUNNING"])),
    (False, True, ("RUNNING", ["FAILED", "RUNNING"])),
])
def test_restart_plan_follows_connects_restart_request(include_tasks, only_failed, expected):
    plan = restart_plan(STATUS, include_tasks, only_failed)
    assert states(plan) == expected
    assert plan["tasks"][0]["worker_id"] == "e:1" and plan["name"] == "c"
    assert STATUS["tasks"][0]["state"] == "FAILED"  # the input is not changed


def test_validation_messages_name_the_field_and_never_echo_values():
    status, message = validation_message([
        {"type": "string_type", "loc": ("body", "config", "k", "str"), "msg": "Input should be a valid string",
         "input": {"secret": "s3cr3t"}},
        {"type": "int_type", "loc": ("body", "config", "k", "int"), "msg": "Input should be a valid integer",
         "input": {"secret": "s3cr3t"}}])
    assert status == 400 and "config.k" in message and "s3cr3t" not in message
    assert validation_message([{"type": "int_parsing", "loc": ("path", "task"), "msg": "x"}])[0] == 404
    assert "not valid JSON" in validation_message([{"type": "json_invalid", "loc": ("body", 3), "msg": "JSON decode error",
                                                    "ctx": {"error": "Expecting value"}}])[1]


def test_metrics_text_escapes_label_values():
    rt = SimpleNamespace(records=12, batches=3, last_batch_s=0.25)
    status = {"name": 'we"ird\\name', "connector": {"state": "RUNNING", "worker_id": "d"},
              "tasks": [{"id": 0, "state": "FAILED", "worker_id": "e"}]}
    text = metrics.render([('we"ird\\name', rt)], [status])
    assert 'sparkcat_connector_records_total{connector="we\\"ird\\\\name"} 12' in text
    assert 'sparkcat_connector_last_batch_duration_seconds{connector="we\\"ird\\\\name"} 0.25' in text
    assert 'sparkcat_task_failed{connector="we\\"ird\\\\name",task="0"} 1' in text
    assert text.endswith("\n") and "# TYPE sparkcat_connector_batches_total counter" in text


def test_metrics_text_is_prometheus_exposition_with_one_sample_per_connector_and_task():
    from prometheus_client.parser import text_string_to_metric_families

    progress = [("a", SimpleNamespace(records=5, batches=2, last_batch_s=0.5))]
    status = {"name": "a", "connector": {"state": "RUNNING", "worker_id": "d"},
              "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "e"}, {"id": 1, "state": "FAILED", "worker_id": ""}]}
    families = {f.name: f for f in text_string_to_metric_families(metrics.render(progress, [status]))}
    assert families["sparkcat_connector_records"].type == "counter"
    assert [(s.labels, s.value) for s in families["sparkcat_connector_records"].samples] == [({"connector": "a"}, 5)]
    assert [(s.labels["task"], s.value) for s in families["sparkcat_task_failed"].samples] == [("0", 0), ("1", 1)]
    assert {s.labels["state"] for s in families["sparkcat_task_state"].samples} == {"RUNNING", "FAILED"}


def test_log_levels_map_to_connects_names():
    assert parse_level("warn") == logging.WARNING and parse_level("FATAL") == logging.CRITICAL
    assert level_name(parse_level("OFF")) == "OFF" and level_name(parse_level("TRACE")) == "TRACE"


def test_server_listens_on_a_chosen_port_and_stops(driver):
    server = RestServer(driver, (Listener("http", "127.0.0.1", 0),))
    server.start()
    try:
        assert server.port > 0
        assert httpx.get(server.url + "/health").json()["status"] == "healthy"
        with pytest.raises(SparkcatError, match="cannot listen"):
            RestServer(driver, (Listener("http", "127.0.0.1", server.port),)).start()
    finally:
        server.stop()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=2)
    with socket.socket() as s:  # the port is free again
        s.bind(("127.0.0.1", server.port))


def test_the_herder_and_the_driver_have_everything_rest_asks_of_them():
    """REST depends on ``runtime.herder_api`` only: every method and property there exists on the real classes."""
    import inspect

    from sparkcat.bootstrap import Driver
    from sparkcat.runtime.control.herder import Herder
    from sparkcat.runtime.control.herder_api import DriverApi, HerderApi
    for protocol, implementation in ((HerderApi, Herder), (DriverApi, Driver)):
        wanted = {n for n, _ in inspect.getmembers(protocol) if not n.startswith("_")}
        wanted |= set(getattr(protocol, "__annotations__", {}))
        missing = {n for n in wanted if not hasattr(implementation, n)
                   and n not in _instance_attributes(implementation)}
        assert not missing, f"{implementation.__name__} lacks {sorted(missing)} of {protocol.__name__}"


def _instance_attributes(cls) -> set[str]:
    """Names ``__init__`` assigns on ``self`` (attributes a class has only once built)."""
    import inspect
    import re
    return set(re.findall(r"self\.(\w+)\s*(?::[^=\n]+)?=", inspect.getsource(cls.__init__)))


def test_a_client_sending_its_headers_too_slowly_is_cut_off_and_others_are_served(driver):
    """A slowloris client cannot hold a connection slot: without a complete request head in time, it is closed."""
    server = RestServer(driver, (Listener("http", "127.0.0.1", 0),), header_timeout_s=1.0)
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as slow:
            slow.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")  # never the blank line that ends the head
            assert httpx.get(server.url + "/health").json()["status"] == "healthy"  # others are served meanwhile
            assert slow.recv(1024) == b""  # closed by the server (the socket's own timeout is 30 s)
        with httpx.Client() as client:  # keep-alive: a second request on the same connection is answered too
            assert [client.get(server.url + "/health").status_code for _ in range(2)] == [200, 200]
    finally:
        server.stop()
