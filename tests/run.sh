#!/usr/bin/env bash
# The whole test suite: unit, integration (a real Apache Kafka broker, real Spark) and end-to-end.
# Creates or reuses .venv, resolves the JVM jars (Spark's Kafka connector, Delta, the Kafka broker)
# with Maven into .jars/, and installs what the tests need. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh "rest,delta,test"
sparkcat_need_jars kafka
sparkcat_need_jars connect  # the Kafka Connect worker of the interop tests (tests/connect_worker.py)
sparkcat_need_jars registry  # Apicurio Registry, the Schema Registry of the Avro tests (tests/schema_registry.py)
# JDBC connectors: a real PostgreSQL server (tests/postgres.py starts one per test session)
source scripts/postgres.sh && sparkcat_need_postgres
exec python -m pytest "$@"
