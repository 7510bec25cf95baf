#!/usr/bin/env bash
# Builds the function's runtime image without a Docker daemon, as the
# Dockerfile describes it, into .cache/image/runtime.tar (the tarball
# `docker save` writes), and prints its digest, size and file summary.
#
#   layer 1  Debian's shared libraries and CA certificates: libc6, libgcc-s1,
#            libstdc++6 and ca-certificates as `apt-get download` fetches them,
#            unpacked with dpkg-deb; no shell, no package manager, no binaries
#            but the loader; /etc/passwd and /etc/group name uid 65532 nonroot
#   layer 2  the Node 24 binary of the `node` dev dependency, its symbols
#            stripped as Debian strips its binaries (the dynamic symbols native
#            addons link against stay), at /nodejs/bin/node (where the
#            Dockerfile's base has it)
#   layer 3  production-only node_modules (npm ci --omit=dev --ignore-scripts),
#            less type declarations and source maps, which Node never loads
#   layer 4  dist/ (src only, compiled by tsconfig.build.json), the bundle the
#            image starts (dist/bundle, scripts/bundle.mjs), and package.json
#   layer 5  the bundle's compile cache, filled in the image's root by uids
#            2000 (Crossplane's) and 65532 (the image's USER)
#            (scripts/fill-compile-cache.mjs)
#
# Reproducible but for layer 5: every file time is the HEAD commit's time,
# entries are sorted, owners are 0:0 and numeric, and xp-image
# (go-containerregistry) writes the config with that time only; the same inputs
# give the same layers 1-4. V8's code cache in layer 5 differs from build to
# build, so the image's digest does too. The Debian packages are kept in
# .cache/image/debs: delete them to take newer ones.
#
# Usage: scripts/build-image.sh [OUT]   (default .cache/image/runtime.tar)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { printf 'build-image: %s\n' "$*" >&2; }
die() { printf 'build-image: error: %s\n' "$*" >&2; exit 1; }

out="${1:-.cache/image/runtime.tar}"
bash scripts/install-crossplane.sh >/dev/null
DEBS=(libc6 libgcc-s1 libstdc++6 ca-certificates)
node_bin="node_modules/node/bin/node"
[[ -x "$node_bin" ]] || die "no $node_bin: run npm ci first"
"$node_bin" --version | grep -q '^v24\.' || die "$node_bin is not Node 24"

version="$(node -p 'require("./package.json").version')"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
source_label="$(sed -n 's/^ *meta.crossplane.io\/source: *//p' package/function/crossplane.yaml)"

cache=.cache/image
debs="$cache/debs"
mkdir -p "$debs"
# One download at a time, when builds run side by side.
exec 9>"$cache/.lock"
flock 9
for pkg in "${DEBS[@]}"; do
  ls "$debs/${pkg}_"*.deb >/dev/null 2>&1 && continue
  say "downloading Debian's $pkg"
  (cd "$debs" && apt-get download "$pkg" >/dev/null 2>&1) || die "apt-get download $pkg failed"
done
flock -u 9

stage="$(mktemp -d "$ROOT/$cache/stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{os,node,deps,app}

# Layer 1: the packages' files, less what a runtime does not need.
for pkg in "${DEBS[@]}"; do dpkg-deb -x "$debs/${pkg}_"*.deb "$stage/os"; done
(
  cd "$stage/os"
  rm -rf bin sbin usr/bin usr/sbin usr/libexec usr/share/man usr/share/lintian usr/share/info \
    usr/lib/x86_64-linux-gnu/gconv etc/ld.so.conf.d
  # Keep each package's copyright, drop changelogs.
  find usr/share/doc -type f ! -name copyright -delete
  # What ca-certificates' maintainer script would generate: one bundle, sorted.
  mkdir -p etc/ssl/certs
  find usr/share/ca-certificates -name '*.crt' | LC_ALL=C sort | xargs cat >etc/ssl/certs/ca-certificates.crt
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >etc/passwd
  printf 'root:x:0:\nnonroot:x:65532:\n' >etc/group
  mkdir -p tmp home/nonroot && chmod 1777 tmp && chmod 0755 home/nonroot
)

