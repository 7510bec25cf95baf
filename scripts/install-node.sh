#!/usr/bin/env bash
# What the local control plane's real node needs (npm run cluster -- --real-nodes,
# and the suites of test/e2e-real), beside the kubelet and kube-proxy that
# scripts/install-kube.sh builds:
#   containerd 1.6, runc, the CNI plugins (bridge, host-local, loopback,
#   portmap), iptables, busybox-static,
#   xfsprogs (the data volumes)           Debian 12's packages (apt-get, as root)
#   coredns, pause, whoami, gosu          scripts/go/node: CoreDNS v1.14.7 with a
#                                         cluster's plugins, and small tools of
#                                         ours for the images (pause, the web
#                                         server, dropping root in entrypoints)
#   the images the node runs              scripts/build-node-images.sh
#
# A real node needs root (namespaces, cgroups, mounts, iptables in the node's
# own network namespace). Idempotent.
#
# Usage: scripts/install-node.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf 'install-node: %s\n' "$*"; }
die() { printf 'install-node: error: %s\n' "$*" >&2; exit 1; }
# shellcheck source=lib/go-tools.sh
source "$ROOT/scripts/lib/go-tools.sh"

[[ $(id -u) -eq 0 ]] || die "a real node needs root (network namespaces, cgroups, mounts)"

need=()
for pair in containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins \
  iptables:iptables /bin/busybox:busybox-static nsenter:util-linux losetup:mount xfs_growfs:xfsprogs; do
  bin="${pair%%:*}" pkg="${pair#*:}"
  if [[ "$bin" == /* ]]; then [[ -x "$bin" ]] || need+=("$pkg"); else command -v "$bin" >/dev/null 2>&1 || need+=("$pkg"); fi
done
if ((${#need[@]})); then
  say "installing ${need[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y --no-install-recommends "${need[@]}"; } ||
    die "apt-get install ${need[*]} failed"
fi
say "$(containerd --version | cut -d' ' -f1,3); $(runc --version | head -1); $(iptables --version)"

COREDNS_VERSION="$(sed -n 's|^require github.com/coredns/coredns ||p' "$ROOT/scripts/go/node/go.mod")"
build_go_family node "coredns=./cmd/coredns pause=./cmd/pause whoami=./cmd/whoami gosu=./cmd/gosu" \
  "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"
expect_version coredns "CoreDNS-${COREDNS_VERSION#v}" -version

bash "$ROOT/scripts/build-node-images.sh"
