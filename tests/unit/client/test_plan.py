"""``sparkcat apply`` planning: key-level diffs and what --prune deletes (pure, no driver)."""

from __future__ import annotations

from sparkcat.client.plan import CHANGED, CREATED, UNCHANGED, KeyChange, config_diff, plan_apply, plan_prune


def test_identical_configs_have_no_diff():
    assert config_diff({"a": "1", "b": "2"}, {"b": "2", "a": "1"}) == ()


def test_diff_lists_removed_then_changed_then_added_each_sorted():
    running = {"keep": "x", "gone.b": "1", "gone.a": "2", "moved": "old"}
    wanted = {"keep": "x", "moved": "new", "new.b": "3", "new.a": "4"}
    assert [c.line() for c in config_diff(running, wanted)] == [
        "- gone.a: 2", "- gone.b: 1", "~ moved: old -> new", "+ new.a: 4", "+ new.b: 3"]


def test_signs_say_added_removed_changed():
    assert KeyChange("k", None, "v").sign == "+"
    assert KeyChange("k", "v", None).sign == "-"
    assert KeyChange("k", "a", "b").sign == "~"


def test_empty_string_value_is_a_value_not_an_absence():
    assert [c.line() for c in config_diff({"k": ""}, {"k": "v"})] == ["~ k:  -> v"]
    assert [c.sign for c in config_diff({}, {"k": ""})] == ["+"]


def test_no_running_config_means_every_key_is_added():
    changes = config_diff(None, {"b": "2", "a": "1"})
    assert [(c.sign, c.key) for c in changes] == [("+", "a"), ("+", "b")]


def test_plan_says_created_unchanged_or_changed_in_spec_order():
    wanted = {"new": {"x": "1"}, "same": {"x": "1"}, "edited": {"x": "2"}}
    running = {"same": {"x": "1"}, "edited": {"x": "1"}, "other": {"x": "9"}}
    plan = plan_apply(wanted, running)
    assert [(p.name, p.outcome) for p in plan] == [("new", CREATED), ("same", UNCHANGED), ("edited", CHANGED)]
    assert plan[1].changes == ()
    assert plan[2].changes == (KeyChange("x", "1", "2"),)
    assert plan[0].changes == (KeyChange("x", None, "1"),)


def test_a_running_connector_with_an_empty_config_is_changed_not_created():
    [plan] = plan_apply({"a": {"x": "1"}}, {"a": {}})
    assert plan.outcome == CHANGED


def test_prune_deletes_exactly_the_running_connectors_no_spec_names():
    assert plan_prune(["a", "d"], ["c", "a", "b"]) == ["b", "c"]


def test_prune_deletes_nothing_when_every_running_connector_is_specified():
    assert plan_prune(["a", "b", "extra"], ["a", "b"]) == []
    assert plan_prune([], []) == []


def test_hidden_lines_never_show_a_password_value():
    assert KeyChange("db.password", "old", "new").line(hidden=True) == "~ db.password: [hidden] -> [hidden]"
    assert KeyChange("db.password", None, "s3cret").line(hidden=True) == "+ db.password: [hidden]"
    assert KeyChange("db.password", "s3cret", None).line(hidden=True) == "- db.password: [hidden]"
