#!/usr/bin/env bash
# Builds the Go peer the benchmark compares against,
# crossplane-contrib/function-patch-and-transform, into
# .cache/bin/function-patch-and-transform, from the Go module proxy.
#
# Built from a wrapper module (scripts/lib/go-wrapper.sh says why).
#
# Which version? The newest one the proxy serves *and* the checksum database
# vouches for. Not every tag is served (v0.6–v0.10 are refused; v0.7.0 is
# served but unknown to the checksum database, and we do not skip
# verification). The candidates are tried newest first; PEER_VERSION=vX.Y.Z
# pins one.
#
# Usage: scripts/install-peer.sh              (needs Go on PATH)
#        PEER_FORCE=1 scripts/install-peer.sh  to rebuild anyway
set -euo pipefail

MODULE="github.com/crossplane-contrib/function-patch-and-transform"
CANDIDATES="${PEER_VERSION:-v0.10.1 v0.10.0 v0.9.0 v0.8.2 v0.7.0 v0.5.0 v0.3.0}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
SRC="$CACHE/peer-src"
BIN_DIR="$CACHE/bin"
BIN="$BIN_DIR/function-patch-and-transform"
STAMP="$BIN.version"

say() { printf 'install-peer: %s\n' "$*"; }
die() { printf 'install-peer: error: %s\n' "$*" >&2; exit 1; }

if [[ -x "$BIN" && -s "$STAMP" && -z "${PEER_FORCE:-}" ]]; then
  have="$(cat "$STAMP")"
  if [[ -z "${PEER_VERSION:-}" || "$have" == "$PEER_VERSION" ]]; then
    say "function-patch-and-transform $have already built at ${BIN#"$ROOT"/}; nothing to do (PEER_FORCE=1 rebuilds)"
    exit 0
  fi
  say "found ${BIN#"$ROOT"/} at $have, but $PEER_VERSION is wanted; rebuilding"
fi

command -v go >/dev/null 2>&1 || die "go is not on PATH; install Go to build the peer"
say "using $(go version)"

# shellcheck source=lib/go-wrapper.sh
source "$ROOT/scripts/lib/go-wrapper.sh"

version=""
for v in $CANDIDATES; do
  say "is $MODULE@$v served and verified? (go mod download)"
  if out="$(go mod download -json "$MODULE@$v" 2>&1)" && ! grep -q '"Error"' <<<"$out"; then
    version="$v"
    break
  fi
  why="$(sed -n 's/.*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$out" | sed 's/.*server response: //' | head -1)"
  say "  no: ${why:-download failed}"
done
[[ -n "$version" ]] || die "none of $CANDIDATES could be downloaded and verified"
say "using $MODULE $version"

start=$SECONDS
build_from_wrapper "$SRC" peerwrap "$MODULE" "$version" "$MODULE" "$BIN"
printf '%s\n' "$version" >"$STAMP"

"$BIN" --help >/dev/null 2>&1 || die "built ${BIN#"$ROOT"/} but it does not answer --help"
say "built function-patch-and-transform $version in $((SECONDS - start))s: ${BIN#"$ROOT"/}"
