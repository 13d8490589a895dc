# Sourced after scripts/venv.sh: resolves the JVM jars a part of sparkcat needs with Maven.
# Usage: sparkcat_need_jars NAME   (NAME = spark | kafka | connect | registry | connect-host | debezium | hadoop:
#                                   jvm/NAME/pom.xml -> .jars/NAME/)
# Maven caches downloads in ~/.m2; .jars/NAME is rebuilt only when its pom changed, so later
# runs start without Maven. For "spark", jars that pyspark already ships (same artifact, any
# version) are left out, so the driver's classpath has one copy of each library, and sparkcat's
# own JVM code (jvm/sparkcat: the kafka copy's timestamp interceptor and exactly-once writer) is
# compiled and unit-tested with Maven and added; its pom and sources are part of the stamp, so an
# edit rebuilds it.

sparkcat_need_maven() {
  if command -v mvn >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "sparkcat: installing Maven (it resolves Spark's Kafka connector and Delta Lake)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null
  else
    echo "sparkcat: Maven is needed once to fetch the JVM jars; install it (e.g. apt-get install maven)" >&2
    return 1
  fi
}

# The files sparkcat's own JVM module is built from, in a stable order (part of the spark stamp).
sparkcat_jvm_sources() {
  (cd "$sparkcat_root/jvm/sparkcat" && find pom.xml src -type f | LC_ALL=C sort)
}

# Compile and test jvm/sparkcat into DIR (Maven; Spark and kafka-clients are provided by the driver's classpath).
sparkcat_build_jvm() {
  local dir="$1" module="$sparkcat_root/jvm/sparkcat"
  if ! command -v javac >/dev/null 2>&1; then
    echo "sparkcat: javac is needed to build $module; install a JDK (e.g. apt-get install openjdk-17-jdk-headless)" >&2
    return 1
  fi
  if ! mvn -q -B -f "$module/pom.xml" package -Dsparkcat.build.dir="$dir/build" >&2; then
    echo "sparkcat: Maven could not build $module" >&2
    return 1
  fi
  mv "$dir/build/sparkcat-jvm.jar" "$dir/" && rm -rf "$dir/build"
}

# Build jvm/registry (Apicurio Registry as a runnable Quarkus app, for the Avro tests) into DIR:
# registry-runner.jar plus its lib/ (the runner's manifest names lib/ on its class path).
sparkcat_build_registry() {
  local dir="$1" module="$sparkcat_root/jvm/registry"
  if ! mvn -q -B -f "$module/pom.xml" package -Dsparkcat.build.dir="$dir/build" >&2; then
    echo "sparkcat: Maven could not build $module" >&2
    return 1
  fi
  mv "$dir/build/registry-runner.jar" "$dir/build/lib" "$dir/" && rm -rf "$dir/build"
}

# Build jvm/connect-host (the host of Kafka Connect's Java plugins) into DIR with connect-runtime's jars. They stay
# off Spark's class path: sparkcat loads them in a class loader of their own (sparkcat/spark/driver/connect_host.py).
sparkcat_build_connect_host() {
  local dir="$1" module="$sparkcat_root/jvm/connect-host"
  if ! mvn -q -B -f "$module/pom.xml" package dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$dir" -Dsparkcat.build.dir="$dir/build" >&2; then
    echo "sparkcat: Maven could not build $module" >&2
    return 1
  fi
  mv "$dir/build/sparkcat-connect-host.jar" "$dir/" && rm -rf "$dir/build"
}

sparkcat_need_jars() {
  local name="$1"
  local pom="$sparkcat_root/jvm/$name/pom.xml"
  local dir="$sparkcat_root/.jars/$name"
  local want
  # setup.cfg is part of the stamp: it pins pyspark, whose own jars decide what is left out.
  if [ "$name" = spark ]; then
    want="$( (cat "$pom" "$sparkcat_root/setup.cfg"; cd "$sparkcat_root/jvm/sparkcat" \
             && sparkcat_jvm_sources | while read -r f; do echo "$f"; cat "$f"; done) \
           | sha256sum | cut -c1-16)"
  elif [ "$name" = registry ] || [ "$name" = connect-host ]; then
    want="$( (cd "$sparkcat_root/jvm/$name" && find pom.xml src -type f | LC_ALL=C sort \
             | while read -r f; do echo "$f"; cat "$f"; done) | sha256sum | cut -c1-16)"
  else
    want="$(cat "$pom" "$sparkcat_root/setup.cfg" | sha256sum | cut -c1-16)"
  fi
  if [ ! -f "$dir/.stamp" ] || ! grep -qx -- "$want" "$dir/.stamp" 2>/dev/null; then
    sparkcat_need_maven || return 1
    echo "sparkcat: resolving the $name jars with Maven into $dir" >&2
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    if [ "$name" = registry ]; then
      if ! sparkcat_build_registry "$dir.tmp"; then rm -rf "$dir.tmp"; return 1; fi
    elif [ "$name" = connect-host ]; then
      if ! sparkcat_build_connect_host "$dir.tmp"; then rm -rf "$dir.tmp"; return 1; fi
    elif ! mvn -q -B -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$dir.tmp" >&2; then
      echo "sparkcat: Maven could not resolve $pom" >&2
      rm -rf "$dir.tmp"
      return 1
    fi
    if [ "$name" = spark ]; then
      local shipped jar artifact
      shipped="$("$sparkcat_root/.venv/bin/python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
      for jar in "$dir.tmp"/*.jar; do
        artifact="$(basename "$jar" | sed -E 's/-[0-9][^-]*(-[^-]+)?\.jar$//')"
        if compgen -G "$shipped/$artifact-[0-9]*.jar" >/dev/null; then rm -f "$jar"; fi
      done
      if ! sparkcat_build_jvm "$dir.tmp"; then rm -rf "$dir.tmp"; return 1; fi
    fi
    echo "$want" > "$dir.tmp/.stamp"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
  # The jar list as Spark's --jars / spark.jars want it: comma-separated absolute paths.
  # registry: a runnable jar; connect-host: loaded apart from Spark's class path; debezium: a Connect plugin's
  # directory (tests copy it onto a plugin.path); hadoop: the YARN and HDFS mini clusters' own JVM
  # (tests/yarn_cluster.py). None is a list for Spark.
  if [ "$name" = registry ] || [ "$name" = connect-host ] || [ "$name" = debezium ] || [ "$name" = hadoop ]; then
    return 0
  fi
  local var="SPARKCAT_${name^^}_JARS"
  export "$var=$(ls "$dir"/*.jar | paste -sd, -)"
}
