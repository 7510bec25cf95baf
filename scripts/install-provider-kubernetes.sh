#!/usr/bin/env bash
# Builds provider-kubernetes into .cache/bin/provider-kubernetes, for the
# local control plane's claims mode (it runs out of cluster, beside Crossplane).
#
# Which version? The newest that builds from what the module proxy serves:
# v1.4.x needs a crossplane-runtime pseudo-version the proxy refuses, and
# v1.3.1 a github.com/nebius/gosdk it refuses; v0.17.1 builds. It serves the
# cluster-scoped kubernetes.crossplane.io Object (v1alpha2) that claims mode
# composes; its CRDs come from the same module (package/crds).
#
# Usage: scripts/install-provider-kubernetes.sh  (needs Go on PATH unless cached)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf 'install-provider-kubernetes: %s\n' "$*"; }
die() { printf 'install-provider-kubernetes: error: %s\n' "$*" >&2; exit 1; }
# shellcheck source=lib/go-tools.sh
source "$ROOT/scripts/lib/go-tools.sh"
build_go_family provider-kubernetes "provider-kubernetes=github.com/crossplane-contrib/provider-kubernetes/cmd/provider" "-s -w"

# Its CRDs, from the same module, for the control plane to apply.
MODULE="github.com/crossplane-contrib/provider-kubernetes"
VERSION="$(sed -n "s|^require $MODULE ||p" "$ROOT/scripts/go/provider-kubernetes/go.mod")"
CRDS="$ROOT/.cache/provider-kubernetes-crds"
if [[ "$(cat "$CRDS/.version" 2>/dev/null)" != "$VERSION" ]]; then
  src="$(cd "$ROOT/scripts/go/provider-kubernetes" && go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
  [[ -d "$src/package/crds" ]] || die "cannot find package/crds of $MODULE@$VERSION"
  rm -rf "$CRDS" && mkdir -p "$CRDS"
  cp "$src"/package/crds/*.yaml "$CRDS/" && chmod u+w "$CRDS"/*.yaml
  printf '%s\n' "$VERSION" >"$CRDS/.version"
  say "copied provider-kubernetes $VERSION's CRDs into .cache/provider-kubernetes-crds"
fi
