#!/usr/bin/env bash
# What the tests of dumps and restores run for real: PostgreSQL 15 and
# MariaDB 10.11 servers and their dump tools from Debian's packages (installed
# with apt-get when missing, which needs root), and the AWS CLI the backup
# Job's upload step runs (awscli from PyPI, in .cache/awscli-venv: its botocore
# pin would clash with moto's boto3 in one venv).
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
AWSCLI_VERSION="${AWSCLI_VERSION:-1.45.11}"
say() { printf 'install-databases: %s\n' "$*"; }

need=()
[[ -x /usr/lib/postgresql/15/bin/postgres && -x /usr/bin/pg_dump ]] || need+=(postgresql-15 postgresql-client-15)
[[ -x /usr/sbin/mariadbd && -x /usr/bin/mysqldump ]] || need+=(mariadb-server mariadb-client)
if ((${#need[@]})); then
  as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { say "error: ${need[*]} missing, and apt-get needs root (or sudo)"; exit 1; }
    as_root=(sudo -n)
  fi
  say "installing ${need[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get install -y --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
    { "${as_root[@]}" apt-get update -qq && "${as_root[@]}" apt-get install -y --no-install-recommends "${need[@]}"; }
fi
# The packages may start a server of their own; the tests start theirs on other ports.
say "$(/usr/lib/postgresql/15/bin/postgres --version); $(/usr/sbin/mariadbd --version | sed 's/^.*Ver //')"

venv=.cache/awscli-venv
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
if [[ "$("$venv/bin/aws" --version 2>&1)" != aws-cli/$AWSCLI_VERSION* ]]; then
  say "installing awscli $AWSCLI_VERSION into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "awscli==$AWSCLI_VERSION"
fi
say "$("$venv/bin/aws" --version 2>&1) ready: $venv/bin/aws"
