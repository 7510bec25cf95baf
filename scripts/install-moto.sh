#!/usr/bin/env bash
# Installs moto's server (a real implementation of the AWS RDS and S3 APIs)
# into .cache/moto-venv for the tests of the AWS path. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
MOTO_VERSION="${MOTO_VERSION:-5.2.5}"
venv=.cache/moto-venv
if [ -x "$venv/bin/moto_server" ] && "$venv/bin/python" -c "import moto, sys; sys.exit(0 if moto.__version__ == '$MOTO_VERSION' else 1)" 2>/dev/null; then
  echo "install-moto: moto $MOTO_VERSION already in $venv"
  exit 0
fi
echo "install-moto: creating $venv with moto[server] $MOTO_VERSION"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
echo "install-moto: $("$venv/bin/python" -c 'import moto; print("moto", moto.__version__)') ready: $venv/bin/moto_server"
