#!/usr/bin/env bash
# Builds the Crossplane CLI (crank) that test/crossplane/ uses for
# `crossplane render`, into .cache/bin/crank.
#
# Built from a wrapper module (scripts/lib/go-wrapper.sh says why).
#
# Why v2.2.1? Its `render` runs functions in-process against a
# Development-runtime target, so no Docker and no Crossplane core binary
# are needed; the newer crossplane/cli module is not available to us.
#
# Usage: scripts/install-crossplane.sh        (needs Go on PATH)
#        CRANK_FORCE=1 scripts/install-crossplane.sh   to rebuild anyway
set -euo pipefail

CRANK_VERSION="${CRANK_VERSION:-v2.2.1}"
MODULE="github.com/crossplane/crossplane/v2"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
SRC="$CACHE/crank-src"
BIN_DIR="$CACHE/bin"
BIN="$BIN_DIR/crank"
STAMP="$BIN_DIR/crank.version"

say() { printf 'install-crossplane: %s\n' "$*"; }
die() { printf 'install-crossplane: error: %s\n' "$*" >&2; exit 1; }

# The version crank reports itself; we stamp it in with -ldflags below, so a
# binary that answers with the wanted version needs no rebuild.
reported_version() {
  "$BIN" version --client 2>/dev/null | sed -n 's/^Client Version: *//p' || true
}

if [[ -x "$BIN" && -z "${CRANK_FORCE:-}" ]]; then
  have="$(reported_version)"
  stamp="$(cat "$STAMP" 2>/dev/null || true)"
  # Trust what the binary says; the stamp only covers binaries built without
  # the version baked in (crank then reports an empty version).
  if [[ "$have" == "$CRANK_VERSION" || ( -z "$have" && "$stamp" == "$CRANK_VERSION" ) ]]; then
    say "crank $CRANK_VERSION already built at ${BIN#"$ROOT"/} (reports '${have:-?}', stamp '${stamp:-none}'); nothing to do"
    exit 0
  fi
  say "found ${BIN#"$ROOT"/} but it is not $CRANK_VERSION (reports '${have:-?}', stamp '${stamp:-none}'); rebuilding"
fi

command -v go >/dev/null 2>&1 || die "go is not on PATH; install Go (1.26) to build crank"
say "using $(go version)"

# shellcheck source=lib/go-wrapper.sh
source "$ROOT/scripts/lib/go-wrapper.sh"
start=$SECONDS
build_from_wrapper "$SRC" crankwrap "$MODULE" "$CRANK_VERSION" "$MODULE/cmd/crank" "$BIN" "-s -w -X $MODULE/internal/version.version=$CRANK_VERSION"
printf '%s\n' "$CRANK_VERSION" >"$STAMP"

have="$(reported_version)"
[[ "$have" == "$CRANK_VERSION" ]] || die "built ${BIN#"$ROOT"/} but it reports version '$have', want $CRANK_VERSION"
say "built crank $have in $((SECONDS - start))s: ${BIN#"$ROOT"/}"
