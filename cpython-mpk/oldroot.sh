#!/usr/bin/env bash
# Build the cpython-mpk runtime for AWS Lambda's custom runtime: the same build.sh,
# run inside a debootstrapped Debian root whose glibc is older than every target's, so
# the interpreter runs on Amazon Linux 2023 (glibc 2.34, provided.al2023) -- a build on
# this machine (Debian bookworm, glibc 2.36) links symbols AL2023 does not have.
# The shared libraries the interpreter links besides glibc (libssl, libffi, ...) are
# copied into the prefix's lib/, because the Lambda base image may lack them or carry
# other versions; the layer's bootstrap puts that folder on LD_LIBRARY_PATH.
#
#   oldroot.sh build    (default) root + build + bundle; links $HERE/build-lambda
#   oldroot.sh root     the minimal root (debootstrap); prints its path
#   oldroot.sh key      the cache key of the result
#   oldroot.sh prefix   the prefix the key selects
#   oldroot.sh run CMD  run CMD chrooted in the minimal root (glibc 2.31, none of the
#                       interpreter's other libraries), the current folder bound at
#                       /work: how the tests start the packaged layer's bootstrap
#
# Cache (outside the clone): ${FAASTLANE_CACHE:-~/.cache/faastlane}
#   roots/<suite>-min-<rootkey>/      debootstrap --variant=minbase, then read-only use
#   roots/<suite>-build-<rootkey>/    a copy of it in which build.sh installs its deps
#   cpython-mpk-<suite>/<key>/        the runtime + bundled libraries (+ marker)
# The key hashes the root's definition (suite, glibc, variant), this script and
# build.sh's own key (source, patches, module, build.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
PROG=${0##*/}

# The root: Debian 11 ships glibc 2.31, older than AL2023's 2.34 (AL2's 2.26 is older
# still: AL2's provided.al2 runtime is not a target of this build).
SUITE=bullseye
SUITE_GLIBC=2.31
TARGET_GLIBC=2.34  # provided.al2023
MIRROR=${FAASTLANE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
VARIANT=minbase

CACHE=${FAASTLANE_CACHE:-${HOME:?set HOME or FAASTLANE_CACHE}/.cache/faastlane}
ROOTS=$CACHE/roots
MARKER=.faastlane-build-complete

die() { printf '%s: error: %s\n' "$PROG" "$1" >&2; exit 1; }
note() { printf '[cpython-mpk %s] %s\n' "$SUITE" "$*"; }
now() { date +%s; }

root_manifest() {
    printf 'suite %s\nglibc %s\nvariant %s\narch %s\n' "$SUITE" "$SUITE_GLIBC" "$VARIANT" "$(uname -m)"
}
ROOT_KEY=$(root_manifest | sha256sum | cut -c1-12)
MIN_ROOT=$ROOTS/$SUITE-min-$ROOT_KEY
BUILD_ROOT=$ROOTS/$SUITE-build-$ROOT_KEY

need_root() {
    [[ $(id -u) == 0 ]] || die "building in a $SUITE root needs root (debootstrap, chroot, mount)"
}

# debootstrap into a temporary folder, marked and renamed into place when complete, so
# an interrupted run leaves nothing that looks usable.
ensure_min_root() {
    [[ -f $MIN_ROOT/$MARKER ]] && return
    need_root
    if ! command -v debootstrap >/dev/null; then
        note "installing debootstrap"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap \
            || die "apt-get install debootstrap failed (see above)"
    fi
    mkdir -p "$ROOTS"
    exec 8>"$MIN_ROOT.lock"
    flock 8
    [[ -f $MIN_ROOT/$MARKER ]] && return
    local tmp=$MIN_ROOT.tmp t0
    rm -rf "$tmp"
    t0=$(now)
    note "debootstrap $SUITE ($VARIANT) from $MIRROR into $MIN_ROOT"
    debootstrap --variant="$VARIANT" "$SUITE" "$tmp" "$MIRROR" >"$ROOTS/debootstrap-$ROOT_KEY.log" 2>&1 || {
        tail -n 30 "$ROOTS/debootstrap-$ROOT_KEY.log" >&2
        die "debootstrap $SUITE failed; log: $ROOTS/debootstrap-$ROOT_KEY.log"
    }
    rm -rf "$tmp"/var/cache/apt/archives/*.deb
    root_manifest >"$tmp/$MARKER"
    mv -T "$tmp" "$MIN_ROOT"
    note "root ready in $(( $(now) - t0 ))s (glibc $(chroot "$MIN_ROOT" ldd --version | sed -n '1s/.* //p'))"
}

ensure_build_root() {
    ensure_min_root
    [[ -f $BUILD_ROOT/$MARKER ]] && return
    rm -rf "$BUILD_ROOT.tmp"
    cp -a "$MIN_ROOT" "$BUILD_ROOT.tmp"
    mv -T "$BUILD_ROOT.tmp" "$BUILD_ROOT"
}

# Run "$@" chrooted in $1 inside a private mount namespace: /proc, /dev and the binds
# in the global BINDS ("host:inside" pairs, set just before) vanish with the namespace.
BINDS=()
in_root() {
    local root=$1
    shift
    local script='set -e; root=$1; shift; n=$1; shift
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        i=0
        while [ $i -lt "$n" ]; do
            src=${1%%:*}; dst=$root${1#*:}; shift; i=$((i+1))
            mkdir -p "$dst"; mount --bind "$src" "$dst"
        done
        cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
        exec chroot "$root" "$@"'
    # IN_ROOT_EXEC=exec: become the command (`run`), so its caller's signals reach it.
    ${IN_ROOT_EXEC:-} unshare --mount --propagation private sh -c "$script" sh "$root" "${#BINDS[@]}" "${BINDS[@]}" \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 "$@"
}

scan_layout_matcher() {
    printf '%s\n' "$HERE/../composer/faastlane/runtime/isolation/pkru_scan.py"
}

compute_key() {
    local inner
    inner=$("$HERE/build.sh" key) || die "build.sh key failed"
    KEY_MANIFEST=$(printf '%sbuild.sh-key %s\nscript %s\n' "$(root_manifest)"$'\n' "$inner" \
        "$(sha256sum "$SELF" | cut -d' ' -f1)")
    KEY=$(printf '%s' "$KEY_MANIFEST" | sha256sum | cut -c1-16)
    INNER_KEY=$inner
    PREFIX=$CACHE/cpython-mpk-$SUITE/$KEY
}

# Every NEEDED library of every ELF in the prefix that glibc does not provide, copied
# into $PREFIX/lib; ldd runs inside the root, so these are the root's libraries.
GLIBC_LIBS='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libutil|libresolv|libnsl|libanl)\.so'
bundle_libraries() {
    local stage=$1 inside=$2 lib name
    local -A seen=()
    while IFS= read -r lib; do
        name=${lib##*/}
        [[ $name =~ $GLIBC_LIBS || -n ${seen[$name]:-} ]] && continue
        seen[$name]=1
        cp -L "$BUILD_ROOT$lib" "$stage/lib/$name"
        note "bundled $name"
    done < <(BINDS=("$stage:$inside"); in_root "$BUILD_ROOT" sh -c \
        "find '$inside' -type f \\( -name '*.so*' -o -path '*/bin/python3*' \\) -exec ldd {} + 2>/dev/null \
         | awk '\$2 == \"=>\" && \$3 ~ /^\\// { print \$3 }' | sort -u")
}

cmd_build() {
    local t0
    t0=$(now)
    compute_key
    note "cache key: $KEY (build.sh key $INNER_KEY, $SUITE glibc $SUITE_GLIBC)"
    if [[ -f $PREFIX/$MARKER.lambda ]]; then
        note "cache hit: $PREFIX"
        link_result
        return
    fi
    need_root
    ensure_build_root
    mkdir -p "$CACHE/cpython-mpk-$SUITE"
    exec 9>"$PREFIX.lock"
    flock 9
    if [[ -f $PREFIX/$MARKER.lambda ]]; then link_result; return; fi
    # build.sh runs in the root with its own cache; the pinned source is fetched here
    # (the root's apt has no deb-src) and handed in.
    local source inner_cache=$CACHE/cpython-mpk-$SUITE/cache
    source=$("$HERE/build.sh" fetch | tail -n1)
    mkdir -p "$inner_cache/sources"
    [[ -f $inner_cache/sources/${source##*/} ]] || cp "$source" "$inner_cache/sources/"
    note "building in $BUILD_ROOT (build.sh installs its apt dependencies there)"
    # build.sh scans what it links with the runtime's own matcher (scan_layout.py).
    BINDS=("$HERE:/src/cpython-mpk" "$inner_cache:/cache"
           "$(dirname "$(scan_layout_matcher)"):/src/pkru_scan")
    in_root "$BUILD_ROOT" \
        env FAASTLANE_CACHE=/cache FAASTLANE_PKRU_SCAN=/src/pkru_scan/pkru_scan.py \
        /src/cpython-mpk/build.sh build --no-link \
        || die "the build in the $SUITE root failed (see above)"
    local built=$inner_cache/cpython-mpk/$INNER_KEY
    [[ -f $built/$MARKER ]] || die "build.sh finished but $built is not complete"
    # A copy, not the inner prefix: bundling changes it, and build.sh owns that one.
    rm -rf "$PREFIX" "$PREFIX.tmp"
    cp -a "$built" "$PREFIX.tmp"
    bundle_libraries "$PREFIX.tmp" "/cache/cpython-mpk/$INNER_KEY"
    # build.sh keeps $built (its cache): a change to this script only re-copies and re-bundles.
    {
        printf 'built=%s\nkey=%s\nglibc=%s\ntarget_glibc=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
            "$KEY" "$SUITE_GLIBC" "$TARGET_GLIBC"
        printf '%s\n' "$KEY_MANIFEST"
    } >"$PREFIX.tmp/$MARKER.lambda"
    mv -T "$PREFIX.tmp" "$PREFIX"
    note "built in $(( $(now) - t0 ))s: $PREFIX"
    link_result
}

link_result() {
    ln -sfn "$PREFIX" "$HERE/build-lambda.tmp.$$"
    mv -T "$HERE/build-lambda.tmp.$$" "$HERE/build-lambda"
    note "$HERE/build-lambda -> $PREFIX"
}

main() {
    local cmd=${1:-build}
    [[ $# -gt 0 ]] && shift
    case $cmd in
        build) cmd_build ;;
        root) ensure_min_root; printf '%s\n' "$MIN_ROOT" ;;
        key) compute_key; printf '%s\n' "$KEY" ;;
        prefix) compute_key; printf '%s\n' "$PREFIX" ;;
        run)
            [[ $# -gt 0 ]] || die "usage: $PROG run CMD..."
            need_root
            ensure_min_root
            # The minimal root itself, not a copy: what runs writes only to the bound
            # folder (and the root's /tmp).
            BINDS=("$PWD:/work")
            IN_ROOT_EXEC=exec in_root "$MIN_ROOT" "$@" ;;
        -h|--help) sed -n '2,22p' "$SELF" ;;
        *) die "unknown command '$cmd' (build, root, key, prefix, run)" ;;
    esac
}

main "$@"; exit
