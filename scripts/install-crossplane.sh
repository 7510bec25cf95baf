#!/usr/bin/env bash
# Builds the Crossplane side of the tests into .cache/bin, from one wrapper
# module (scripts/go/crossplane) so that they share compiled packages:
#   crank        the Crossplane CLI v2.2.1 (render, validate, xpkg build/push/install, beta trace),
#                also .cache/cli/crossplane, the name the README uses
#   crossplane   Crossplane core v2.2.1 (core init, core start) for the local control plane
#   crane        go-containerregistry's image tool, and the in-memory OCI
#                registry of the local control plane (crane registry serve)
#   xp-certs     ours: certificates made with the templates of Crossplane's initializer
#   xp-fnclient  ours: RunFunction dialled the way Crossplane's function runner dials
#   xp-image     ours: the runtime image assembled from layer tarballs (go-containerregistry)
#
# Why v2.2.1? Its crank renders functions in-process (no Docker, no core
# binary); the newer crossplane/cli module is not available to us, and core
# stays on the CLI's minor version. The Kubernetes libraries are raised to the
# patch release scripts/go/kube builds (v0.35.8), so both families share them.
#
# Usage: scripts/install-crossplane.sh                   (needs Go on PATH unless cached)
#        GO_TOOLS_FORCE=1 scripts/install-crossplane.sh  to rebuild anyway
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf 'install-crossplane: %s\n' "$*"; }
die() { printf 'install-crossplane: error: %s\n' "$*" >&2; exit 1; }
# shellcheck source=lib/go-tools.sh
source "$ROOT/scripts/lib/go-tools.sh"

MODULE="github.com/crossplane/crossplane/v2"
VERSION="$(sed -n "s|^[[:space:]]*$MODULE ||p" "$ROOT/scripts/go/crossplane/go.mod" | head -1)"
[[ -n "$VERSION" ]] || die "scripts/go/crossplane/go.mod names no $MODULE version"
CR="github.com/google/go-containerregistry/cmd"
build_go_family crossplane \
  "crank=$MODULE/cmd/crank crossplane=$MODULE/cmd/crossplane crane=$CR/crane xp-certs=./cmd/xp-certs xp-fnclient=./cmd/xp-fnclient xp-image=./cmd/xp-image" \
  "-s -w -X $MODULE/internal/version.version=$VERSION"
expect_version crank "Client Version: $VERSION" version --client
expect_version crossplane "$VERSION" --version

# The CLI under the name the README and Crossplane's docs use: .cache/cli/crossplane
# (on PATH: export PATH=$PWD/.cache/cli:$PATH). .cache/bin/crossplane is Crossplane
# core, which the local control plane runs; the two binaries share a name upstream.
mkdir -p "$ROOT/.cache/cli"
ln -sfn ../bin/crank "$ROOT/.cache/cli/crossplane"

# Crossplane's own CRDs and webhook configurations (the Usage webhook), for
# `crossplane core init` in the local control plane: the cluster/ folders of the
# very module the binaries were built from.
CRDS="$ROOT/.cache/crossplane-crds"
HOOKS="$ROOT/.cache/crossplane-webhookconfigurations"
if [[ "$(cat "$CRDS/.version" 2>/dev/null)" != "$VERSION" || "$(cat "$HOOKS/.version" 2>/dev/null)" != "$VERSION" ]]; then
  src="$(cd "$ROOT/scripts/go/crossplane" && go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
  [[ -d "$src/cluster/crds" ]] || die "cannot find cluster/crds of $MODULE@$VERSION"
  [[ -d "$src/cluster/webhookconfigurations" ]] || die "cannot find cluster/webhookconfigurations of $MODULE@$VERSION"
  rm -rf "$CRDS" "$HOOKS" && mkdir -p "$CRDS" "$HOOKS"
  cp "$src"/cluster/crds/*.yaml "$CRDS/" && chmod u+w "$CRDS"/*.yaml
  cp "$src"/cluster/webhookconfigurations/*.yaml "$HOOKS/" && chmod u+w "$HOOKS"/*.yaml
  printf '%s\n' "$VERSION" >"$CRDS/.version"
  printf '%s\n' "$VERSION" >"$HOOKS/.version"
  say "copied Crossplane $VERSION's CRDs and webhook configurations into .cache/"
fi
