# Sourced after scripts/venv.sh: resolves the JVM jars a part of sparkcat needs with Maven.
# Usage: sparkcat_need_jars NAME   (NAME = spark | kafka: jvm/NAME/pom.xml -> .jars/NAME/)
# Maven caches downloads in ~/.m2; .jars/NAME is rebuilt only when its pom changed, so later
# runs start without Maven. For "spark", jars that pyspark already ships (same artifact, any
# version) are left out, so the driver's classpath has one copy of each library.

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

sparkcat_need_jars() {
  local name="$1"
  local pom="$sparkcat_root/jvm/$name/pom.xml"
  local dir="$sparkcat_root/.jars/$name"
  local want
  # setup.cfg is part of the stamp: it pins pyspark, whose own jars decide what is left out.
  want="$(cat "$pom" "$sparkcat_root/setup.cfg" | sha256sum | cut -c1-16)"
  if [ ! -f "$dir/.stamp" ] || ! grep -qx -- "$want" "$dir/.stamp" 2>/dev/null; then
    sparkcat_need_maven || return 1
    echo "sparkcat: resolving the $name jars with Maven into $dir" >&2
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    if ! mvn -q -B -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
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
    fi
    echo "$want" > "$dir.tmp/.stamp"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
  # The jar list as Spark's --jars / spark.jars want it: comma-separated absolute paths.
  local var="SPARKCAT_${name^^}_JARS"
  export "$var=$(ls "$dir"/*.jar | paste -sd, -)"
}
