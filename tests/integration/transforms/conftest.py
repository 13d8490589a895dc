"""The Spark query tests' session: conftest's shared local session, with sparkcat's data sources registered."""

from __future__ import annotations

import pytest

from sparkcat.spark.driver.queries import register_sources


@pytest.fixture(scope="module")
def spark(spark):
    register_sources(spark)
    return spark
