"""docs/reference.md is generated from the code (scripts/gen_reference.py): it must match what the code says now."""

from __future__ import annotations

import subprocess
import sys

from tests.spark_fixture import REPO


def test_reference_tables_match_the_code():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_reference.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr


def test_every_built_in_connector_and_framework_key_is_in_the_reference():
    from sparkcat.plugins import BUILTINS
    from sparkcat.config.connector import SINK_CONNECTOR_CONFIG

    text = (REPO / "docs" / "reference.md").read_text()
    for info in BUILTINS:
        assert f"### `{info.aliases[0]}`" in text
    for name in ("tasks.max", "errors.tolerance", "topics.regex", "errors.deadletterqueue.topic.name"):
        assert name in SINK_CONNECTOR_CONFIG.keys and f"| `{name}` |" in text
