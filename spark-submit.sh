#!/usr/bin/env bash
# The one way to run sparkcat: bootstraps Java and .venv, then runs jobs/connect.py
# through pyspark's own spark-submit with conf/spark-defaults.conf.
#
#   ./spark-submit.sh                                   # local[*], local stores, pipelines/*.yaml
#   ./spark-submit.sh --master yarn --deploy-mode client -- --bootstrap-servers broker:9092
#
#   ./spark-submit.sh --master spark://HOST:7077 --supervise -- --bootstrap-servers broker:9092
#   ./spark-submit.sh --master yarn --deploy-mode cluster --dry-run   # print the spark-submit command
#
# Options before "--" (or any option sparkcat does not know) go to spark-submit; --jars, --py-files and
# --archives are added to the script's own (spark-submit keeps only the last of each);
# sparkcat's own options (--bootstrap-servers, --state-dir, --pipelines, --rest-port,
# --worker-config, --group-id, --no-rest) may come after "--" or be mixed in.
# This script's own options (docs/running.md "Spark clusters"):
#   --executor-python PATH  executors run this Python, installed on every host (no venv archive shipped)
#   --supervise             client mode: restart the driver when it dies (non-zero exit); it resumes
#   --dry-run               print the spark-submit command line and exit (ships nothing)
# Which Python runs where, and what cluster mode ships: scripts/submit_args.sh.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh "rest,delta"
# The Kafka Connect host of plugin.path (built by venv.sh): the driver runs from build/sparkcat.zip, so it is told
# where the host's jars are; executors get their paths from the driver with each Java task's batch.
export SPARKCAT_CONNECT_HOST_DIR="${SPARKCAT_CONNECT_HOST_DIR:-$PWD/.jars/connect-host}"

spark_args=()
app_args=()
master="local[*]"
deploy_mode=client
executor_python=""
supervise=0
dry_run=0
user_jars=""
user_py_files=""
user_archives=""
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; app_args+=("$@"); break ;;
    --bootstrap-servers|--state-dir|--pipelines|--rest-port|--worker-config|--group-id|--rest-host)
      app_args+=("$1" "$2"); shift 2 ;;
    --bootstrap-servers=*|--state-dir=*|--pipelines=*|--rest-port=*|--worker-config=*|--group-id=*|--rest-host=*|--no-rest)
      app_args+=("$1"); shift ;;
    --master) master="$2"; shift 2 ;;
    --master=*) master="${1#--master=}"; shift ;;
    --deploy-mode) deploy_mode="$2"; shift 2 ;;
    --deploy-mode=*) deploy_mode="${1#--deploy-mode=}"; shift ;;
    --executor-python) executor_python="$2"; shift 2 ;;
    --executor-python=*) executor_python="${1#--executor-python=}"; shift ;;
    --jars) user_jars="${user_jars:+$user_jars,}$2"; shift 2 ;;
    --jars=*) user_jars="${user_jars:+$user_jars,}${1#--jars=}"; shift ;;
    --py-files) user_py_files="${user_py_files:+$user_py_files,}$2"; shift 2 ;;
    --py-files=*) user_py_files="${user_py_files:+$user_py_files,}${1#--py-files=}"; shift ;;
    --archives) user_archives="${user_archives:+$user_archives,}$2"; shift 2 ;;
    --archives=*) user_archives="${user_archives:+$user_archives,}${1#--archives=}"; shift ;;
    --supervise) supervise=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    *) spark_args+=("$1"); shift ;;
  esac
done
case "$deploy_mode" in client|cluster) ;; *) echo "spark-submit.sh: --deploy-mode is client or cluster, not $deploy_mode" >&2; exit 2 ;; esac

source scripts/submit_args.sh
sparkcat_ship_args
sparkcat_pack
cmd=(spark-submit --master "$master" --deploy-mode "$deploy_mode" --properties-file conf/spark-defaults.conf
     --name sparkcat --jars "$SPARKCAT_SPARK_JARS${user_jars:+,$user_jars}" ${ship[@]+"${ship[@]}"} ${spark_args[@]+"${spark_args[@]}"}
     jobs/connect.py ${app_args[@]+"${app_args[@]}"})
if [ "$dry_run" = 1 ]; then
  printf '%q ' "${cmd[@]}"; echo
  exit 0
fi

# Spark's UI binds to $SPARK_LOCAL_IP, else every interface. On a local master keep it on
# the REST API's host (127.0.0.1 by default); other masters need the driver reachable.
if [ -z "${SPARK_LOCAL_IP:-}" ]; then
  ui_host="$(python -m sparkcat.ui_host "$master" ${app_args[@]+"${app_args[@]}"})"
  if [ -n "$ui_host" ]; then export SPARK_LOCAL_IP="$ui_host"; fi
fi

# The JVM that spark-submit starts would answer SIGTERM/Ctrl-C by killing the Python driver
# mid-batch. So spark-submit runs in its own session, and signals go to the Python driver
# (which writes its pid to SPARKCAT_PID_FILE, default a temp file): it finishes its batches, then exits.
export SPARKCAT_PID_FILE
SPARKCAT_PID_FILE="${SPARKCAT_PID_FILE:-$(mktemp -t sparkcat-driver.XXXXXX)}"
stopping=0
forward() {
  local pid
  stopping=1
  pid="$(cat "$SPARKCAT_PID_FILE" 2>/dev/null || true)"
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; else kill -TERM "$child" 2>/dev/null || true; fi
}
trap forward TERM INT
restarts=0
while true; do
  : > "$SPARKCAT_PID_FILE"
  setsid "${cmd[@]}" &
  child=$!
  status=0
  while true; do
    wait "$child" && status=0 || status=$?
    # wait returns early (status > 128) when a trapped signal arrives; keep waiting for the driver.
    if ! kill -0 "$child" 2>/dev/null; then break; fi
  done
  # --supervise (client mode): a driver that died (non-zero exit, not stopped by us) starts again
  # and resumes from its stores and checkpoints, as Spark's --supervise does in cluster mode.
  # Status 2 is a refused configuration or command line: starting again would not help.
  if [ "$supervise" = 1 ] && [ "$stopping" = 0 ] && [ "$status" != 0 ] && [ "$status" != 2 ]; then
    restarts=$((restarts + 1))
    echo "$(date -u "+%F %T") spark-submit.sh: the driver exited with status $status; restarting it (restart $restarts) in 2 s" >&2
    sleep 2
    [ "$stopping" = 0 ] && continue
  fi
  break
done
rm -f "$SPARKCAT_PID_FILE"
exit "$status"
