#!/usr/bin/env bash
# Builds a real Kubernetes API server and the etcd it stores into, for
# test/apiserver/, into .cache/bin/kube-apiserver and .cache/bin/etcd.
#
# Both come from published Go modules, one throwaway wrapper module per binary
# (in .cache/kube-src/), pinned to exact versions:
#
# - kube-apiserver: k8s.io/kubernetes cannot be `go install`ed (its go.mod
#   replaces every k8s.io/* staging module with a directory of its own repo).
#   The wrapper requires k8s.io/kubernetes $KUBE_VERSION and replaces each
#   staging module with its published v0.<minor>.<patch>; its main is the
#   upstream one: os.Exit(cli.Run(app.NewAPIServerCommand())).
# - etcd: the wrapper requires go.etcd.io/etcd/server/v3 $ETCD_VERSION and
#   calls etcdmain.Main, which is what etcd's own main does.
#
# Why not `go install …@version`? That makes Go ask the module proxy for the
# module's version list (its deprecation check), which can be refused even
# when the pinned version itself is served; a wrapper only fetches that version.
#
# Built binaries are also kept in a per-user cache outside the checkout
# ($KUBE_BIN_CACHE, default ~/.cache/function-platform/bin), so a fresh clone
# on the same machine (CI) copies them instead of building again.
#
# Usage: scripts/install-kube.sh                 (needs Go on PATH unless cached)
#        KUBE_FORCE=1 scripts/install-kube.sh    to rebuild anyway
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.35.8}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
SRC_ROOT="$CACHE/kube-src"
BIN_DIR="$CACHE/bin"
USER_CACHE="${KUBE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/function-platform/bin}"

say() { printf 'install-kube: %s\n' "$*"; }
die() { printf 'install-kube: error: %s\n' "$*" >&2; exit 1; }
rel() { printf '%s' "${1#"$ROOT"/}"; }

# What each binary says its version is; the build stamps it in, so a binary
# that answers with the wanted version needs no rebuild.
apiserver_version() { "$1" --version 2>/dev/null | sed -n 's/^Kubernetes *//p' || true; }
etcd_version() { "$1" --version 2>/dev/null | sed -n 's/^etcd Version: *//p' || true; }

# have NAME WANT PROBE: 0 when .cache/bin/NAME reports WANT, after copying it
# from the user cache when only that one does.
have() {
  local name="$1" want="$2" probe="$3" bin="$BIN_DIR/$1" cached
  cached="$USER_CACHE/$name-$want"
  if [[ -n "${KUBE_FORCE:-}" ]]; then return 1; fi
  if [[ -x "$bin" && "$($probe "$bin")" == "$want" ]]; then
    say "$name $want already built at $(rel "$bin"); nothing to do"
    return 0
  fi
  if [[ -x "$cached" && "$($probe "$cached")" == "$want" ]]; then
    mkdir -p "$BIN_DIR"
    cp -f "$cached" "$bin.tmp" && mv -f "$bin.tmp" "$bin"
    say "$name $want copied from the user cache $cached to $(rel "$bin")"
    return 0
  fi
  [[ -e "$bin" ]] && say "found $(rel "$bin") but it reports '$($probe "$bin")', not $want; rebuilding"
  return 1
}

# keep NAME WANT: remember a fresh build in the user cache (best effort).
keep() {
  local name="$1" want="$2"
  if mkdir -p "$USER_CACHE" 2>/dev/null && cp -f "$BIN_DIR/$name" "$USER_CACHE/$name-$want.tmp" 2>/dev/null; then
    mv -f "$USER_CACHE/$name-$want.tmp" "$USER_CACHE/$name-$want"
    say "kept a copy in $USER_CACHE/$name-$want"
  fi
}

need_go() {
  command -v go >/dev/null 2>&1 || die "go is not on PATH; install Go (>= 1.25) to build $1"
}

# A go.work further up, or GOFLAGS=-mod=vendor from the caller, would change
# how the wrapper modules resolve; -buildvcs=false because the wrappers live
# inside this project's checkout and its VCS state is irrelevant.
export GOWORK=off
export GOFLAGS="-buildvcs=false -trimpath"
# Static binaries, as upstream ships them; no C toolchain needed.
export CGO_ENABLED=0

