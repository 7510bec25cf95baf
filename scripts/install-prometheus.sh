#!/usr/bin/env bash
# Builds promtool, Prometheus's own rule checker and rule unit-test runner,
# into .cache/bin, from the wrapper module scripts/go/prometheus (the
# Prometheus module as the module proxy serves it: v0.316.0 is Prometheus
# 3.16.0, whose Go module tags read v0.3MM.P). The tests of a Database's
# alerts write its PrometheusRule out as a rule file and have promtool
# evaluate it over series, with Prometheus's PromQL engine and rule manager.
# Idempotent; GO_TOOLS_FORCE=1 rebuilds.
#
# Usage: scripts/install-prometheus.sh   (needs Go unless cached)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf 'install-prometheus: %s\n' "$*"; }
die() { printf 'install-prometheus: error: %s\n' "$*" >&2; exit 1; }
# shellcheck source=lib/go-tools.sh
source "$ROOT/scripts/lib/go-tools.sh"

VERSION="$(sed -n 's|^require github.com/prometheus/prometheus ||p' "$ROOT/scripts/go/prometheus/go.mod")"
[[ -n "$VERSION" ]] || die "scripts/go/prometheus/go.mod names no Prometheus version"
build_go_family prometheus "promtool=github.com/prometheus/prometheus/cmd/promtool" \
  "-s -w -X github.com/prometheus/common/version.Version=$VERSION"
expect_version promtool "$VERSION" --version
