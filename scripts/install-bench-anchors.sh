#!/usr/bin/env bash
# Builds and installs what the benchmark measures function-platform against,
# and the load generator it drives them with:
#   fn-noop-go   a no-op function on function-sdk-go (scripts/go/noop-function: the
#                newest version the module proxy serves here, v0.7.1; v0.7.2 and
#                v0.8+ are refused), into .cache/bin
#   ghz          the gRPC load generator (scripts/go/ghz), into .cache/bin; it reads the
#                service from bench/ghz-proto
#   a venv with crossplane-function-sdk-python, in .cache/python-fn-venv, for the
#                Python no-op (bench/floor.py)
# Idempotent; GO_TOOLS_FORCE=1 rebuilds the Go tools.
#
# Usage: scripts/install-bench-anchors.sh   (needs Go and python3 unless cached)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf 'install-bench-anchors: %s\n' "$*"; }
die() { printf 'install-bench-anchors: error: %s\n' "$*" >&2; exit 1; }
# shellcheck source=lib/go-tools.sh
source "$ROOT/scripts/lib/go-tools.sh"

build_go_family noop-function "fn-noop-go=."
GHZ_VERSION="$(sed -n 's|^require github.com/bojand/ghz ||p' "$ROOT/scripts/go/ghz/go.mod")"
[[ -n "$GHZ_VERSION" ]] || die "scripts/go/ghz/go.mod names no ghz version"
build_go_family ghz "ghz=github.com/bojand/ghz/cmd/ghz" "-s -w -X main.version=$GHZ_VERSION"
expect_version ghz "$GHZ_VERSION" --version

PY_SDK_VERSION="${PY_SDK_VERSION:-0.15.1}"
venv="$ROOT/.cache/python-fn-venv"
if "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(0 if m.version('crossplane-function-sdk-python') == '$PY_SDK_VERSION' else 1)" 2>/dev/null; then
  say "crossplane-function-sdk-python $PY_SDK_VERSION already in .cache/python-fn-venv"
else
  say "creating .cache/python-fn-venv with crossplane-function-sdk-python $PY_SDK_VERSION"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "crossplane-function-sdk-python==$PY_SDK_VERSION"
  say "crossplane-function-sdk-python $PY_SDK_VERSION ready in .cache/python-fn-venv"
fi

