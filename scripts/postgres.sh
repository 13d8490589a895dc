# Sourced by tests/run.sh: makes sure PostgreSQL's server binaries (initdb, pg_ctl, postgres) exist.
# The JDBC connectors' tests and benchmark start their own server from them (tests/postgres.py).
# Usage: sparkcat_need_postgres   (installs Debian's postgresql package as root when missing)

sparkcat_pg_bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; fi
  done | sort -V | tail -n 1
}

sparkcat_need_postgres() {
  if [ -n "$(sparkcat_pg_bindir)" ] || command -v initdb >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "sparkcat: installing PostgreSQL (the JDBC connectors' tests start a server of their own)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    echo "sparkcat: the JDBC tests need PostgreSQL's server binaries (initdb, pg_ctl);" \
         "install them (e.g. apt-get install postgresql)" >&2
    return 1
  fi
}
