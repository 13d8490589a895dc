"""Paths derived from user input stay under their root; connector files stay under the allowed dirs."""

from __future__ import annotations

import pytest

from sparkcat.errors import ConfigError
from sparkcat.policy.paths import allowed_path_problem, check_allowed_path, safe_join


@pytest.mark.parametrize("part", ["..", ".", "", "../x", "a/../../x", "/etc"])
def test_safe_join_refuses_parts_that_leave_the_root(tmp_path, part):
    with pytest.raises(ConfigError):
        safe_join(tmp_path, part)


def test_safe_join_accepts_a_plain_component(tmp_path):
    assert safe_join(tmp_path, "a%2F..") == tmp_path.resolve() / "a%2F.."


def test_allowed_paths_resolve_dot_dot_and_symlinks(tmp_path):
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "link").symlink_to(outside, target_is_directory=True)
    dirs = [str(allowed)]
    assert allowed_path_problem(str(allowed / "sub" / "f.txt"), dirs) is None
    assert allowed_path_problem(str(allowed / ".." / "outside" / "f.txt"), dirs) is not None
    assert allowed_path_problem(str(allowed / "link" / "f.txt"), dirs) is not None
    assert allowed_path_problem(str(tmp_path / "allowed-not" / "f"), dirs) is not None  # a prefix is not a parent
    assert "file.allowed.dirs is empty" in allowed_path_problem("/x", [])
    with pytest.raises(ConfigError) as e:
        check_allowed_path("file", "/etc/passwd", dirs)
    assert e.value.errors == {"file": [e.value.message[len("file: "):]]} and str(allowed) in e.value.message
