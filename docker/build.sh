#!/usr/bin/env bash
# Build Faastlane's container images without any image registry:
#
#   docker/build.sh base      a Debian base image from Debian's own packages
#                             (debootstrap -> docker import)
#   docker/build.sh runtime   the Faastlane runtime image: base + the cpython-mpk runtime +
#                             the OpenWhisk action server (the image `wsk action create
#                             NAME --docker IMAGE` would use); builds the base if needed
#   docker/build.sh tag base|runtime   print the tag the current inputs select
#
# Every image is tagged with a hash of everything that goes into it, so a rebuild with
# the same inputs is a cache hit (`docker image inspect`), and a changed input (this
# script, the package list, the action server, the cpython-mpk build) makes a new tag.
# The debootstrap root file system is also kept as a tarball in the cache, so a fresh
# Docker engine only re-imports it.  Each build also tags `:latest`.
#
# Environment:
#   FAASTLANE_CACHE        cache root (default: $HOME/.cache/faastlane)
#   FAASTLANE_DEBIAN_SUITE Debian suite of the base (default: this host's, because the
#                          cpython-mpk runtime copied in was linked against its libraries)
#   FAASTLANE_DEBIAN_MIRROR (default: http://deb.debian.org/debian)
#   FAASTLANE_PYTHON_PREFIX the cpython-mpk prefix to copy in (default: cpython-mpk/build)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
CACHE=${FAASTLANE_CACHE:-${HOME:?set HOME or FAASTLANE_CACHE}/.cache/faastlane}
IMAGES_CACHE="$CACHE/docker"