build_apiserver() {
  local src="$SRC_ROOT/kube-apiserver" bin="$BIN_DIR/kube-apiserver" start minor staging
  have kube-apiserver "$KUBE_VERSION" apiserver_version && return 0
  need_go kube-apiserver
  say "using $(go version)"
  # v1.35.8 -> v0.35.8, the tag every staging module is published with.
  staging="v0.${KUBE_VERSION#v1.}"
  minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  say "writing wrapper module for k8s.io/kubernetes $KUBE_VERSION (staging modules $staging) in $(rel "$src")"
  rm -rf "$src"
  mkdir -p "$src" "$BIN_DIR"
  {
    printf 'module kubeapiserverwrap\n\ngo 1.25.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_VERSION"
    # Every staging module k8s.io/kubernetes lists; the build only fetches the
    # ones its packages need, but the module graph names them all.
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go \
      cloud-provider cluster-bootstrap code-generator component-base component-helpers \
      controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation \
      endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy \
      kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission \
      sample-apiserver sample-cli-plugin sample-controller; do
      printf '\tk8s.io/%s => k8s.io/%s %s\n' "$m" "$m" "$staging"
    done
    printf ')\n'
  } >"$src/go.mod"
  # The GODEBUG defaults Kubernetes builds with (its go.mod's godebug line)
  # apply only in the main module: copy them into the wrapper.
  local kmod godebug
  kmod="$(cd "$src" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  [[ -f "$kmod" ]] || die "cannot download k8s.io/kubernetes@$KUBE_VERSION from the module proxy"
  godebug="$(grep -E '^godebug ' "$kmod" || true)"
  if [[ -n "$godebug" ]]; then
    say "copying k8s.io/kubernetes's '$godebug'"
    printf '\n%s\n' "$godebug" >>"$src/go.mod"
  fi
  # cmd/kube-apiserver/apiserver.go, upstream.
  cat >"$src/main.go" <<'EOF'
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
EOF
  say "resolving dependencies (go mod tidy)"
  (cd "$src" && go mod tidy) || die "go mod tidy failed in $(rel "$src")"
  start=$SECONDS
  say "building kube-apiserver $KUBE_VERSION -> $(rel "$bin") (cold: many minutes on 2 cores)"
  local v="k8s.io/component-base/version" cv="k8s.io/client-go/pkg/version" x=""
  local major=1 gminor="$minor" date
  date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  for p in "$v" "$cv"; do
    x+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$gminor"
    x+=" -X $p.gitTreeState=clean -X $p.buildDate=$date"
  done
  (cd "$src" && go build -ldflags "-s -w$x" -o "$bin.tmp" .) || { rm -f "$bin.tmp"; die "go build of kube-apiserver failed"; }
  mv -f "$bin.tmp" "$bin"
  local got; got="$(apiserver_version "$bin")"
  [[ "$got" == "$KUBE_VERSION" ]] || die "built $(rel "$bin") but it reports '$got', want $KUBE_VERSION"
  say "built kube-apiserver $got in $((SECONDS - start))s: $(rel "$bin")"
  keep kube-apiserver "$KUBE_VERSION"
}

build_etcd() {
  local src="$SRC_ROOT/etcd" bin="$BIN_DIR/etcd" start want="${ETCD_VERSION#v}"
  have etcd "$want" etcd_version && return 0
  need_go etcd
  say "writing wrapper module for go.etcd.io/etcd/server/v3 $ETCD_VERSION in $(rel "$src")"
  rm -rf "$src"
  mkdir -p "$src" "$BIN_DIR"
  cat >"$src/go.mod" <<EOF
module etcdwrap

go 1.24.0

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
  # etcd's own main.go: etcdmain.Main(os.Args).
  cat >"$src/main.go" <<'EOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
EOF
  say "resolving dependencies (go mod tidy)"
  (cd "$src" && go mod tidy) || die "go mod tidy failed in $(rel "$src")"
  start=$SECONDS
  say "building etcd $ETCD_VERSION -> $(rel "$bin")"
  (cd "$src" && go build -ldflags "-s -w" -o "$bin.tmp" .) || { rm -f "$bin.tmp"; die "go build of etcd failed"; }
  mv -f "$bin.tmp" "$bin"
  local got; got="$(etcd_version "$bin")"
  [[ "$got" == "$want" ]] || die "built $(rel "$bin") but it reports '$got', want $want"
  say "built etcd $got in $((SECONDS - start))s: $(rel "$bin")"
  keep etcd "$want"
}

total=$SECONDS
build_etcd
build_apiserver
say "done in $((SECONDS - total))s"
