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
