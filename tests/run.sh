#!/usr/bin/env bash
# The whole test suite: unit, integration (a real Apache Kafka broker, real Spark) and end-to-end.
# Creates or reuses .venv, resolves the JVM jars (Spark's Kafka connector, Delta, the Kafka broker)
# with Maven into .jars/, and installs what the tests need. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh "rest,delta,test"
# Commands the tests run: ps (the kill tests find a driver's whole session), openssl (test certificates)
for tool in ps:procps openssl:openssl; do
  if ! command -v "${tool%%:*}" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "sparkcat: installing ${tool#*:} (the tests run ${tool%%:*})" >&2
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${tool#*:}" >/dev/null
    else
      echo "sparkcat: the tests need ${tool%%:*}; install ${tool#*:}" >&2
      exit 1
    fi
  fi
done
sparkcat_need_jars kafka
sparkcat_need_jars connect  # the Kafka Connect worker of the interop tests (tests/connect_worker.py)
sparkcat_need_jars debezium  # Debezium's PostgreSQL connector, a plugin.path plugin of the interop tests
sparkcat_need_jars registry  # Apicurio Registry, the Schema Registry of the Avro tests (tests/schema_registry.py)
sparkcat_need_jars hadoop  # Hadoop's YARN and HDFS mini clusters, for the YARN tests (tests/yarn_cluster.py)
# JDBC connectors: a real PostgreSQL server (tests/postgres.py starts one per test session)
source scripts/postgres.sh && sparkcat_need_postgres
exec python -m pytest "$@"
