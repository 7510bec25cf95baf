#!/usr/bin/env bash
# Builds the Crossplane packages into .cache/xpkg/:
#   function-platform.xpkg  the Function (with its runtime image embedded when Docker can build it)
#   platform.xpkg           the Configuration: namespaced Widget and Database APIs (Crossplane v2)
#   platform-claims.xpkg    the Configuration for claims (Crossplane v1 and legacy XRDs), when present
# The runtime image needs a Docker engine; everything else runs anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-crossplane.sh >/dev/null
crank=.cache/bin/crank
out=.cache/xpkg
mkdir -p "$out"
# Examples under examples/ are render fixtures, not package examples.
noexamples="$(mktemp -d)"
trap 'rm -rf "$noexamples"' EXIT

for root in configuration configuration-claims; do
  [ -f "package/$root/crossplane.yaml" ] || continue
  name=$(awk '/^  name:/{print $2; exit}' "package/$root/crossplane.yaml")
  "$crank" xpkg build -f "package/$root" -e "$noexamples" -o "$out/$name.xpkg"
  echo "built $out/$name.xpkg"
done

runtime=()
if docker info >/dev/null 2>&1; then
  docker build -t function-platform-runtime:dev .
  docker save function-platform-runtime:dev -o "$out/runtime.tar"
  runtime=(--embed-runtime-image-tarball "$out/runtime.tar")
else
  echo "NOTE: no Docker engine here: the Function package is built without its runtime image." >&2
  echo "      On a machine with Docker, run this script again to embed it." >&2
fi
"$crank" xpkg build -f package/function -e "$noexamples" "${runtime[@]}" -o "$out/function-platform.xpkg"
echo "built $out/function-platform.xpkg"
