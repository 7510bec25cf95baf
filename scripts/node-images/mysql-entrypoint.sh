#!/bin/sh
# The entrypoint of the mysql stand-in image (function-platform's local
# control plane): the contract of the official mysql image's entrypoint,
# written for busybox sh, in front of MariaDB 10.11 from Debian (MariaDB
# stands in for MySQL: it speaks its protocol and SQL, and its mysql and
# mysqldump clients are what the backup Jobs call). Environment:
# MYSQL_ROOT_PASSWORD, MYSQL_ALLOW_EMPTY_PASSWORD or MYSQL_RANDOM_ROOT_PASSWORD
# (one of them), MYSQL_DATABASE, MYSQL_USER and MYSQL_PASSWORD; scripts in
# /docker-entrypoint-initdb.d (*.sh, *.sql) run once, on a new data
# directory. Started as root it drops to the mysql user (999).
set -eu

if [ "${1:-mysqld}" != mysqld ] && [ "${1#-}" = "${1:-}" ]; then
  exec "$@"
fi
[ "${1:-}" = mysqld ] && shift

DATADIR=/var/lib/mysql
SOCKET=/var/run/mysqld/mysqld.sock

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$DATADIR" /var/run/mysqld
  chown -R mysql:mysql "$DATADIR" /var/run/mysqld
  exec gosu mysql "$0" mysqld "$@"
fi

if [ ! -d "$DATADIR/mysql" ]; then
  if [ -z "${MYSQL_ROOT_PASSWORD:-}" ] && [ -z "${MYSQL_ALLOW_EMPTY_PASSWORD:-}" ] && [ -z "${MYSQL_RANDOM_ROOT_PASSWORD:-}" ]; then
    echo "error: database is uninitialized and password option is not specified" >&2
    echo "  You need to specify one of MYSQL_ROOT_PASSWORD, MYSQL_ALLOW_EMPTY_PASSWORD and MYSQL_RANDOM_ROOT_PASSWORD" >&2
    exit 1
  fi
  mariadb-install-db --datadir="$DATADIR" --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve --cross-bootstrap >/dev/null
  mariadbd --datadir="$DATADIR" --skip-networking --socket="$SOCKET" &
  pid=$!
  i=0
  until mariadb --protocol=socket --socket="$SOCKET" -uroot -e 'SELECT 1' >/dev/null 2>&1; do
    i=$((i + 1))
    [ "$i" -lt 60 ] || { echo "error: the temporary server did not start" >&2; exit 1; }
    sleep 1
  done
  root_password="${MYSQL_ROOT_PASSWORD:-}"
  if [ -n "${MYSQL_RANDOM_ROOT_PASSWORD:-}" ]; then
    # Never printed: nobody needs it, the application has its own account.
    root_password="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
  fi
  sql="mariadb --protocol=socket --socket=$SOCKET -uroot"
  quote() { printf '%s' "$1" | sed "s/\\\\/\\\\\\\\/g; s/'/\\\\'/g"; }
  {
    # MariaDB keeps accounts in mysql.global_priv (mysql.user is a view there).
    echo "DELETE FROM mysql.global_priv WHERE User NOT IN ('mariadb.sys', 'root') OR Host != 'localhost';"
    echo "FLUSH PRIVILEGES;"
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY '$(quote "$root_password")';"
    echo "CREATE USER 'root'@'%' IDENTIFIED BY '$(quote "$root_password")';"
    echo "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;"
    if [ -n "${MYSQL_DATABASE:-}" ]; then echo "CREATE DATABASE IF NOT EXISTS \`$MYSQL_DATABASE\`;"; fi
    if [ -n "${MYSQL_USER:-}" ] && [ -n "${MYSQL_PASSWORD:-}" ]; then
      echo "CREATE USER '$MYSQL_USER'@'%' IDENTIFIED BY '$(quote "$MYSQL_PASSWORD")';"
      if [ -n "${MYSQL_DATABASE:-}" ]; then echo "GRANT ALL ON \`$MYSQL_DATABASE\`.* TO '$MYSQL_USER'@'%';"; fi
    fi
    echo "FLUSH PRIVILEGES;"
  } | $sql
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "running $f"; . "$f" ;;
      *.sql) echo "running $f"; MYSQL_PWD="$root_password" $sql ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} <"$f" ;;
    esac
  done
  kill "$pid"
  wait "$pid" || true
  echo "MySQL init process done. Ready for start up."
fi

exec mariadbd --datadir="$DATADIR" "$@"
