"""Maven's version order and version ranges (``config/maven_version.py``), against the examples of Maven's own docs.

The examples are those of Maven's "Version Order Specification" (POM reference) and "Dependency Version Requirement
Specification"; the messages are maven-artifact 3.9.6's (the one connect-runtime 4.1.1 ships), as Connect shows them.
"""

from __future__ import annotations

import pytest

from sparkcat.config.maven_version import ComparableVersion as V, InvalidVersionSpec, VersionRange


@pytest.mark.parametrize("lower, higher", [
    ("1", "1.1"),                  # number padding
    ("1-snapshot", "1"),           # qualifier padding
    ("1", "1-sp"),
    ("1-foo2", "1-foo10"),         # switching to numeric order inside a qualifier
    ("1.foo", "1-1"),
    ("1-1", "1.1"),
    ("1-ga", "1-sp"),
    ("1-ga.1", "1-sp.1"),
    ("1-sp-1", "1-ga-1"),          # trailing nulls are removed at each hyphen: 1-sp-1 < 1-1
    ("1.0-alpha-1", "1.0-beta-1"),
    ("1.0-beta-1", "1.0-milestone-1"),
    ("1.0-milestone-1", "1.0-rc-1"),
    ("1.0-rc-1", "1.0-SNAPSHOT"),
    ("1.0-SNAPSHOT", "1.0"),
    ("1.0", "1.0-xyz"),            # an unknown qualifier sorts after a release
    ("3.6.1.CR1", "3.6.1.Final"),
    ("4.1.1", "4.1.10"),
    ("9.99", "10"),
])
def test_versions_are_ordered_as_maven_orders_them(lower, higher):
    assert V(lower) < V(higher) and V(higher) > V(lower) and V(lower) != V(higher)


@pytest.mark.parametrize("same", [
    ("1.ga", "1-ga", "1-0", "1.0", "1", "1.Final", "1-release"),   # trailing "null" values removed
    ("1.foo", "1-foo"),
    ("1-a1", "1-alpha-1"),
    ("1-cr1", "1-rc1"),
    ("3.6.1.Final", "3.6.1"),
])
def test_equal_versions(same):
    assert all(V(same[0]) == V(other) for other in same[1:])


@pytest.mark.parametrize("spec, inside, outside", [
    ("(,1.0]", ["0.9", "1.0"], ["1.0.1"]),
    ("[1.0]", ["1.0", "1"], ["1.0.1", "0.9"]),
    ("[1.2,1.3]", ["1.2", "1.2.5", "1.3"], ["1.3.1", "1.1"]),
    ("[1.0,2.0)", ["1.0", "1.5"], ["2.0", "2.1"]),
    ("[1.5,)", ["1.5", "10"], ["1.4"]),
    ("(,1.0],[1.2,)", ["1.0", "1.2", "3"], ["1.1"]),
    ("(,1.1),(1.1,)", ["1.0", "1.2"], ["1.1"]),
])
def test_ranges_contain_what_mavens_docs_say(spec, inside, outside):
    parsed = VersionRange.parse(spec)
    assert parsed.has_restrictions
    assert all(parsed.contains(v) for v in inside) and not any(parsed.contains(v) for v in outside)


def test_a_bare_version_is_a_soft_recommendation_to_maven():
    soft = VersionRange.parse("1.0")
    assert not soft.has_restrictions and str(soft) == "1.0" and soft.contains("7")


@pytest.mark.parametrize("spec, message", [
    ("[1.0", "Unbounded range: [1.0"),
    ("(1.0)", "Single version must be surrounded by []: (1.0)"),
    ("[2.0,1.0]", "Range defies version ordering: [2.0,1.0]"),
    ("[1.0,1.0)", "Range defies version ordering: [1.0,1.0)"),
    ("[1.0,1.2),(1.1,1.3]", "Ranges overlap: [1.0,1.2),(1.1,1.3]"),
    ("[1.0]]", "Only fully-qualified sets allowed in multiple set scenario: [1.0]]"),
])
def test_bad_specs_are_refused_with_mavens_messages(spec, message):
    with pytest.raises(InvalidVersionSpec) as e:
        VersionRange.parse(spec)
    assert str(e.value) == message


def test_a_range_prints_as_maven_prints_it():
    assert str(VersionRange.parse("[1.0]")) == "[1.0,1.0]"
    assert str(VersionRange.parse("[ 1.0 , 2.0 ]")) == "[1.0,2.0]"
    assert str(VersionRange.parse("(,1.0],[1.2,)")) == "(,1.0],[1.2,)"
