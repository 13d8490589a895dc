"""``sparkcat validate``: checks YAML specs and names file, connector and key for every problem."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sparkcat.cli import main

FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def _spec(tmp_path: Path, filename: str, text: str) -> Path:
    path = tmp_path / filename
    path.write_text(textwrap.dedent(text))
    return path


def _increment(tmp_path: Path, name: str, extra: str = "", filename: str | None = None) -> Path:
    """An increment source spec; ``extra`` is YAML added under ``config``."""
    path = tmp_path / (filename or f"{name}.yaml")
    path.write_text(f"name: {name}\nconfig:\n  connector.class: increment\n  increments: [1, 100]\n"
                    f"  tasks.max: 2\n" + textwrap.indent(textwrap.dedent(extra), "  "))
    return path


def _worker(tmp_path: Path) -> str:
    """A worker config that lets file connectors use ``tmp_path`` (the default allows state/ and pipelines/)."""
    path = tmp_path / "worker.yaml"
    path.write_text(f"file.allowed.dirs: [{tmp_path}]\n")
    return str(path)


def _flagged_keys(err: str, path: Path, name: str) -> set[str]:
    """Keys reported on stderr as ``FILE: connector NAME: KEY: message`` for this file and connector."""
    prefix = f"{path}: connector {name}: "
    return {line[len(prefix):].split(": ", 1)[0] for line in err.splitlines() if line.startswith(prefix)}


def test_valid_source_spec_exits_zero(tmp_path, unique_name, capsys):
    path = _increment(tmp_path, unique_name)
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert unique_name in out and "valid" in out
    assert err == ""


def test_valid_file_sink_spec_exits_zero(tmp_path, unique_name, capsys):
    path = _spec(tmp_path, "sink.yaml", f"""
        name: {unique_name}
        config:
          connector.class: {FILE_SINK}
          topics: [orders, payments]
          file: {tmp_path / 'out.txt'}
    """)
    assert main(["validate", "--worker-config", _worker(tmp_path), str(path)]) == 0, capsys.readouterr().err


def test_misspelled_key_fails_naming_file_connector_and_key(tmp_path, unique_name, capsys):
    path = _spec(tmp_path, "typo.yaml", f"""
        name: {unique_name}
        config:
          connector.class: {FILE_SINK}
          topics: orders
          topicz: payments
          file: {tmp_path / 'out.txt'}
    """)
    assert main(["validate", "--worker-config", _worker(tmp_path), str(path)]) != 0
    assert _flagged_keys(capsys.readouterr().err, path, unique_name) == {"topicz"}


def test_misspelled_key_in_source_spec_fails(tmp_path, unique_name, capsys):
    path = _increment(tmp_path, unique_name, "incremnts: 5\n")
    assert main(["validate", str(path)]) != 0
    assert _flagged_keys(capsys.readouterr().err, path, unique_name) == {"incremnts"}


def test_bad_type_fails_naming_the_key(tmp_path, unique_name, capsys):
    path = _spec(tmp_path, "badtype.yaml", f"""
        name: {unique_name}
        config:
          connector.class: increment
          increments: 1
          tasks.max: abc
    """)
    assert main(["validate", str(path)]) != 0
    assert _flagged_keys(capsys.readouterr().err, path, unique_name) == {"tasks.max"}


def test_unknown_connector_class_names_the_key(tmp_path, unique_name, capsys):
    path = _spec(tmp_path, "unknown.yaml", f"""
        name: {unique_name}
        config:
          connector.class: com.example.NoSuchConnector
          topics: orders
    """)
    assert main(["validate", str(path)]) != 0
    err = capsys.readouterr().err
    assert _flagged_keys(err, path, unique_name) == {"connector.class"}
    assert "com.example.NoSuchConnector" in err


def test_missing_connector_class_names_the_key(tmp_path, unique_name, capsys):
    path = _spec(tmp_path, "noclass.yaml", f"name: {unique_name}\nconfig: {{topics: orders}}\n")
    assert main(["validate", str(path)]) != 0
    assert "connector.class" in _flagged_keys(capsys.readouterr().err, path, unique_name)


@pytest.mark.parametrize(("topics", "message"), [
    ([], "Must configure one of topics or topics.regex"),
    (["topics: orders", 'topics.regex: "ord.*"'], "mutually exclusive"),
], ids=["neither", "both"])
def test_sink_needs_exactly_one_of_topics_and_topics_regex(tmp_path, unique_name, capsys, topics, message):
    keys = "".join(f"\n          {line}" for line in topics)
    path = _spec(tmp_path, "topics.yaml", f"""
        name: {unique_name}
        config:
          connector.class: {FILE_SINK}{keys}
          file: {tmp_path / 'out.txt'}
    """)
    assert main(["validate", "--worker-config", _worker(tmp_path), str(path)]) != 0
    err = capsys.readouterr().err
    assert _flagged_keys(err, path, unique_name) == {"topics", "topics.regex"}
    assert message in err


def test_directory_argument_validates_every_yaml_in_it(tmp_path, unique_name, capsys):
    good = _increment(tmp_path, f"{unique_name}-good")
    bad = _increment(tmp_path, f"{unique_name}-bad", "bogus.key: 1\n", filename="z-bad.yml")
    assert main(["validate", str(tmp_path)]) != 0
    out, err = capsys.readouterr()
    assert str(good) in out and f"{unique_name}-good" in out
    assert _flagged_keys(err, bad, f"{unique_name}-bad") == {"bogus.key"}
    assert _flagged_keys(err, good, f"{unique_name}-good") == set()


def test_directory_of_valid_specs_exits_zero(tmp_path, unique_name, capsys):
    _increment(tmp_path, f"{unique_name}-a")
    _increment(tmp_path, f"{unique_name}-b")
    assert main(["validate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{unique_name}-a" in out and f"{unique_name}-b" in out


def test_duplicate_connector_names_across_files_in_a_directory_are_rejected(tmp_path, unique_name, capsys):
    """validate must reject what loading the same directory at start-up rejects (specs.load_specs)."""
    first = _increment(tmp_path, unique_name, filename="one.yaml")
    second = _increment(tmp_path, unique_name, filename="two.yaml")
    assert main(["validate", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert str(first) in err and str(second) in err


def test_empty_directory_is_an_error(tmp_path, capsys):
    assert main(["validate", str(tmp_path)]) != 0
    assert capsys.readouterr().err


def test_missing_file_fails_naming_it(tmp_path, capsys):
    missing = tmp_path / "absent.yaml"
    assert main(["validate", str(missing)]) != 0
    assert str(missing) in capsys.readouterr().err


def test_yaml_syntax_error_fails_naming_the_file(tmp_path, capsys):
    path = _spec(tmp_path, "broken.yaml", "name: x\nconfig: {connector.class: increment\n")
    assert main(["validate", str(path)]) != 0
    assert str(path) in capsys.readouterr().err


def test_producer_overrides_and_converter_settings_are_accepted(tmp_path, unique_name, capsys):
    path = _increment(tmp_path, unique_name, """
        producer.override:
          compression.type: lz4
        admin.override.request.timeout.ms: 20000
        value.converter: org.apache.kafka.connect.json.JsonConverter
        value.converter.schemas.enable: false
        errors.retry.timeout: 30000
        errors.retry.delay.max.ms: 5000
        errors.log.enable: false
    """)
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


def test_keys_nothing_implements_are_refused_each_with_its_reason(tmp_path, unique_name, capsys):
    path = _increment(tmp_path, unique_name, """
        transforms: meta
        transforms.meta.type: org.apache.kafka.connect.transforms.SetSchemaMetadata$Value
        errors.some.future.setting: x
        consumer.override.max.poll.records: 10
        header.converter: org.apache.kafka.connect.storage.StringConverter
        header.converter.x: y
        offsets.storage.topic: my-offsets
    """)
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert _flagged_keys(err, path, unique_name) == {
        "transforms.meta.type",
        "errors.some.future.setting", "consumer.override.max.poll.records",
        "header.converter", "header.converter.x",
        "offsets.storage.topic"}
    assert "not supported by sparkcat yet" in err and "Unknown configuration key 'errors.some.future.setting'" in err


def test_a_transform_missing_a_required_key_is_refused_with_connects_message(tmp_path, unique_name, capsys):
    path = _increment(tmp_path, unique_name, """
        transforms: route
        transforms.route.type: org.apache.kafka.connect.transforms.RegexRouter
    """)
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert 'Missing required configuration "transforms.route.regex" which has no default value.' in err


def test_console_script_exit_codes(tmp_path, unique_name):
    script = Path(sys.executable).parent / "sparkcat"
    assert script.exists(), f"console script not installed at {script}; run pip install -e ."
    good = _increment(tmp_path, f"{unique_name}-good")
    bad = _increment(tmp_path, f"{unique_name}-bad", "topicz: x\n")

    ok = subprocess.run([str(script), "validate", str(good)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert f"{unique_name}-good" in ok.stdout

    failed = subprocess.run([str(script), "validate", str(bad)], capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1
    assert _flagged_keys(failed.stderr, bad, f"{unique_name}-bad") == {"topicz"}

    usage = subprocess.run([str(script), "validate"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2


def test_a_file_outside_the_allowed_dirs_fails_naming_the_key_and_the_setting(tmp_path, unique_name, capsys):
    path = _spec(tmp_path, "outside.yaml", f"""
        name: {unique_name}
        config:
          connector.class: {FILE_SINK}
          topics: orders
          file: {tmp_path / 'elsewhere' / '..' / '..' / 'out.txt'}
    """)
    assert main(["validate", "--worker-config", _worker(tmp_path), str(path)]) != 0
    err = capsys.readouterr().err
    assert _flagged_keys(err, path, unique_name) == {"file"} and "file.allowed.dirs" in err


def test_consumer_overrides_are_a_sink_connectors_kafka_input_settings(tmp_path, unique_name, capsys):
    """Sink connectors read through Spark's Kafka source, which takes consumer.override.*; sources refuse it."""
    sink = tmp_path / "sink.yaml"
    sink.write_text(f"name: {unique_name}\nconfig:\n  connector.class: file-sink\n  topics: t\n"
                    f"  file: {tmp_path / 'out.txt'}\n  consumer.override.fetch.max.bytes: 1048576\n")
    assert main(["validate", "--worker-config", _worker(tmp_path), str(sink)]) == 0, capsys.readouterr().err
    source = _increment(tmp_path, unique_name + "-src", "consumer.override.fetch.max.bytes: 1048576\n")
    assert main(["validate", str(source)]) == 1
    assert "a source connector has no consumer" in capsys.readouterr().err
