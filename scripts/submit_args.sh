# Sourced by spark-submit.sh: what to ship to a cluster and which Python runs where.
# Sets the array `ship` (spark-submit options) and may append to `app_args`, from
#   $master $deploy_mode $executor_python $dry_run, app_args (sparkcat's own flags), and the user's own
#   $user_py_files $user_archives (comma lists), which join the script's: spark-submit keeps only the last
#   --py-files or --archives it is given, and a user's --archives would otherwise drop the venv.
#
# Which Python Spark runs (Spark's rule: spark.pyspark.driver.python, else spark.pyspark.python,
# for the driver; spark.pyspark.python for executors):
#   local[*]            the .venv's Python everywhere, nothing shipped.
#   client mode         the driver runs here: spark.pyspark.driver.python is this .venv's Python;
#                       executors run ./environment/bin/python from the shipped venv archive
#                       (or --executor-python PATH, a Python already installed on every host).
#   cluster mode (YARN) the driver runs in the application master, beside the executors: both use
#                       the shipped archive, and conf/ and pipelines/ are shipped as archives too,
#                       unpacked in the AM's working directory where the driver's relative paths point.

sparkcat_refuse() { echo "spark-submit.sh: $*" >&2; exit 2; }

sparkcat_has_app_flag() {
  local flag="$1" a
  for a in ${app_args[@]+"${app_args[@]}"}; do
    case "$a" in "$flag"|"$flag"=*) return 0 ;; esac
  done
  return 1
}

sparkcat_pack() {
  # The archives a cluster needs; skipped by --dry-run, which only prints the command line, and in
  # local mode, where the driver's own .venv and sparkcat/ serve every task.
  [ "$dry_run" = 1 ] && return 0
  case "$master" in local*) return 0 ;; esac
  mkdir -p build
  if [ -z "$executor_python" ]; then
    python -m pip install -q venv-pack >&2
    if [ ! -f build/sparkcat-venv.tar.gz ] || [ setup.cfg -nt build/sparkcat-venv.tar.gz ]; then
      # Without pyspark's jars (456 MB, two thirds of the archive): executors and a cluster-mode driver run in
      # Spark's own JVM (YARN ships Spark's jars as __spark_libs__) and import pyspark from the pyspark.zip Spark
      # puts on their PYTHONPATH; only this machine's driver starts a JVM from the venv's jars.
      venv-pack -p .venv -o build/sparkcat-venv.tar.gz --force --exclude 'lib/python*/site-packages/pyspark/jars/*' >&2
    fi
  fi
  # sparkcat is installed editable, so it is not inside the venv archive: ship it beside it.
  (rm -f build/sparkcat.zip && zip -qr build/sparkcat.zip sparkcat -x '*__pycache__*')
  if [ "$deploy_mode" = cluster ]; then
    (rm -f build/sparkcat-conf.zip && cd conf && zip -qr ../build/sparkcat-conf.zip .)
    (rm -f build/sparkcat-pipelines.zip && cd pipelines && zip -qr ../build/sparkcat-pipelines.zip .)
  fi
}

sparkcat_ship_args() {
  ship=()
  case "$master" in
    local*)
      if [ -n "${user_py_files:-}" ]; then ship+=(--py-files "$user_py_files"); fi
      if [ -n "${user_archives:-}" ]; then ship+=(--archives "$user_archives"); fi
      return 0 ;;
    spark://*)
      if [ "$deploy_mode" = cluster ]; then
        sparkcat_refuse "--deploy-mode cluster is not possible on a Spark standalone master: Spark refuses it" \
          "for Python applications (\"Cluster deploy mode is currently not supported for python applications" \
          "on standalone clusters\"). Use --deploy-mode client (the default) with --supervise, which restarts" \
          "a driver that dies (docs/running.md: \"Spark standalone\")."
      fi ;;
    k8s://*)
      if [ "$deploy_mode" = cluster ]; then
        sparkcat_refuse "--deploy-mode cluster on Kubernetes is not supported by spark-submit.sh: the driver pod" \
          "needs an image with sparkcat, conf/ and pipelines/ (and an upload path for local files), which this" \
          "script does not build. Use --deploy-mode client, or run spark-submit yourself with such an image."
      fi ;;
    yarn*) ;;
    *) sparkcat_refuse "unknown --master $master: use local[N], spark://HOST:PORT, yarn or k8s://..." ;;
  esac
  if [ "$deploy_mode" = cluster ] && [ "$supervise" = 1 ]; then
    sparkcat_refuse "--supervise restarts a driver running on this machine (client mode); in YARN cluster mode" \
      "YARN restarts the application master instead: set --conf spark.yarn.maxAppAttempts=N."
  fi
  local py="./environment/bin/python" archives=()
  if [ -n "$executor_python" ]; then py="$executor_python"; else archives+=("build/sparkcat-venv.tar.gz#environment"); fi
  ship+=(--py-files "build/sparkcat.zip${user_py_files:+,$user_py_files}" --conf "spark.pyspark.python=$py")
  if [ "$deploy_mode" = cluster ]; then
    archives+=("build/sparkcat-conf.zip#conf" "build/sparkcat-pipelines.zip#pipelines")
    ship+=(--conf "spark.yarn.appMasterEnv.PYSPARK_PYTHON=$py" --conf "spark.executorEnv.PYSPARK_PYTHON=$py")
    # The driver's relative paths resolve in the AM's working directory, where the archives are unpacked.
    sparkcat_has_app_flag --worker-config || app_args+=(--worker-config conf/worker.yaml)
    sparkcat_has_app_flag --pipelines || app_args+=(--pipelines pipelines)
  else
    ship+=(--conf "spark.pyspark.driver.python=$PWD/.venv/bin/python" --conf "spark.executorEnv.PYSPARK_PYTHON=$py")
  fi
  if [ -n "${user_archives:-}" ]; then archives+=("$user_archives"); fi
  if [ ${#archives[@]} -gt 0 ]; then
    local IFS=,
    ship+=(--archives "${archives[*]}")
  fi
}
