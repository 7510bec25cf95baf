#!/usr/bin/env bash
# Builds the Kubernetes side of the tests into .cache/bin:
#   etcd                          v3.6.8   (scripts/go/etcd: etcd's own main over go.etcd.io/etcd/server/v3)
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy
#                                 v1.35.8  (scripts/go/kube: k8s.io/kubernetes with every staging
#                                           module replaced by its published v0.35.8; one build:
#                                           the kubelet and kube-proxy of the real node share it)
#   kwok                          v0.7.0   (scripts/go/kwok: fake nodes and pods for the local control plane)
#
# scripts/lib/go-tools.sh says how wrapper modules, stamps and the per-user
# cache work. To move to another version, change the family's go.mod, run
# `go mod tidy` in it, and the next run rebuilds.
#
# Usage: scripts/install-kube.sh                   (needs Go on PATH unless cached)
#        GO_TOOLS_FORCE=1 scripts/install-kube.sh  to rebuild anyway
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf 'install-kube: %s\n' "$*"; }
die() { printf 'install-kube: error: %s\n' "$*" >&2; exit 1; }
# shellcheck source=lib/go-tools.sh
source "$ROOT/scripts/lib/go-tools.sh"

KUBE_VERSION="$(sed -n 's|^require k8s.io/kubernetes ||p' "$ROOT/scripts/go/kube/go.mod")"
[[ -n "$KUBE_VERSION" ]] || die "scripts/go/kube/go.mod names no k8s.io/kubernetes version"
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
# What `kube-* --version` reports; upstream's build stamps the same variables.
stamp=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done

total=$SECONDS
build_go_family etcd "etcd=." "-s -w"
expect_version etcd "etcd Version: 3.6.8" --version
kube_cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
build_go_family kube "$(for c in "${kube_cmds[@]}"; do printf '%s=k8s.io/kubernetes/cmd/%s ' "$c" "$c"; done)" "-s -w$stamp"
for b in "${kube_cmds[@]}"; do expect_version "$b" "Kubernetes $KUBE_VERSION" --version; done
build_go_family kwok "kwok=sigs.k8s.io/kwok/cmd/kwok" "-s -w"
expect_version kwok "kwok version v0.7.0" --version
say "done in $((SECONDS - total))s"
