#!/usr/bin/env bash
# Builds the Crossplane CLI (crank) that test/crossplane/ uses for
# `crossplane render`, into .cache/bin/crank.
#
# Why not `go install github.com/crossplane/crossplane/v2/cmd/crank@v2.2.1`?
# Installing with @version makes Go ask the module proxy for the module's
# version list (its deprecation check), and that request can be refused (403)
# even when the pinned version itself is served. Building from a throwaway
# module that *requires* the pinned version only ever fetches that version.
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

# A go.work further up, or GOFLAGS=-mod=vendor from the caller, would change
# how the wrapper module resolves; -buildvcs=false because the wrapper lives
# inside this project's git checkout and its VCS state is irrelevant (and
# `git` may refuse to run on CI checkouts owned by another user).
export GOWORK=off
export GOFLAGS="-buildvcs=false"

say "writing wrapper module in ${SRC#"$ROOT"/}"
rm -rf "$SRC"
mkdir -p "$SRC" "$BIN_DIR"
# The go directive is a floor: `go mod tidy` raises it to what crossplane needs.
cat >"$SRC/go.mod" <<EOF
module crankwrap

go 1.24

require $MODULE $CRANK_VERSION
EOF
# The blank import makes crank's packages part of this module's build list,
# so tidy pins every dependency to the versions crossplane itself asks for.
cat >"$SRC/tools.go" <<EOF
//go:build tools

package tools

import _ "$MODULE/cmd/crank"
EOF

say "resolving dependencies (go mod tidy)"
(cd "$SRC" && go mod tidy) || die "go mod tidy failed in ${SRC#"$ROOT"/}"

start=$SECONDS
say "building crank $CRANK_VERSION -> ${BIN#"$ROOT"/}"
# Build to a temporary name and rename, so an interrupted build never leaves a
# binary that the up-to-date check above would accept.
(cd "$SRC" && go build -trimpath \
  -ldflags "-s -w -X $MODULE/internal/version.version=$CRANK_VERSION" \
  -o "$BIN.tmp" "$MODULE/cmd/crank") || { rm -f "$BIN.tmp"; die "go build failed"; }
mv -f "$BIN.tmp" "$BIN"
printf '%s\n' "$CRANK_VERSION" >"$STAMP"

have="$(reported_version)"
[[ "$have" == "$CRANK_VERSION" ]] || die "built ${BIN#"$ROOT"/} but it reports version '$have', want $CRANK_VERSION"
say "built crank $have in $((SECONDS - start))s: ${BIN#"$ROOT"/}"
