# Sourced by the install scripts: builds a Go main package of a published
# module from a throwaway wrapper module that *requires* one exact version.
#
# Why not `go install pkg@version`? Installing with @version makes Go ask the
# module proxy for the module's version list (its deprecation check), and
# that request is refused here even when the version itself is served. A
# module that requires the version only ever fetches that version.
#
#   build_from_wrapper SRC_DIR WRAPPER_NAME MODULE VERSION PACKAGE OUT [LDFLAGS]
#
# Needs say() and die() from the caller. Builds to OUT.tmp and renames, so an
# interrupted build never leaves a binary an up-to-date check would accept.

# A go.work further up, or GOFLAGS from the caller, would change how the
# wrapper resolves; -buildvcs=false because the wrapper sits inside this
# project's checkout and its VCS state is irrelevant (and git may refuse to
# run on a CI checkout owned by another user).
export GOWORK=off
export GOFLAGS="-buildvcs=false"

build_from_wrapper() {
  local src="$1" name="$2" module="$3" version="$4" package="$5" out="$6" ldflags="${7:--s -w}"
  local root="${ROOT:-}"
  say "writing wrapper module in ${src#"$root"/}"
  rm -rf "$src"
  mkdir -p "$src" "$(dirname "$out")"
  # The go directive is a floor: `go mod tidy` raises it to what the module needs.
  printf 'module %s\n\ngo 1.21\n\nrequire %s %s\n' "$name" "$module" "$version" >"$src/go.mod"
  # The blank import puts the package in this module's build list, so tidy pins
  # every dependency to the versions the module itself asks for.
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$package" >"$src/tools.go"
  say "resolving dependencies (go mod tidy)"
  (cd "$src" && go mod tidy) || die "go mod tidy failed in ${src#"$root"/}"
  say "building $package $version -> ${out#"$root"/}"
  (cd "$src" && go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$package") || {
    rm -f "$out.tmp"
    die "go build failed"
  }
  mv -f "$out.tmp" "$out"
}
