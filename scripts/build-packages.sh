#!/usr/bin/env bash
# Builds the Crossplane packages into .cache/xpkg/:
#   function-platform.xpkg  the Function, its runtime image embedded (scripts/build-image.sh, no daemon)
#   platform.xpkg           the Configuration: namespaced Widget and Database APIs (Crossplane v2)
#   platform-claims.xpkg    the Configuration for claims (Crossplane v1 and legacy XRDs), when present
# FUNCTION_PLATFORM_IMAGE_BUILDER=docker builds the runtime image from the
# Dockerfile instead, where a Docker engine runs; the result is equivalent.
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

runtime="$out/runtime.tar"
if [[ "${FUNCTION_PLATFORM_IMAGE_BUILDER:-}" == docker ]]; then
  docker build -t function-platform-runtime:dev .
  docker save function-platform-runtime:dev -o "$runtime"
else
  digest="$(bash scripts/build-image.sh "$runtime")"
  echo "built $runtime (runtime image $digest)"
fi
"$crank" xpkg build -f package/function -e "$noexamples" --embed-runtime-image-tarball "$runtime" -o "$out/function-platform.xpkg"
echo "built $out/function-platform.xpkg"
