# Sourced by the install scripts: builds the Go tools of one family from its
# wrapper module in scripts/go/<family>/ into .cache/bin.
#
# A wrapper module is a go.mod that *requires* the exact published versions
# (with the replace directives a module like k8s.io/kubernetes needs) and a
# go.sum that checks every download. Both are committed, so a build fetches
# only what go.sum vouches for and is the same on every machine. The family's
# binaries are built by one `go build`, so they share compiled packages.
#
# Why not `go install pkg@version`? It asks the module proxy for the module's
# version list (its deprecation check), which can be refused here even when
# the version itself is served; and it refuses modules with replace directives.
#
# A family is built again only when its recipe changes: the recipe is the
# hash of its go.mod, go.sum, Go files and link flags, stamped beside each
# binary. Built binaries are also kept in a per-user cache outside the
# checkout ($GO_TOOLS_CACHE, default ~/.cache/function-platform/go-tools), so
# a fresh clone on the same machine (CI) copies them instead of building.
#
#   build_go_family FAMILY "BIN=PACKAGE ..." [LDFLAGS]
#
# Needs ROOT, say() and die() from the caller. GO_TOOLS_FORCE=1 rebuilds.

export GOWORK=off
# -buildvcs=false: the wrappers sit inside this checkout and its VCS state is
# irrelevant (git may refuse to run on a CI checkout owned by another user).
# -trimpath and no cgo for every family, so that families built from the same
# dependency versions share the build cache; static binaries, as upstream ships.
export GOFLAGS="-buildvcs=false -trimpath"
export CGO_ENABLED=0

GO_TOOLS_BIN="$ROOT/.cache/bin"
GO_TOOLS_USER_CACHE="${GO_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/function-platform/go-tools}"

go_family_recipe() {
  local dir="$1" ldflags="$2"
  {
    (cd "$dir" && find . -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) | LC_ALL=C sort | xargs sha256sum)
    printf 'ldflags %s\n' "$ldflags"
  } | sha256sum | cut -c1-16
}

build_go_family() {
  local family="$1" spec="$2" ldflags="${3:--s -w}"
  local dir="$ROOT/scripts/go/$family" recipe cached entry bin pkg missing="" pkgs=() bins=() start
  [[ -f "$dir/go.mod" ]] || die "no wrapper module at scripts/go/$family"
  recipe="$(go_family_recipe "$dir" "$ldflags")"
  cached="$GO_TOOLS_USER_CACHE/$family-$recipe"
  for entry in $spec; do
    bins+=("${entry%%=*}")
    pkgs+=("${entry#*=}")
  done
  if [[ -z "${GO_TOOLS_FORCE:-}" ]]; then
    for bin in "${bins[@]}"; do
      [[ -x "$GO_TOOLS_BIN/$bin" && "$(cat "$GO_TOOLS_BIN/$bin.recipe" 2>/dev/null)" == "$family-$recipe" ]] || missing+=" $bin"
    done
    if [[ -z "$missing" ]]; then
      say "$family ($recipe): ${bins[*]} already built in .cache/bin; nothing to do"
      return 0
    fi
    if [[ -d "$cached" ]] && (cd "$cached" && ls "${bins[@]}" >/dev/null 2>&1); then
      mkdir -p "$GO_TOOLS_BIN"
      for bin in "${bins[@]}"; do
        cp -f "$cached/$bin" "$GO_TOOLS_BIN/$bin.tmp" && mv -f "$GO_TOOLS_BIN/$bin.tmp" "$GO_TOOLS_BIN/$bin"
        printf '%s\n' "$family-$recipe" >"$GO_TOOLS_BIN/$bin.recipe"
      done
      say "$family ($recipe): copied ${bins[*]} from the user cache $cached"
      return 0
    fi
  fi
  command -v go >/dev/null 2>&1 || die "go is not on PATH; install Go (1.26) to build ${bins[*]}"
  say "$family ($recipe): building ${bins[*]} with $(go version | cut -d' ' -f3) (cold: minutes)"
  start=$SECONDS
  local out="$ROOT/.cache/go-out/$family"
  rm -rf "$out"
  mkdir -p "$out" "$GO_TOOLS_BIN"
  (cd "$dir" && go build -ldflags "$ldflags" -o "$out/" "${pkgs[@]}") || die "go build of $family failed"
  # `go build -o DIR` names each binary after its package's last element.
  local i
  for i in "${!bins[@]}"; do
    local built="$out/${pkgs[$i]##*/}"
    [[ "${pkgs[$i]}" == "." ]] && built="$out/$(sed -n 's|^module .*/||p' "$dir/go.mod")"
    [[ -x "$built" ]] || die "go build of $family wrote no $built"
    mv -f "$built" "$GO_TOOLS_BIN/${bins[$i]}"
    printf '%s\n' "$family-$recipe" >"$GO_TOOLS_BIN/${bins[$i]}.recipe"
  done
  rm -rf "$out"
  say "$family ($recipe): built ${bins[*]} in $((SECONDS - start))s"
  if mkdir -p "$cached.tmp" 2>/dev/null; then
    for bin in "${bins[@]}"; do cp -f "$GO_TOOLS_BIN/$bin" "$cached.tmp/"; done
    rm -rf "$cached" && mv -f "$cached.tmp" "$cached" && say "$family: kept a copy in $cached"
  fi
}

# expect_version BIN WANT COMMAND...: the built binary must report WANT.
expect_version() {
  local bin="$1" want="$2" got
  shift 2
  got="$("$GO_TOOLS_BIN/$bin" "$@" 2>&1 | head -3 || true)"
  [[ "$got" == *"$want"* ]] || die ".cache/bin/$bin reports '$got', want $want"
}