# Layer 2: Node.
mkdir -p "$stage/node/nodejs/bin"
cp "$node_bin" "$stage/node/nodejs/bin/node"
strip --strip-unneeded "$stage/node/nodejs/bin/node"

# Layer 3: production dependencies, from the lock file.
mkdir -p "$stage/deps/function"
cp package.json package-lock.json "$stage/deps/function/"
(cd "$stage/deps/function" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null) ||
  die "npm ci --omit=dev failed"
rm -f "$stage/deps/function/package.json" "$stage/deps/function/package-lock.json"
find "$stage/deps" -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete

# Layer 4: the function itself, compiled, and bundled against the production dependencies.
mkdir -p "$stage/app/function"
node_modules/.bin/tsc -p tsconfig.build.json --outDir "$stage/app/function/dist"
(cd "$stage/app/function" && node "$ROOT/scripts/link-main.mjs")
cp package.json "$stage/app/function/"
ln -s ../../deps/function/node_modules "$stage/app/function/node_modules"
(cd "$stage/app/function" && node "$ROOT/scripts/bundle.mjs")
rm "$stage/app/function/node_modules"

# Permissions as a umask of 022 gives, whatever the builder's umask was.
for layer in os node deps app; do chmod -R u+rwX,go+rX,go-w "$stage/$layer"; done
chmod 1777 "$stage/os/tmp"

# Layer 5: the bundle's compile cache, filled in the image's own root by the uids it
# runs as: Crossplane's (2000) and the image's USER (65532). Node keys the cache by uid
# and path. A layer of its own because it alone is not reproducible (V8's code cache
# differs from one fill to the next; scripts/fill-compile-cache.mjs says why).
cache_dir=function/dist/bundle/compile-cache
mkdir -p "$stage/root" "$stage/cache/$cache_dir"
for layer in os node deps app; do cp -a "$stage/$layer/." "$stage/root/"; done
mkdir -p "$stage/root/$cache_dir" && chmod 1777 "$stage/root/$cache_dir"
node scripts/fill-compile-cache.mjs "$stage/root" 2000 65532 || die "filling the compile cache failed"
cp -a "$stage/root/$cache_dir/." "$stage/cache/$cache_dir/"
chmod -R u+rwX,go+rX,go-w "$stage/cache"
chmod 0755 "$stage/cache/$cache_dir"
rm -rf "$stage/root"

layers=()
for layer in os node deps app cache; do
  tar --sort=name --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -C "$stage/$layer" -cf "$stage/$layer.tar" \
    $(cd "$stage/$layer" && LC_ALL=C ls -A)
  layers+=(--layer "$stage/$layer.tar")
done

mkdir -p "$(dirname "$out")"
digest="$(.cache/bin/xp-image --out "$out" --tag "function-platform-runtime:v$version" --created "$created" \
  "${layers[@]}" \
  --entrypoint /nodejs/bin/node --entrypoint --max-semi-space-size=1 --entrypoint --no-concurrent-recompilation \
  --entrypoint dist/bundle/main.mjs \
  --env PATH=/nodejs/bin --env NODE_ENV=production --env MALLOC_ARENA_MAX=1 \
  --user 65532:65532 --workdir /function --port 9443/tcp \
  --label "org.opencontainers.image.source=$source_label" \
  --label "org.opencontainers.image.version=v$version" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "org.opencontainers.image.licenses=Apache-2.0")"

bytes=0
for layer in os node deps app cache; do
  size=$(stat -c %s "$stage/$layer.tar")
  files=$(tar -tf "$stage/$layer.tar" | grep -vc '/$')
  bytes=$((bytes + size))
  say "layer $layer: $files files, $((size / 1024 / 1024)) MiB"
done
say "debs: $(cd "$debs" && ls | tr '\n' ' ')"
say "image $digest: $((bytes / 1024 / 1024)) MiB uncompressed, $(($(stat -c %s "$out") / 1024 / 1024)) MiB compressed → $out"
echo "$digest"
