"""YAML connector specs: flattening to Connect's flat string configs, and errors that name the file."""

from __future__ import annotations

import textwrap

import pytest

from sparkcat.errors import ConfigError
from sparkcat.specs import flatten, load_file, load_specs, spec_files


def _write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def test_nested_keys_flatten_to_dotted_keys(tmp_path):
    f = _write(tmp_path / "c.yaml", """
        name: c1
        config:
          connector.class: increment
          transforms:
            route:
              type: org.apache.kafka.connect.transforms.RegexRouter
              regex: (.*)
    """)
    [spec] = load_file(f)
    assert spec.config == {"name": "c1", "connector.class": "increment",
                           "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
                           "transforms.route.regex": "(.*)"}
    assert spec.source == str(f)


def test_lists_join_with_commas_and_scalars_become_strings():
    assert flatten({"topics": ["a", "b", "c"], "tasks.max": 3, "ratio": 0.5}) == {
        "topics": "a,b,c", "tasks.max": "3", "ratio": "0.5"}


def test_booleans_become_lowercase_true_false(tmp_path):
    f = _write(tmp_path / "c.yaml", """
        name: c1
        config:
          errors.log.enable: true
          errors.log.include.messages: False
    """)
    [spec] = load_file(f)
    assert spec.config["errors.log.enable"] == "true"
    assert spec.config["errors.log.include.messages"] == "false"


def test_several_documents_in_one_file(tmp_path):
    f = _write(tmp_path / "two.yaml", """
        name: first
        config: {connector.class: increment}
        ---
        name: second
        config: {connector.class: increment}
    """)
    specs = load_file(f)
    assert [s.name for s in specs] == ["first", "second"]
    assert all(str(f) in s.source for s in specs)


def test_a_list_of_specs_in_one_document(tmp_path):
    f = _write(tmp_path / "list.yaml", """
        - name: a
          config: {connector.class: increment}
        - name: b
          config: {connector.class: increment}
    """)
    assert [s.name for s in load_file(f)] == ["a", "b"]


def test_duplicate_connector_name_across_files_names_both_files(tmp_path):
    first = _write(tmp_path / "one.yaml", "name: dup\nconfig: {connector.class: increment}\n")
    second = _write(tmp_path / "two.yaml", "name: dup\nconfig: {connector.class: increment}\n")
    with pytest.raises(ConfigError) as excinfo:
        load_specs([tmp_path])
    assert "dup" in excinfo.value.message
    assert str(first) in excinfo.value.message and str(second) in excinfo.value.message


def test_missing_name_error_names_the_file(tmp_path):
    f = _write(tmp_path / "noname.yaml", "config: {connector.class: increment}\n")
    with pytest.raises(ConfigError, match="name") as excinfo:
        load_file(f)
    assert str(f) in excinfo.value.message


def test_missing_config_error_names_the_file_and_connector(tmp_path):
    f = _write(tmp_path / "noconfig.yaml", "name: lonely\n")
    with pytest.raises(ConfigError, match="config") as excinfo:
        load_file(f)
    assert str(f) in excinfo.value.message and "lonely" in excinfo.value.message


def test_yaml_syntax_error_names_the_file(tmp_path):
    f = _write(tmp_path / "broken.yaml", "name: x\nconfig: {connector.class: increment\n")
    with pytest.raises(ConfigError) as excinfo:
        load_file(f)
    assert str(f) in excinfo.value.message


def test_unknown_top_level_field_is_an_error_naming_it(tmp_path):
    f = _write(tmp_path / "extra.yaml", "name: x\nconfig: {}\nconfg: {}\n")
    with pytest.raises(ConfigError, match="confg") as excinfo:
        load_file(f)
    assert str(f) in excinfo.value.message


def test_config_name_differing_from_spec_name_is_an_error(tmp_path):
    f = _write(tmp_path / "c.yaml", "name: x\nconfig: {name: y}\n")
    with pytest.raises(ConfigError, match="differs"):
        load_file(f)


def test_initial_state_is_accepted_case_insensitively(tmp_path):
    f = _write(tmp_path / "c.yaml", "name: x\ninitial_state: paused\nconfig: {connector.class: increment}\n")
    assert load_file(f)[0].initial_state == "PAUSED"


def test_initial_state_defaults_to_none(tmp_path):
    f = _write(tmp_path / "c.yaml", "name: x\nconfig: {connector.class: increment}\n")
    assert load_file(f)[0].initial_state is None


def test_invalid_initial_state_is_rejected_naming_the_file(tmp_path):
    f = _write(tmp_path / "c.yaml", "name: x\ninitial_state: STARTED\nconfig: {connector.class: increment}\n")
    with pytest.raises(ConfigError, match="initial_state") as excinfo:
        load_file(f)
    assert str(f) in excinfo.value.message


def test_directories_expand_to_their_yaml_files_sorted(tmp_path):
    _write(tmp_path / "b.yml", "name: b\nconfig: {}\n")
    _write(tmp_path / "a.yaml", "name: a\nconfig: {}\n")
    _write(tmp_path / "notes.txt", "not a spec")
    assert [p.name for p in spec_files([tmp_path])] == ["a.yaml", "b.yml"]
    assert [s.name for s in load_specs([tmp_path])] == ["a", "b"]


def test_missing_file_error_names_the_file(tmp_path):
    with pytest.raises(ConfigError) as excinfo:
        load_file(tmp_path / "absent.yaml")
    assert "absent.yaml" in excinfo.value.message
