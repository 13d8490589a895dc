# Sourced by spark-submit.sh and tests/run.sh: makes sure Java and .venv exist and are current.
# Usage: source scripts/venv.sh EXTRAS   (EXTRAS like "rest" or "rest,test")
# Reinstalls only when setup.cfg or the extras changed, so repeated runs start fast.

sparkcat_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sparkcat_extras="${1:-rest}"

# A JDK, not only a JRE: Spark needs java, and scripts/jars.sh compiles sparkcat's JVM writers (jvm/sparkcat) with javac.
sparkcat_need_java() {
  if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "sparkcat: installing a Java 17 JDK (Spark needs a JVM, sparkcat's JVM writers javac)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
  else
    echo "sparkcat: Spark needs Java 17 or newer on PATH, and javac to build sparkcat's JVM writers (jvm/sparkcat);" \
         "install a JDK (e.g. apt-get install openjdk-17-jdk-headless)" >&2
    return 1
  fi
}

sparkcat_need_venv() {
  local py="${PYTHON:-python3}"
  local venv="$sparkcat_root/.venv"
  if [ ! -x "$venv/bin/python" ] && ! "$py" -c "import ensurepip, venv" >/dev/null 2>&1; then
    # Debian's python3 leaves venv's pip bootstrap to the python3-venv package
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "sparkcat: installing python3-venv ($py cannot create a virtual environment without it)" >&2
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
      echo "sparkcat: $py cannot create a virtual environment; install python3-venv" >&2
      return 1
    fi
  fi
  if [ ! -x "$venv/bin/python" ]; then
    echo "sparkcat: creating $venv" >&2
    "$py" -m venv "$venv"
  fi
  local stamp="$venv/.sparkcat-installed-${sparkcat_extras//,/-}"
  local want
  want="$(sha256sum < "$sparkcat_root/setup.cfg" | cut -c1-16)"
  if [ ! -f "$stamp" ] || ! grep -qx -- "$want" "$stamp" 2>/dev/null; then
    echo "sparkcat: installing sparkcat[$sparkcat_extras] into $venv" >&2
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q -e "$sparkcat_root[$sparkcat_extras]" >&2
    # Bytecode inside pyspark.zip: every Python process Spark starts imports pyspark from it and
    # would otherwise compile pyspark from source on each start. Optional: only a speed-up.
    "$venv/bin/python" "$sparkcat_root/scripts/precompile_pyspark.py" >&2 \
      || echo "sparkcat: warning: could not add bytecode to pyspark.zip; continuing without it" >&2
    echo "$want" > "$stamp"
  fi
  export PATH="$venv/bin:$PATH"
  export PYSPARK_PYTHON="$venv/bin/python"
  export PYSPARK_DRIVER_PYTHON="$venv/bin/python"
}

source "$sparkcat_root/scripts/jars.sh"
sparkcat_need_java && sparkcat_need_venv && sparkcat_need_jars spark && sparkcat_need_jars connect-host
