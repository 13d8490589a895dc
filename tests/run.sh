#!/usr/bin/env bash
# The whole test suite: unit, integration (real Tansu broker, real Spark) and end-to-end.
# Creates or reuses .venv and installs what the tests need. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh "rest,delta,test"
exec python -m pytest "$@"
