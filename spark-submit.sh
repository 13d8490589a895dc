#!/usr/bin/env bash
# The one way to run sparkcat: bootstraps Java and .venv, then runs jobs/connect.py
# through pyspark's own spark-submit with conf/spark-defaults.conf.
#
#   ./spark-submit.sh                                   # local[*], local stores, pipelines/*.yaml
#   ./spark-submit.sh --master yarn --deploy-mode client -- --bootstrap-servers broker:9092
#
# Options before "--" (or any option sparkcat does not know) go to spark-submit;
# sparkcat's own options (--bootstrap-servers, --state-dir, --pipelines, --rest-port,
# --worker-config, --group-id, --no-rest) may come after "--" or be mixed in.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh "rest,delta"

spark_args=()
app_args=()
master="local[*]"
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; app_args+=("$@"); break ;;
    --bootstrap-servers|--state-dir|--pipelines|--rest-port|--worker-config|--group-id|--rest-host)
      app_args+=("$1" "$2"); shift 2 ;;
    --bootstrap-servers=*|--state-dir=*|--pipelines=*|--rest-port=*|--worker-config=*|--group-id=*|--rest-host=*|--no-rest)
      app_args+=("$1"); shift ;;
    --master) master="$2"; shift 2 ;;
    --master=*) master="${1#--master=}"; shift ;;
    *) spark_args+=("$1"); shift ;;
  esac
done

ship=()
case "$master" in
  yarn*|spark://*|k8s://*)
    # Executors on other hosts need the same Python environment: ship a packed venv
    # and sparkcat itself (installed editable, so not inside the venv archive).
    mkdir -p build
    python -m pip install -q venv-pack >&2
    if [ ! -f build/sparkcat-venv.tar.gz ] || [ setup.cfg -nt build/sparkcat-venv.tar.gz ]; then
      venv-pack -p .venv -o build/sparkcat-venv.tar.gz --force >&2
    fi
    (rm -f build/sparkcat.zip && zip -qr build/sparkcat.zip sparkcat -x '*__pycache__*')
    ship=(--archives "build/sparkcat-venv.tar.gz#environment" --py-files build/sparkcat.zip
          --conf spark.pyspark.python=./environment/bin/python
          --conf spark.executorEnv.PYSPARK_PYTHON=./environment/bin/python)
    ;;
esac

# Spark's UI binds to $SPARK_LOCAL_IP, else every interface. On a local master keep it on
# the REST API's host (127.0.0.1 by default); other masters need the driver reachable.
if [ -z "${SPARK_LOCAL_IP:-}" ]; then
  ui_host="$(python -m sparkcat.ui_host "$master" ${app_args[@]+"${app_args[@]}"})"
  if [ -n "$ui_host" ]; then export SPARK_LOCAL_IP="$ui_host"; fi
fi

# The JVM that spark-submit starts would answer SIGTERM/Ctrl-C by killing the Python driver
# mid-batch. So spark-submit runs in its own session, and signals go to the Python driver
# (which writes its pid to SPARKCAT_PID_FILE): it finishes its batches, then exits.
export SPARKCAT_PID_FILE
SPARKCAT_PID_FILE="$(mktemp -t sparkcat-driver.XXXXXX)"
setsid spark-submit --master "$master" --properties-file conf/spark-defaults.conf \
  --name sparkcat --jars "$SPARKCAT_SPARK_JARS" "${ship[@]}" "${spark_args[@]}" jobs/connect.py "${app_args[@]}" &
child=$!
forward() {
  local pid
  pid="$(cat "$SPARKCAT_PID_FILE" 2>/dev/null || true)"
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; else kill -TERM "$child" 2>/dev/null || true; fi
}
trap forward TERM INT
status=0
while true; do
  wait "$child" && status=0 || status=$?
  # wait returns early (status > 128) when a trapped signal arrives; keep waiting for the driver.
  if ! kill -0 "$child" 2>/dev/null; then break; fi
done
rm -f "$SPARKCAT_PID_FILE"
exit "$status"