host_suite() { . /etc/os-release 2>/dev/null && printf '%s\n' "${VERSION_CODENAME:-}"; }
SUITE=${FAASTLANE_DEBIAN_SUITE:-$(host_suite)}
MIRROR=${FAASTLANE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PREFIX=${FAASTLANE_PYTHON_PREFIX:-$ROOT/cpython-mpk/build}

# The shared libraries the cpython-mpk build links against (its build dependencies'
# runtime halves; see cpython-mpk/build.sh BUILD_DEPS), and CA certificates for TLS.
BASE_PACKAGES=ca-certificates,libssl3,libffi8,libsqlite3-0,libreadline8,libncursesw6,libgdbm6,libgdbm-compat4,libuuid1,libbz2-1.0,liblzma5,zlib1g,libexpat1

BASE_REPO=faastlane/debian-base
RUNTIME_REPO=faastlane/runtime
# What the runtime image holds besides the interpreter: the action server and its child.
PROXY_FILES=("$ROOT/composer/faastlane/runtime/platforms/action_server.py"
             "$ROOT/composer/faastlane/runtime/platforms/action_launcher.py"
             "$ROOT/composer/faastlane/runtime/engine/fault_reports.py")

note() { printf 'docker/build.sh: %s\n' "$*" >&2; }
die() { printf 'docker/build.sh: error: %s\n' "$1" >&2; shift; for l in "$@"; do printf '  %s\n' "$l" >&2; done; exit 1; }

hash_of() { sha256sum | cut -c1-16; }

base_key() {
    [[ -n $SUITE ]] || die "cannot tell this host's Debian suite" "set FAASTLANE_DEBIAN_SUITE (e.g. bookworm)"
    { printf '%s\n' "$SUITE" "$MIRROR" "$BASE_PACKAGES"; sed -n '/^# --- base/,/^# --- end base/p' "$0"; } | hash_of
}

runtime_key() {
    local prefix_id
    prefix_id=$(readlink -f "$PREFIX")
    # The prefix path ends in build.sh's cache key: the hash of everything in that build.
    { base_key; printf '%s\n' "$prefix_id"; cat "$HERE/runtime/Dockerfile" "${PROXY_FILES[@]}";
      sed -n '/^# --- runtime/,/^# --- end runtime/p' "$0"; } | hash_of
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

need_docker() {
    command -v docker >/dev/null || die "docker is not installed" "run docker/ensure-dockerd.sh (installs docker.io and starts dockerd)"
    docker info >/dev/null 2>&1 || die "the Docker engine is not running" "run docker/ensure-dockerd.sh"
}

# --- base ---------------------------------------------------------------------------
build_base() {
    need_docker
    local key tag tarball
    key=$(base_key)
    tag="$BASE_REPO:$SUITE-$key"
    if have_image "$tag"; then note "cache hit: $tag"; docker tag "$tag" "$BASE_REPO:latest"; echo "$tag"; return; fi
    mkdir -p "$IMAGES_CACHE"
    tarball="$IMAGES_CACHE/debian-base-$SUITE-$key.tar"
    if [[ ! -f $tarball ]]; then
        command -v debootstrap >/dev/null || {
            [[ $(id -u) == 0 ]] || die "debootstrap is not installed" "sudo apt-get install debootstrap"
            note "installing debootstrap"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq debootstrap >/dev/null \
                || die "apt-get install debootstrap failed"
        }
        [[ $(id -u) == 0 ]] || die "debootstrap needs root (it creates device nodes and chroots)"
        local work
        work=$(mktemp -d "$IMAGES_CACHE/.base.XXXXXX")
        trap 'rm -rf "$work"' EXIT
        note "debootstrap $SUITE from $MIRROR (a few minutes, once)"
        debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$work/rootfs" "$MIRROR" \
            >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
        # Package lists and caches are dead weight in an image; the lists come back
        # with `apt-get update` when someone extends it.
        rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
        tar --numeric-owner -C "$work/rootfs" -cf "$work/rootfs.tar" .
        mv "$work/rootfs.tar" "$tarball"
        rm -rf "$work"; trap - EXIT
    fi
    note "docker import $tarball as $tag"
    docker import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' "$tarball" "$tag" >/dev/null
    docker tag "$tag" "$BASE_REPO:latest"
    echo "$tag"
}
# --- end base

# --- runtime ------------------------------------------------------------------------
build_runtime() {
    need_docker
    [[ -x $PREFIX/bin/python3 ]] || die "the cpython-mpk runtime is not built ($PREFIX/bin/python3 is missing)" \
        "build it first: make -C $ROOT/cpython-mpk   (or set FAASTLANE_PYTHON_PREFIX)"
    local base key tag context
    base=$(build_base)
    key=$(runtime_key)
    tag="$RUNTIME_REPO:$key"
    if have_image "$tag"; then note "cache hit: $tag"; docker tag "$tag" "$RUNTIME_REPO:latest"; echo "$tag"; return; fi
    context=$(mktemp -d)
    trap 'rm -rf "$context"' EXIT
    # Only what runs in the image: no test suite, no static library, no caches.
    mkdir -p "$context/cpython-mpk" "$context/proxy"
    tar -C "$(readlink -f "$PREFIX")" \
        --exclude='lib/python3*/test' --exclude='lib/python3*/idlelib' --exclude='lib/python3*/tkinter' \
        --exclude='__pycache__' --exclude='*.a' --exclude='faastlane-build.log' -cf - . \
        | tar -C "$context/cpython-mpk" -xf -
    cp "${PROXY_FILES[@]}" "$context/proxy/"
    # Bytecode for the image's interpreter, by that interpreter: a cold container then
    # imports the standard library instead of compiling it (129 modules at every start).
    # Hash-checked, so valid whatever the files' times; named as they are in the image.
    note "compiling the standard library and the action server"
    "$PREFIX/bin/python3" -m compileall -q -j 0 --invalidation-mode checked-hash \
        -s "$context/cpython-mpk" -p /opt/cpython-mpk "$context/cpython-mpk" >/dev/null \
        || die "compiling the standard library failed"
    "$PREFIX/bin/python3" -m compileall -q --invalidation-mode checked-hash \
        -s "$context/proxy" -p /opt/faastlane "$context/proxy" >/dev/null \
        || die "compiling the action server failed"
    cp "$HERE/runtime/Dockerfile" "$context/Dockerfile"
    note "docker build $tag (FROM $base)"
    docker build -q --build-arg "BASE=$base" -t "$tag" "$context" >/dev/null 2>"$context/build.err" \
        || { cat "$context/build.err" >&2; die "docker build failed (above)"; }
    rm -rf "$context"; trap - EXIT
    docker tag "$tag" "$RUNTIME_REPO:latest"
    echo "$tag"
}
# --- end runtime

case ${1:-} in
    base) build_base ;;
    runtime) build_runtime ;;
    tag)
        case ${2:-} in
            base) echo "$BASE_REPO:$SUITE-$(base_key)" ;;
            runtime) echo "$RUNTIME_REPO:$(runtime_key)" ;;
            *) die "usage: $0 tag base|runtime" ;;
        esac ;;
    *) die "usage: $0 base|runtime|tag base|runtime" ;;
esac
