"""Real drivers started from worker YAML files: secrets from config providers, PKCS12 and client certificates.

One worker file, as an operator writes it: ``bootstrap.servers`` and the PKCS12 keystore's password come from
a file provider (KIP-421 placeholders in the worker config), the HTTPS listener requires client certificates
signed by the truststore's CA, and a Vault-style provider written in Python (``tests.plugins.vault_provider``,
inside ``plugin.packages``) serves a connector config's password. A second driver of the same group, with the
same keystore, forwards writes to the leader through that listener.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import load_worker_config
from tests.broker import free_port
from tests.kafka_helpers import wait_until
from tests.plugins import secret_probe
from tests.tls import ClientCert, client_cert, issue, pkcs12

pytestmark = pytest.mark.integration

KEYSTORE_PASSWORD = "p12-st0re-pw"
DB_PASSWORD = "pl4gin-db-pw"


@dataclass
class Mtls:
    driver: Driver
    url: str
    ca: ClientCert   # the CA of the truststore, which signed the listener's and the client's certificates
    worker_yaml: Callable[[Path, int], Path]

    def anonymous(self, url: str | None = None) -> httpx.Client:
        """A client that trusts the listener's CA and has no certificate of its own."""
        return httpx.Client(base_url=url or self.url, verify=ssl.create_default_context(cafile=str(self.ca.ca)),
                            timeout=90)

    def with_certificate(self, url: str | None = None) -> httpx.Client:
        context = ssl.create_default_context(cafile=str(self.ca.ca))
        context.load_cert_chain(str(self.ca.cert), str(self.ca.key))
        return httpx.Client(base_url=url or self.url, verify=context, timeout=90)


@pytest.fixture(scope="module")
def mtls(spark, broker, tmp_path_factory) -> Iterator[Mtls]:
    base = tmp_path_factory.mktemp("mtls")
    ca = client_cert(base / "ca")
    keystore = pkcs12(*issue(ca, base / "server", "localhost"), base / "server.p12", KEYSTORE_PASSWORD)
    secrets = base / "worker-secrets.properties"
    secrets.write_text(f"servers={broker.bootstrap}\nkeystore.password={KEYSTORE_PASSWORD}\n")

    def worker_yaml(directory: Path, port: int) -> Path:
        path = directory / "worker.yaml"
        path.write_text(f"""
state.dir: {directory / "state"}
group.id: rest-mtls
bootstrap.servers: ${{file:{secrets}:servers}}
plugin.packages: [sparkcat.connectors, tests.plugins]
config.providers: file,vault
config.providers.file.class: org.apache.kafka.common.config.provider.FileConfigProvider
config.providers.vault.class: tests.plugins.vault_provider:VaultLikeProvider
config.providers.vault.param.token: let-me-in
config.providers.vault.param.secrets: secret/db/password={DB_PASSWORD}
listeners: https://127.0.0.1:{port}
listeners.https.ssl.keystore.type: PKCS12
listeners.https.ssl.keystore.location: {keystore}
listeners.https.ssl.keystore.password: ${{file:{secrets}:keystore.password}}
listeners.https.ssl.client.auth: required
listeners.https.ssl.truststore.location: {ca.ca}
""")
        return path

    port = free_port()
    worker = load_worker_config(worker_yaml(base, port))
    with Driver(spark, worker, rest=True, watch_pipelines=False) as driver:
        yield Mtls(driver, f"https://127.0.0.1:{port}", ca, worker_yaml)


def test_a_request_without_a_client_certificate_is_refused_and_one_with_it_is_served(mtls):
    with mtls.anonymous() as anonymous, pytest.raises(httpx.TransportError):
        anonymous.get("/connectors")
    with mtls.with_certificate() as http:
        assert http.get("/connectors").status_code == 200


def test_the_pkcs12_keystore_serves_https_and_bootstrap_servers_came_from_the_file_provider(mtls, broker):
    with mtls.with_certificate() as http:
        info = http.get("/").json()
    # the worker's bootstrap.servers placeholder was resolved: the driver reached the suite's broker
    assert info["kafka_cluster_id"] == broker.cluster_id
    assert mtls.driver.worker.uses_kafka and mtls.driver.worker.bootstrap_servers == broker.bootstrap
    with pytest.raises(httpx.ConnectError):  # the system CAs do not know the listener's CA
        httpx.get(f"{mtls.url}/connectors")


def test_a_python_config_provider_from_plugin_packages_serves_a_connector_config_value(mtls, unique_name):
    config = {"connector.class": "tests.plugins.secret_probe:SecretProbeConnector",
              "probe.password": "${vault:secret/db:password}", "probe.user": "app"}
    secret_probe.STARTED.clear()
    with mtls.with_certificate() as http:
        created = http.put(f"/connectors/{unique_name}/config", json=config)
        assert created.status_code == 201, created.text
        wait_until(lambda: secret_probe.STARTED, timeout_s=60, message="the probe connector to start")
        assert secret_probe.STARTED[-1]["probe.password"] == DB_PASSWORD
        stored = http.get(f"/connectors/{unique_name}/config").json()
        assert stored["probe.password"] == "${vault:secret/db:password}"  # the placeholder, never the value
        assert DB_PASSWORD not in http.get(f"/connectors/{unique_name}").text
        http.delete(f"/connectors/{unique_name}")


def test_the_cli_presents_a_client_certificate_with_cert_and_key_and_says_why_it_is_refused_without(
        mtls, capsys, tmp_path):
    from sparkcat.cli import main as cli

    common = ["--url", mtls.url, "--cacert", str(mtls.ca.ca), "-o", "json"]
    assert cli(["get", *common, "--cert", str(mtls.ca.cert), "--key", str(mtls.ca.key)]) == 0
    capsys.readouterr()
    assert cli(["get", *common]) == 2
    assert "requires a client certificate: --cert FILE" in capsys.readouterr().err
    stranger = client_cert(tmp_path / "other-ca")  # a certificate another CA signed
    assert cli(["get", *common, "--cert", str(stranger.cert), "--key", str(stranger.key)]) == 2


def test_a_standby_forwards_a_write_to_the_leader_presenting_its_keystore_as_client_certificate(
        mtls, spark, tmp_path, unique_name):
    """Connect's RestClient uses the worker's listeners.https.* keystore and truststore: so does the standby."""
    port = free_port()
    standby_worker = load_worker_config(mtls.worker_yaml(tmp_path, port))
    with Driver(spark.newSession(), standby_worker, rest=True, watch_pipelines=False) as standby:
        assert not standby.herder.is_leader
        config = {"connector.class": "tests.plugins.secret_probe:SecretProbeConnector", "probe.user": "app"}
        with mtls.with_certificate(standby.url) as http:
            assert http.get("/").json()["sparkcat_leader_url"] == mtls.url
            created = http.put(f"/connectors/{unique_name}/config", json=config)
            assert created.status_code == 201, created.text
        assert unique_name in mtls.driver.reconciler.lifecycles or wait_until(
            lambda: unique_name in mtls.driver.reconciler.lifecycles, timeout_s=60, message="the leader to run it")
        assert not standby.reconciler.lifecycles
        with mtls.with_certificate() as http:
            http.delete(f"/connectors/{unique_name}")
