"""Worker config: conf/worker.yaml parsed into WorkerConfig, then overridden by flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcat.errors import ConfigError
from sparkcat.config.worker import WorkerConfig, load_worker_config

REPO_CONF = Path(__file__).resolve().parents[3] / "conf" / "worker.yaml"


def test_defaults_without_a_file():
    config = load_worker_config(None)
    assert config == WorkerConfig()
    assert (config.state_dir, config.group_id, config.rest_host, config.rest_port) == (
        "state", "sparkcat-cluster", "127.0.0.1", 8083)
    assert (config.config_topic, config.offset_topic, config.status_topic) == (
        "connect-configs", "connect-offsets", "connect-status")
    assert config.uses_kafka is False and config.kafka == {}


def test_shipped_worker_yaml_loads_to_the_defaults_with_auto_restart_on():
    shipped = load_worker_config(REPO_CONF)
    assert shipped == WorkerConfig(auto_restart_enable=True)
    assert WorkerConfig().auto_restart.enabled is False  # Connect has no auto-restart: off without the key
    assert (shipped.auto_restart.max_restarts, shipped.auto_restart.backoff_unit_ms) == (-1, 60000)


def test_file_values_are_read(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("state.dir: /var/sparkcat\nbootstrap.servers: broker:9092\ngroup.id: g1\n"
                    "offset.storage.topic: my-offsets\nrest.port: '9000'\npipelines.dir: specs\n")
    config = load_worker_config(path)
    assert config.state_dir == "/var/sparkcat"
    assert config.bootstrap_servers == "broker:9092" and config.uses_kafka
    assert config.group_id == "g1"
    assert config.offset_topic == "my-offsets"
    assert config.rest_port == 9000
    assert config.pipelines_dir == "specs"
    assert config.config_topic == "connect-configs"  # untouched keys keep their defaults


def test_empty_bootstrap_servers_means_no_kafka(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("bootstrap.servers: ''\n")
    assert load_worker_config(path).uses_kafka is False


def test_unknown_key_error_names_key_and_file(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("rest.prot: 8084\n")
    with pytest.raises(ConfigError) as excinfo:
        load_worker_config(path)
    assert "rest.prot" in excinfo.value.message and str(path) in excinfo.value.message
    assert "rest.prot" in excinfo.value.errors


def test_connect_rest_keys_sparkcat_does_not_implement_are_refused_with_the_reason(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("rest.extension.classes: org.example.AuthExtension\n")
    with pytest.raises(ConfigError) as excinfo:
        load_worker_config(path)
    assert "rest.extension.classes" in excinfo.value.errors
    assert "Java REST extensions" in excinfo.value.message and "unknown" not in excinfo.value.message


def test_non_numeric_rest_port_names_the_key(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("rest.port: eighty\n")
    with pytest.raises(ConfigError, match="rest.port"):
        load_worker_config(path)


def test_non_mapping_file_is_rejected_naming_the_file(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("- state.dir\n")
    with pytest.raises(ConfigError) as excinfo:
        load_worker_config(path)
    assert str(path) in excinfo.value.message


def test_overrides_win_over_file_and_none_keeps_file_value(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("rest.port: 9000\nstate.dir: from-file\n")
    config = load_worker_config(path).with_overrides(rest_port=9100, state_dir=None,
                                                      bootstrap_servers="flag:9092")
    assert config.rest_port == 9100
    assert config.state_dir == "from-file"
    assert config.bootstrap_servers == "flag:9092"


def test_kafka_prefixed_keys_are_passed_through_without_prefix(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("bootstrap.servers: b:9092\nkafka.security.protocol: SASL_SSL\n"
                    "kafka.sasl.mechanism: PLAIN\nkafka.socket.timeout.ms: 5000\n")
    assert load_worker_config(path).kafka == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                              "socket.timeout.ms": "5000"}


def test_security_and_internal_topic_keys(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("plugin.packages: sparkcat.connectors, acme.connect\nfile.allowed.dirs: [/data/in, /data/out]\n"
                    "config.providers: file\n"
                    "config.providers.file.class: org.apache.kafka.common.config.provider.FileConfigProvider\n"
                    "config.providers.file.param.allowed.paths: [/etc/secrets, /run/secrets]\n"
                    "config.storage.replication.factor: 3\noffset.storage.replication.factor: '2'\n"
                    "offset.storage.partitions: 1\n")
    config = load_worker_config(path)
    assert config.plugin_packages == ["sparkcat.connectors", "acme.connect"]
    assert config.allowed_dirs == ["/data/in", "/data/out"]
    assert config.config_providers == {
        "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "config.providers.file.param.allowed.paths": "/etc/secrets,/run/secrets"}
    assert (config.config_replication_factor, config.offset_replication_factor,
            config.status_replication_factor) == (3, 2, -1)


def test_defaults_of_the_security_keys():
    config = WorkerConfig()
    assert config.plugin_packages == ["sparkcat.connectors"] and config.config_providers == {}
    assert config.allowed_dirs == ["state", "pipelines"]
    assert config.with_overrides(state_dir="/srv/s").allowed_dirs == ["/srv/s", "pipelines"]
    assert config.config_replication_factor == config.offset_replication_factor == -1
    # Connect's defaults: the offsets topic gets 25 partitions, the status topic 5
    assert (config.offset_partitions, config.status_partitions) == (25, 5)


@pytest.mark.parametrize("text, key", [
    ("offset.storage.partitions: 0\n", "offset.storage.partitions"),
    ("status.storage.partitions: -2\n", "status.storage.partitions"),
    ("status.storage.replication.factor: 0\n", "status.storage.replication.factor"),
])
def test_internal_topic_settings_sparkcat_cannot_honour_are_refused(tmp_path, text, key):
    path = tmp_path / "worker.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_worker_config(path)
    assert key in e.value.message and str(path) in e.value.message


def test_an_unknown_config_provider_class_fails_at_start(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("config.providers: vault\nconfig.providers.vault.class: com.example.VaultConfigProvider\n")
    with pytest.raises(ConfigError, match="config.providers.vault.class"):
        load_worker_config(path)


def test_default_input_policy_is_the_policy_of_a_worker_with_no_settings():
    from sparkcat.policy.input_policy import InputPolicy
    assert InputPolicy.default() == InputPolicy.of(WorkerConfig())


def test_lists_take_yaml_lists_or_comma_text_and_drop_empty_items(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("plugin.packages: 'a, ,b'\nfile.allowed.dirs: [x, ' ', y]\n")
    config = load_worker_config(path)
    assert config.plugin_packages == ["a", "b"] and config.file_allowed_dirs == ["x", "y"]


@pytest.mark.parametrize("text", ["rest.port: ~\n", "rest.port: [1]\n", "rest.port: 8083.5\n"])
def test_a_port_that_is_not_a_whole_number_is_refused_naming_the_key(tmp_path, text):
    path = tmp_path / "worker.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as excinfo:
        load_worker_config(path)
    assert "rest.port" in excinfo.value.errors and str(path) in excinfo.value.message


def test_exactly_once_source_support_is_enabled_by_default_and_read_from_the_file(tmp_path):
    assert WorkerConfig().exactly_once_source_support == "enabled" and WorkerConfig().exactly_once_source
    path = tmp_path / "worker.yaml"
    path.write_text("exactly.once.source.support: disabled\n")
    assert load_worker_config(path).exactly_once_source is False
    path.write_text("exactly.once.source.support: sometimes\n")
    with pytest.raises(ConfigError, match="exactly.once.source.support"):
        load_worker_config(path)


def test_exactly_once_source_support_preparing_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("exactly.once.source.support: preparing\n")
    with pytest.raises(ConfigError, match="one driver, so there is nothing to prepare: set enabled or disabled"):
        load_worker_config(path)


def test_checkpoint_dir_takes_any_hadoop_uri_and_state_dir_must_stay_local(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("state.dir: /srv/state\ncheckpoint.dir: hdfs://nn:8020/sparkcat/ck/\n")
    worker = load_worker_config(path)
    assert worker.checkpoint_root == "hdfs://nn:8020/sparkcat/ck"
    from sparkcat.runtime.execution.plan_builder import checkpoint_dir
    assert checkpoint_dir(worker, "orders/eu") == "hdfs://nn:8020/sparkcat/ck/orders%2Feu"
    assert load_worker_config(None).checkpoint_root == str((Path("state") / "checkpoints").resolve())
    path.write_text("state.dir: s3a://bucket/state\n")
    with pytest.raises(ConfigError, match="state.dir is 's3a://bucket/state', but it must be a local directory.*"
                                          "checkpoint.dir"):
        load_worker_config(path)


FILE_PROVIDER = ("config.providers: file,vault\n"
                 "config.providers.file.class: org.apache.kafka.common.config.provider.FileConfigProvider\n"
                 "config.providers.vault.class: tests.plugins.vault_provider:VaultLikeProvider\n"
                 "config.providers.vault.param.token: let-me-in\n"
                 "config.providers.vault.param.secrets: kafka/sasl=w0rker-sasl-pw\n"
                 "plugin.packages: [sparkcat.connectors, tests.plugins]\n")


def test_worker_values_resolve_placeholders_with_the_workers_own_providers(tmp_path):
    from sparkcat import redact

    secrets = tmp_path / "kafka.properties"
    secrets.write_text("servers=broker-a:9092,broker-b:9092\nks.password=r3st-ks-pw\n")
    path = tmp_path / "worker.yaml"
    path.write_text(FILE_PROVIDER + f"bootstrap.servers: ${{file:{secrets}:servers}}\n"
                    "kafka.sasl.password: ${vault:kafka:sasl}\n"
                    "kafka.producer.sasl.jaas.config: user=app password=${vault:kafka:sasl};\n"
                    "listeners: https://127.0.0.1:8443\nlisteners.https.ssl.keystore.location: s.pem\n"
                    f"listeners.https.ssl.key.password: ${{file:{secrets}:ks.password}}\n"
                    f"file.allowed.dirs: [/data, '${{file:{secrets}:servers}}']\n")
    config = load_worker_config(path)
    assert config.bootstrap_servers == "broker-a:9092,broker-b:9092"
    assert config.kafka == {"sasl.password": "w0rker-sasl-pw",
                            "producer.sasl.jaas.config": "user=app password=w0rker-sasl-pw;"}
    assert config.rest_security.tls.key_password == "r3st-ks-pw"
    assert config.file_allowed_dirs == ["/data", "broker-a:9092,broker-b:9092"]
    assert "config.providers.file.class" in config.config_providers  # the provider keys stay as written
    assert redact.scrub("sasl w0rker-sasl-pw, keystore r3st-ks-pw") == "sasl [hidden], keystore [hidden]"


@pytest.mark.parametrize("value, problem", [
    ("${vault:kafka:missing}", "has no key missing"),
    ("${aws:secrets:kafka}", "config provider 'aws' is not configured"),
])
def test_a_worker_placeholder_that_cannot_resolve_names_the_key(tmp_path, value, problem):
    path = tmp_path / "worker.yaml"
    path.write_text(FILE_PROVIDER + f"kafka.sasl.password: '{value}'\n")
    with pytest.raises(ConfigError) as e:
        load_worker_config(path)
    assert "kafka.sasl.password" in e.value.errors and problem in e.value.message and str(path) in e.value.message


def test_a_worker_without_providers_refuses_a_placeholder_instead_of_taking_it_literally(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("bootstrap.servers: ${file:/etc/kafka.properties:servers}\n")
    with pytest.raises(ConfigError, match="bootstrap.servers: config provider 'file' is not configured"):
        load_worker_config(path)


def test_a_provider_class_in_plugin_packages_loads_at_start_and_one_outside_is_refused(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text(FILE_PROVIDER)
    assert load_worker_config(path).config_providers["config.providers.vault.param.token"] == "let-me-in"
    path.write_text(FILE_PROVIDER.replace("tests.plugins]", "acme.connect]"))
    with pytest.raises(ConfigError) as e:
        load_worker_config(path)
    assert "config.providers.vault.class" in e.value.errors and "plugin.packages" in e.value.message


def test_the_cli_finds_the_rest_url_without_resolving_the_drivers_secrets(tmp_path):
    from sparkcat.client.rest import resolve_url

    path = tmp_path / "worker.yaml"
    path.write_text(FILE_PROVIDER + "listeners: http://127.0.0.1:9183\n"
                    "kafka.sasl.password: ${file:/run/only-the-driver-can-read:pw}\n")
    with pytest.raises(ConfigError, match="kafka.sasl.password"):
        load_worker_config(path)
    assert resolve_url(None, str(path), env={}) == "http://127.0.0.1:9183"


def test_kafka_settings_sparkcat_sets_itself_are_refused_naming_the_key_not_dropped(tmp_path):
    # A Connect worker's consumer.auto.offset.reset=latest, moved as kafka.consumer.auto.offset.reset, was dropped:
    # every new sink read from the earliest offset with no word anywhere.
    path = tmp_path / "worker.yaml"
    path.write_text("kafka.consumer.auto.offset.reset: latest\nkafka.enable.auto.commit: 'true'\n"
                    "kafka.producer.acks: all\nkafka.consumer.fetch.min.bytes: 1\n")
    with pytest.raises(ConfigError) as excinfo:
        load_worker_config(path)
    assert set(excinfo.value.errors) == {"kafka.consumer.auto.offset.reset", "kafka.enable.auto.commit"}
    assert "kafka.consumer.auto.offset.reset cannot be honoured" in excinfo.value.message
    assert str(path) in excinfo.value.message
    path.write_text("kafka.producer.acks: all\nkafka.consumer.fetch.min.bytes: 1\n")
    assert load_worker_config(path).kafka == {"producer.acks": "all", "consumer.fetch.min.bytes": "1"}
