#!/bin/sh
# The entrypoint of the postgres stand-in image (function-platform's local
# control plane): the contract of the official image's docker-entrypoint.sh,
# written for busybox sh. Environment: POSTGRES_PASSWORD (required unless
# POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_USER (default postgres),
# POSTGRES_DB (default the user), PGDATA (default /var/lib/postgresql/data),
# POSTGRES_INITDB_ARGS, POSTGRES_HOST_AUTH_METHOD (default scram-sha-256);
# scripts in /docker-entrypoint-initdb.d (*.sh, *.sql) run once, on a new
# data directory. Started as root it drops to the postgres user (999).
set -eu

if [ "${1:-postgres}" != postgres ] && [ "${1#-}" = "${1:-}" ]; then
  exec "$@"
fi
[ "${1:-}" = postgres ] && shift

: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
export PGDATA

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec gosu postgres "$0" postgres "$@"
fi

mkdir -p "$(dirname "$PGDATA")"
# As the official image does at every start: a volume's fsGroup handling may have opened the mode up.
[ -d "$PGDATA" ] && chmod 700 "$PGDATA" 2>/dev/null || true

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
    echo "Error: Database is uninitialized and superuser password is not specified." >&2
    echo "       Set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust)." >&2
    exit 1
  fi
  # Initialized beside PGDATA and moved into place at the end (one rename on the same volume), so a
  # container stopped half-way never leaves a data directory that a restart would take as whole
  # (in place when PGDATA is itself a mount point, as the official image does).
  init="$PGDATA.init"
  if grep -q " $PGDATA " /proc/self/mountinfo; then init="$PGDATA"; else rm -rf "$init"; fi
  mkdir -p "$init"
  chmod 700 "$init"
  pwfile="$(mktemp)"
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of flags
  initdb -D "$init" --username="$POSTGRES_USER" --pwfile="$pwfile" ${POSTGRES_INITDB_ARGS:-} >/dev/null
  rm -f "$pwfile"
  printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >>"$init/pg_hba.conf"
  # The official image's socket directory, and /tmp where these binaries' clients look by default.
  printf "\nunix_socket_directories = '/var/run/postgresql,/tmp'\n" >>"$init/postgresql.conf"

  # A server on the socket only, to create the database and run the init scripts.
  pg_ctl -D "$init" -o "-c listen_addresses='' -p 5432" -w start >/dev/null
  export PGPASSWORD="${POSTGRES_PASSWORD:-}"
  psql="psql -v ON_ERROR_STOP=1 --no-psqlrc -h /var/run/postgresql -p 5432 -U $POSTGRES_USER"
  if [ "$POSTGRES_DB" != postgres ]; then
    $psql -d postgres -qc "CREATE DATABASE \"$POSTGRES_DB\""
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "running $f"; . "$f" ;;
      *.sql) echo "running $f"; $psql -d "$POSTGRES_DB" -f "$f" ;;
    esac
  done
  unset PGPASSWORD
  pg_ctl -D "$init" -m fast -w stop >/dev/null
  if [ "$init" != "$PGDATA" ]; then
    rmdir "$PGDATA" 2>/dev/null || true
    mv "$init" "$PGDATA"
  fi
  echo "PostgreSQL init process complete; ready for start up."
fi

exec postgres "$@"
