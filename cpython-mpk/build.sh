#!/usr/bin/env bash
# Build the cpython-mpk runtime: CPython 3.13 + the numbered patch series in
# patches/ + the _faastlane builtin module from Modules/, installed into a cache
# keyed by the hash of everything that goes into it.  See README.md.
#
# Every stage can run alone so tests can exercise the failure modes without
# compiling CPython (`build.sh verify FILE`, `build.sh apply --into DIR`, ...).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
PROG=${0##*/}

usage() {
    cat <<EOF
usage: $PROG [COMMAND] [OPTIONS]

Commands:
  build               (default) fetch, verify, patch, configure, make, install
                      into the cache, then point $HERE/build at it
  fetch               download the pinned source into the cache; print its path
  verify FILE         check FILE is the pinned tarball or a CPython 3.13 source
                      tarball; print its SHA-256
  apply --into DIR    apply the patch series to the unpacked source tree DIR
  prepare --into DIR  unpack the source into DIR (must not exist), apply the
                      series and wire in the _faastlane module; no compiling
  key                 print the cache key (hash of source, patches, module, script)
  prefix              print the install prefix the key selects
  prune               delete cached runtimes other than the one build/ points to

Options:
  --source FILE       build from this tarball instead of Debian's pinned one
  --patches DIR       patch series to apply (default: $HERE/patches)
  --modules DIR       _faastlane C sources (default: $HERE/Modules)
  --jobs N            parallel make jobs (default: nproc)
  --no-deps           do not check/install build dependencies with apt
  --no-link           do not repoint $HERE/build at the result
  --keep-work         keep this build's work folder (tree, staging, log)
  --fresh             unpack a new tree even if a compiled one could be reused

Environment:
  FAASTLANE_CACHE     cache root (default: \$HOME/.cache/faastlane)
EOF
}

die() {
    printf '%s: error: %s\n' "$PROG" "$1" >&2
    shift
    local line
    for line in "$@"; do printf '  %s\n' "$line" >&2; done
    exit 1
}
note() { printf '[cpython-mpk] %s\n' "$*"; }
warn() { printf '[cpython-mpk] warning: %s\n' "$*" >&2; }

# --- pinned source ----------------------------------------------------------

pin() {
    local v
    v=$(sed -n "s/^$1=//p" "$HERE/VERSION")
    [[ -n $v ]] || die "$HERE/VERSION has no '$1=' line"
    printf '%s' "$v"
}
PIN_VERSION=$(pin version)
PIN_PACKAGE=$(pin debian_package)
PIN_SUITE=$(pin debian_suite)
PIN_TARBALL=$(pin tarball)
PIN_SHA256=$(pin sha256)
PIN_MINOR=${PIN_VERSION%.*}

CACHE=${FAASTLANE_CACHE:-${HOME:?set HOME or FAASTLANE_CACHE}/.cache/faastlane}
RUNTIMES="$CACHE/cpython-mpk"
PINNED_PATH="$CACHE/sources/$PIN_TARBALL"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# Print "MAJOR.MINOR.MICRO" from an Include/patchlevel.h read on stdin.
patchlevel_version() {
    awk '$1 == "#define" && $2 == "PY_MAJOR_VERSION" { ma = $3 }
         $1 == "#define" && $2 == "PY_MINOR_VERSION" { mi = $3 }
         $1 == "#define" && $2 == "PY_MICRO_VERSION" { mc = $3 }
         END { if (ma != "" && mi != "") print ma "." mi "." mc }'
}

# verify FILE: succeed for the pinned tarball, or for any tarball holding a
# CPython $PIN_MINOR source tree at depth one (what `prepare` unpacks).
verify_source() {
    local file=$1 sha listing member top version
    [[ -f $file ]] || die "source tarball $file does not exist"
    sha=$(sha256_of "$file")
    if [[ $sha == "$PIN_SHA256" ]]; then
        SOURCE_SHA256=$sha
        return
    fi
    local expected="the pinned source is $PIN_TARBALL (CPython $PIN_VERSION), SHA-256 $PIN_SHA256"
    if [[ $file == "$PINNED_PATH" ]]; then
        die "cached source $file is corrupt: its SHA-256 is $sha, expected $PIN_SHA256" \
            "delete it and run again to download it afresh"
    fi
    listing=$(mktemp)
    if ! tar -tf "$file" >"$listing" 2>/dev/null; then
        rm -f "$listing"
        die "$file is not the pinned source and not a readable tarball (SHA-256 $sha)" "$expected"
    fi
    # The tree must sit one folder deep: prepare unpacks with --strip-components=1.
    member=$(grep -m1 -E '^(\./)?[^/]+/Include/patchlevel\.h$' "$listing" || true)
    top=${member%/Include/patchlevel.h}
    local f missing=()
    for f in configure Makefile.pre.in Python/ceval.c Modules/Setup.stdlib.in; do
        grep -qxF "$top/$f" "$listing" || missing+=("$f")
    done
    rm -f "$listing"
    if [[ -z $member || ${#missing[@]} -gt 0 ]]; then
        die "$file is not a CPython source tarball (SHA-256 $sha): no top-level folder with ${missing[*]:-Include/patchlevel.h}" \
            "$expected"
    fi
    version=$(tar -xOf "$file" "$member" | patchlevel_version) || true
    if [[ ${version%.*} != "$PIN_MINOR" ]]; then
        die "$file holds CPython ${version:-of unknown version}, not $PIN_MINOR (SHA-256 $sha)" "$expected"
    fi
    warn "$file is not the pinned source: CPython $version, SHA-256 $sha (pinned: $PIN_SHA256); patches may not apply"
    SOURCE_SHA256=$sha
}

# Make sure apt can see trixie's source packages: a deb-src entry of our own
# unless one for $PIN_SUITE is already configured.
ensure_deb_src() {
    if apt-cache showsrc "$PIN_PACKAGE" 2>/dev/null | grep -q " $PIN_TARBALL\$"; then
        return
    fi
    local list=/etc/apt/sources.list.d/faastlane-$PIN_SUITE-src.sources
    [[ $(id -u) == 0 ]] || die "apt cannot see $PIN_TARBALL and only root can add a deb-src entry" \
        "add a deb-src line for Debian $PIN_SUITE, or pass --source FILE"
    if [[ ! -f $list ]]; then
        note "adding deb-src entry for Debian $PIN_SUITE: $list"
        cat >"$list" <<EOF
# Added by faastlane cpython-mpk/build.sh: source packages only, so the pinned
# $PIN_PACKAGE source can be fetched; binary packages are untouched.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $PIN_SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    fi
    apt-get update -qq || die "apt-get update failed (see above)"
}

fetch_pinned() {
    if [[ -f $PINNED_PATH ]]; then
        verify_source "$PINNED_PATH"
        return
    fi
    command -v apt-get >/dev/null || die "no cached $PIN_TARBALL and no apt-get to download it" \
        "download it by other means and pass --source FILE"
    ensure_deb_src
    mkdir -p "$CACHE/sources"
    local tmp
    tmp=$(mktemp -d "$CACHE/sources/.download.XXXXXX")
    note "downloading $PIN_PACKAGE source from Debian $PIN_SUITE"
    # Sandbox::User=root: the temp dir is private, _apt could not write to it.
    if ! (cd "$tmp" && apt-get source -qq --download-only -o APT::Sandbox::User=root "$PIN_PACKAGE"); then
        rm -rf "$tmp"
        die "apt-get source $PIN_PACKAGE failed (see above)"
    fi
    if [[ ! -f $tmp/$PIN_TARBALL ]]; then
        local got
        got=$(cd "$tmp" && ls ./*.orig.tar.* 2>/dev/null | tr '\n' ' ')
        rm -rf "$tmp"
        die "Debian $PIN_SUITE no longer ships $PIN_TARBALL (it has: ${got:-nothing})" \
            "update VERSION (and re-check the patches), or pass --source FILE"
    fi
    local sha
    sha=$(sha256_of "$tmp/$PIN_TARBALL")
    if [[ $sha != "$PIN_SHA256" ]]; then
        rm -rf "$tmp"
        die "downloaded $PIN_TARBALL has SHA-256 $sha, expected $PIN_SHA256"
    fi
    mv "$tmp/$PIN_TARBALL" "$PINNED_PATH"
    rm -rf "$tmp"
    SOURCE_SHA256=$sha
}

resolve_source() {
    if [[ -n $OPT_SOURCE ]]; then
        SOURCE=$(realpath "$OPT_SOURCE")
        verify_source "$SOURCE"
    else
        SOURCE=$PINNED_PATH
        fetch_pinned
    fi
}

# --- patch series -------------------------------------------------------------

# The series: NNNN-name.patch files in order.  Anything else there but
# README.md is refused, so a misnamed patch cannot be silently skipped.
list_patches() {
    local dir=$1 f name
    PATCHES=()
    [[ -d $dir ]] || return 0
    for f in "$dir"/*; do
        [[ -e $f ]] || continue
        name=${f##*/}
        if [[ $name =~ ^[0-9]{4}-[A-Za-z0-9._-]+\.patch$ ]]; then
            PATCHES+=("$f")
        elif [[ $name != README.md ]]; then
            die "$f does not belong in the patch series" \
                "patches are named NNNN-what-it-does.patch (git format-patch -N); README.md is the only other file"
        fi
    done
}

# Print the header line of hunk number $3 of file $2 in patch $1.
hunk_header() {
    awk -v want="$2" -v n="$3" '
        /^\+\+\+ / { f = $2; sub(/^b\//, "", f); k = 0; next }
        /^@@ / && f == want { if (++k == n) { print; exit } }' "$1"
}

# Dry-run first so a patch that fails leaves the tree untouched, then apply.
# --fuzz=0: context must match exactly (a shifted line offset is allowed).
apply_patches() {
    local tree=$1 pdir=$2 p name out
    list_patches "$pdir"
    if [[ ${#PATCHES[@]} -eq 0 ]]; then
        note "patch series: empty (no patches in $pdir)"
        return
    fi
    for p in "${PATCHES[@]}"; do
        name=${p##*/}
        if ! out=$(patch -d "$tree" -p1 --fuzz=0 --batch --forward --dry-run -i "$p" 2>&1); then
            report_patch_failure "$p" "$out"
        fi
        patch -d "$tree" -p1 --fuzz=0 --batch --forward --no-backup-if-mismatch --quiet -i "$p" \
            || die "patch $name passed its dry run but failed to apply"
        note "applied $name"
        grep -E '^Hunk #[0-9]+ succeeded' <<<"$out" | sed 's/^/[cpython-mpk]   /' || true
    done
}

report_patch_failure() {
    local p=$1 out=$2 name=${1##*/} file="" line lines=()
    while IFS= read -r line; do
        case $line in
            "checking file "*|"patching file "*)
                file=${line#* file }; file=${file#\'}; file=${file%\'} ;;
            "Hunk #"*FAILED*)
                local n=${line#Hunk #}; n=${n%% *}
                local at=${line#* FAILED at }
                lines+=("$file: hunk #$n FAILED at line ${at%.} ($(hunk_header "$p" "$file" "$n"))") ;;
            "can't find file to patch"*)
                lines+=("a file it patches does not exist in the tree") ;;
            "Reversed (or previously applied) patch detected"*)
                lines+=("${file:-a file}: already applied (or reversed)") ;;
        esac
    done <<<"$out"
    [[ ${#lines[@]} -gt 0 ]] || lines=("(could not tell which hunk)")
    local said
    mapfile -t said < <(sed 's/^/  /' <<<"$out")
    die "patch $name does not apply (no fuzz allowed): $p" "${lines[@]}" "patch said:" "${said[@]}"
}

# --- the _faastlane module ------------------------------------------------------

# Built in (static), not a shared extension: the gates must be part of the
# interpreter the runtime trusts, and importing it must not depend on sys.path.
# Modules/Setup.local is CPython's own hook for local builtin modules, so no
# patch to configure or the Makefile is needed.  Every .c file in the folder is
# one translation unit of the module; headers sit beside them, and makesetup
# compiles with -DPy_BUILD_CORE_BUILTIN, so internal pycore_*.h are usable.
wire_module() {
    local tree=$1 mdir=$2 rel srcs=() list=$1/.faastlane-module-files
    # A reused tree still holds the previous build's module: take it out first.
    if [[ -f $list ]]; then
        while IFS= read -r rel; do rm -f "$tree/Modules/$rel"; done <"$list"
        rm -f "$list"
    fi
    rm -f "$tree/Modules/mpk_layout_pad.h"  # settle_layout's, if it padded that build
    printf '# Written by cpython-mpk/build.sh\n' >"$tree/Modules/Setup.local"
    if [[ ! -f $mdir/_faastlanemodule.c ]]; then
        MODULE_BUILT=no
        note "no $mdir/_faastlanemodule.c: building WITHOUT the _faastlane module"
        return
    fi
    # Copy the folder as it is (headers, clinic/ output) but never over a
    # CPython file: that would silently replace part of the interpreter.
    while IFS= read -r rel; do
        [[ ! -e $tree/Modules/$rel ]] || die "$mdir/$rel would overwrite CPython's Modules/$rel; rename it"
        [[ $rel == */* || $rel != *.c ]] || srcs+=("$rel")
    done < <(cd "$mdir" && find . -type f -printf '%P\n' | LC_ALL=C sort)
    (cd "$mdir" && find . -type f -printf '%P\n') >"$list"
    (cd "$mdir" && find . -type f -printf '%P\0' | xargs -0 cp --parents -t "$tree/Modules/")
    printf '*static*\n_faastlane %s\n' "${srcs[*]}" >>"$tree/Modules/Setup.local"
    MODULE_BUILT=yes
    note "_faastlane builtin module: ${srcs[*]}"
}

# --- cache key -------------------------------------------------------------------

# Everything that changes the binary: source, patches, module sources, this
# script (it holds the configure flags).  Paths are part of it so renames count.
compute_key() {
    local f manifest base
    list_patches "$OPT_PATCHES"
    manifest="source $SOURCE_SHA256"$'\n'
    for f in "${PATCHES[@]}"; do
        manifest+="patch ${f##*/} $(sha256_of "$f")"$'\n'
    done
    base="script $(sha256_of "$SELF")"$'\n'
    # The base key leaves the module out: builds that differ only in Modules/
    # can share a compiled tree (see cmd_build).
    BASE_KEY=$(printf '%s%s' "$manifest" "$base" | sha256sum | cut -c1-16)
    if [[ -d $OPT_MODULES ]]; then
        while IFS= read -r f; do
            manifest+="module ${f#"$OPT_MODULES"/} $(sha256_of "$f")"$'\n'
        done < <(find "$OPT_MODULES" -type f | LC_ALL=C sort)
    fi
    manifest+=$base
    KEY_MANIFEST=$manifest
    KEY=$(printf '%s' "$manifest" | sha256sum | cut -c1-16)
    PREFIX="$RUNTIMES/$KEY"
}

MARKER=.faastlane-build-complete
is_complete() { [[ -f $1/$MARKER && -x $1/bin/python3 ]]; }

# --- build ------------------------------------------------------------------------

BUILD_DEPS=(build-essential pkg-config patch xz-utils libssl-dev libffi-dev zlib1g-dev
    libbz2-dev liblzma-dev libsqlite3-dev libreadline-dev uuid-dev libncurses-dev
    libgdbm-dev libgdbm-compat-dev)

ensure_deps() {
    if ! command -v dpkg-query >/dev/null; then
        warn "not a Debian system: cannot check build dependencies (${BUILD_DEPS[*]})"
        return
    fi
    local p missing=()
    for p in "${BUILD_DEPS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return
    [[ $(id -u) == 0 ]] || die "missing build dependencies: ${missing[*]}" \
        "install them: sudo apt-get install ${missing[*]}  (or pass --no-deps)"
    note "installing build dependencies: ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
        || die "apt-get install ${missing[*]} failed (see above)"
}

STAGE="" STAGE_T0=0 BUILD_T0=0
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
stage() {
    [[ -n $STAGE ]] && note "$STAGE done in $(elapsed "$STAGE_T0")s"
    STAGE=$1
    STAGE_T0=$(now)
    [[ -n $STAGE ]] && note "==> $STAGE (at $(elapsed "$BUILD_T0")s)"
    return 0
}

# Run a long command with its output in $LOG, with a heartbeat every 30 s so
# a CI log shows progress; on failure show the end of the log.
CHILD="" BEAT=""
run_logged() {
    local what=$1 t0 status=0
    shift
    t0=$(now)
    printf '\n$ %s\n' "$*" >>"$LOG"
    "$@" >>"$LOG" 2>&1 &
    CHILD=$!
    # The sleep must not outlive the heartbeat: it would hold our stdout open.
    (
        trap 'kill "$nap" 2>/dev/null; exit 0' TERM
        while :; do
            sleep 30 >/dev/null 2>&1 & nap=$!
            wait "$nap"
            note "    $what: still running ($(elapsed "$t0")s, $(wc -l <"$LOG") log lines)"
        done
    ) &
    BEAT=$!
    wait "$CHILD" || status=$?
    kill "$BEAT" 2>/dev/null || true
    wait "$BEAT" 2>/dev/null || true
    CHILD="" BEAT=""
    if [[ $status -ne 0 ]]; then
        tail -n 40 "$LOG" | sed 's/^/  | /' >&2
        die "$what failed (exit $status); full log: $LOG"
    fi
}

WORK=""
BUILD_OK=no
cleanup() {
    [[ -z $CHILD ]] || kill "$CHILD" 2>/dev/null || true
    [[ -z $BEAT ]] || kill "$BEAT" 2>/dev/null || true
    if [[ -n $WORK && -d $WORK ]]; then
        if [[ $OPT_KEEP_WORK == yes ]]; then
            note "build tree kept: $WORK"
        else
            # Keep the log of a failed build where the user can find it.
            if [[ $BUILD_OK != yes && -f $WORK/build.log ]]; then
                mkdir -p "$RUNTIMES/logs"
                cp "$WORK/build.log" "$RUNTIMES/logs/$KEY.log"
                printf '%s: build log kept: %s\n' "$PROG" "$RUNTIMES/logs/$KEY.log" >&2
            fi
            rm -rf "$WORK"
        fi
    fi
}

# Unpack the source into $1 (a new folder), apply the series, wire the module.
prepare_tree() {
    local tree=$1
    [[ ! -e $tree ]] || die "$tree already exists; prepare unpacks into a new folder"
    mkdir -p "$tree"
    stage "unpack $(basename "$SOURCE")"
    tar -xf "$SOURCE" -C "$tree" --strip-components=1 || die "could not unpack $SOURCE"
    stage "apply patch series"
    apply_patches "$tree" "$OPT_PATCHES"
    stage "wire _faastlane module"
    wire_module "$tree" "$OPT_MODULES"
}

link_build() {
    [[ $OPT_LINK == yes ]] || return 0
    local link="$HERE/build"
    if [[ -e $link && ! -L $link ]]; then
        die "$link exists and is not a symlink; move it away"
    fi
    # rename() over the old link is atomic: readers see the old or the new one.
    ln -sfn "$PREFIX" "$link.tmp.$$"
    mv -T "$link.tmp.$$" "$link"
    note "$link -> $PREFIX"
    local key_now
    key_now=$(compute_key 2>/dev/null && printf '%s' "$KEY") || true
    if [[ $key_now != "$KEY" ]]; then
        warn "the inputs changed during the build (their key is now ${key_now:-unknown}): run it again"
    fi
}

# What "an ordinary python3.13" must be able to do; run on the final prefix.
SMOKE_IMPORTS="ssl, sqlite3, lzma, bz2, ctypes, readline, zlib, uuid, curses, decimal, hashlib, json"
smoke_test() {
    local py=$PREFIX/bin/python3 code="import $SMOKE_IMPORTS"
    code+=$'\nimport os, sys\nassert os.path.realpath(sys.prefix) == os.path.realpath(sys.argv[1]), f"sys.prefix is {sys.prefix}, not {sys.argv[1]}"' 
    if [[ $MODULE_BUILT == yes ]]; then
        code+=$'\nimport sys, _faastlane\nassert "_faastlane" in sys.builtin_module_names, "_faastlane is not builtin"'
    fi
    "$py" -c "$code" "$PREFIX" || die "the installed runtime $py fails its smoke test (see above)"
    "$py" -m pip --version >/dev/null || die "$py has no working pip (ensurepip did not install it)"
}

# The runtime's code may hold no WRPKRU but its gate's and no XRSTOR at any byte
# offset, yet a compiler's layout can spell one inside another instruction (a
# rip-relative leaq's displacement into .rodata once held 0F AE 28).  Scan what make
# linked (scan_layout.py); if it is not clean, move .rodata by padding pages after the
# code (Modules/mpk_layout.c) and link again.  Paddings of a few pages change a
# displacement's second byte, of 16 or 256 pages its third.
LAYOUT_PADS=(1 2 3 16 17 256 257)
settle_layout() {
    [[ $MODULE_BUILT == yes && -f $WORK/src/Modules/mpk_layout.c ]] || return 0
    local src=$WORK/src pad
    "$src/python" "$HERE/scan_layout.py" "$src" >>"$LOG" 2>&1 && return 0
    for pad in "${LAYOUT_PADS[@]}"; do
        printf '#define FAASTLANE_LAYOUT_PAD_PAGES %d\n' "$pad" >"$src/Modules/mpk_layout_pad.h"
        touch "$src/Modules/mpk_layout.c"
        run_logged "make (layout padded by $pad pages)" make -C "$src" -j"$OPT_JOBS"
        if "$src/python" "$HERE/scan_layout.py" "$src" >>"$LOG" 2>&1; then
            note "PKRU-writing bytes found in the linked code moved out by $pad page(s) of padding"
            return 0
        fi
    done
    grep '^scan_layout:' "$LOG" | tail -5 >&2
    die "the linked runtime holds PKRU-writing bytes besides its gate with every padding tried; full log: $LOG"
}

cmd_build() {
    BUILD_T0=$(now)
    stage "source"
    resolve_source
    compute_key
    note "source: $SOURCE"
    note "cache key: $KEY  prefix: $PREFIX"
    if is_complete "$PREFIX"; then
        stage ""
        note "cache hit: $PREFIX is complete (built $(sed -n 's/^built=//p' "$PREFIX/$MARKER"))"
        link_build
        note "ready in $(elapsed "$BUILD_T0")s: $HERE/build/bin/python3"
        return
    fi
    if [[ $OPT_DEPS == yes ]]; then
        stage "build dependencies"
        ensure_deps
    fi

    mkdir -p "$RUNTIMES"
    # One build per key at a time; a second `make` waits, then finds it done.
    exec 9>"$RUNTIMES/$KEY.lock"
    if ! flock -n 9; then
        note "another build of $KEY is running; waiting for it"
        flock 9
    fi
    if is_complete "$PREFIX"; then
        stage ""
        note "cache hit: another process just built $PREFIX"
        link_build
        return
    fi
    # Leftovers of interrupted builds of this key: the prefix was never marked
    # complete, so nothing can be using it.
    rm -rf "$PREFIX" "$RUNTIMES/.work-$KEY".*

    WORK=$(mktemp -d "$RUNTIMES/.work-$KEY.XXXXXX")
    LOG=$WORK/build.log
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    note "log: $LOG"
    local tree_cache=$RUNTIMES/tree-$BASE_KEY
    if [[ $OPT_FRESH == no ]] && mv -T "$tree_cache" "$WORK/src" 2>/dev/null; then
        # Only Modules/ differs from an earlier build: configure again (the
        # prefix changed) and let make recompile what depends on it.
        stage "reuse compiled tree"
        note "same source, patches and script as an earlier build: reusing its tree"
        stage "wire _faastlane module"
        wire_module "$WORK/src" "$OPT_MODULES"
    else
        prepare_tree "$WORK/src"
    fi

    stage "configure"
    # --prefix is compiled into the binary (sys.prefix, shebangs), so configure
    # with the final path and stage the install with DESTDIR instead.
    # No PGO/LTO: they double the build time for a few percent.
    run_logged configure sh -c "cd '$WORK/src' && ./configure --prefix='$PREFIX' --with-ensurepip=install"

    stage "make -j$OPT_JOBS"
    run_logged make make -C "$WORK/src" -j"$OPT_JOBS"
    if grep -q 'Failed to build these modules' "$LOG"; then
        grep -A3 'Failed to build these modules' "$LOG" >&2
        die "some extension modules failed to build; full log: $LOG"
    fi
    grep -A3 'necessary bits to build these optional modules were not found' "$LOG" \
        | sed 's/^/[cpython-mpk]   /' || true
    stage "scan the linked code for PKRU writes"
    settle_layout

    stage "make install"
    run_logged "make install" make -C "$WORK/src" install DESTDIR="$WORK/stage"

    stage "check"
    # Same filesystem, so this rename is atomic; the marker is written last.
    mv -T "$WORK/stage$PREFIX" "$PREFIX"
    smoke_test
    cp "$LOG" "$PREFIX/faastlane-build.log"
    {
        printf 'built=%s\nkey=%s\nbase=%s\nmodule=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$KEY" "$BASE_KEY" "$MODULE_BUILT"
        printf '%s' "$KEY_MANIFEST"
    } >"$PREFIX/$MARKER.tmp"
    mv "$PREFIX/$MARKER.tmp" "$PREFIX/$MARKER"
    BUILD_OK=yes
    if [[ $OPT_KEEP_WORK == no ]]; then
        rm -rf "$tree_cache"
        mv -T "$WORK/src" "$tree_cache" 2>/dev/null || true  # another build may have won
    fi
    stage ""
    link_build
    [[ $MODULE_BUILT == yes ]] || note "built WITHOUT _faastlane (no Modules/_faastlanemodule.c)"
    note "built in $(elapsed "$BUILD_T0")s: $PREFIX/bin/python3"
}

cmd_prune() {
    local keep="" keep_tree="" d key
    if [[ -L $HERE/build ]]; then
        keep=$(readlink "$HERE/build")
        keep_tree=$RUNTIMES/tree-$(sed -n 's/^base=//p' "$keep/$MARKER" 2>/dev/null || true)
    fi
    [[ -d $RUNTIMES ]] || return 0
    for d in "$RUNTIMES"/*/ "$RUNTIMES"/.work-*; do
        [[ -e $d ]] || continue
        d=${d%/}
        [[ $d == "$keep" || $d == "$keep_tree" || $d == "$RUNTIMES/logs" ]] && continue
        # A build holding its key's lock is still using its work folder or
        # checking its new prefix.
        key=${d##*/}
        key=${key#.work-}
        key=${key%%.*}
        if [[ -f $RUNTIMES/$key.lock ]] && ! flock -n "$RUNTIMES/$key.lock" true; then
            note "keeping $d: its build is running"
            continue
        fi
        note "removing $d"
        rm -rf "$d"
    done
}

# --- command line -------------------------------------------------------------------

main() {
    local CMD=build
    if [[ $# -gt 0 && $1 != -* ]]; then
        CMD=$1
        shift
    fi
    OPT_SOURCE="" OPT_INTO="" OPT_PATCHES="$HERE/patches" OPT_MODULES="$HERE/Modules"
    OPT_JOBS=$(nproc) OPT_DEPS=yes OPT_LINK=yes OPT_KEEP_WORK=no OPT_FRESH=no
    ARGS=()
    while [[ $# -gt 0 ]]; do
        case $1 in
            --source) OPT_SOURCE=${2:?--source needs a FILE}; shift 2 ;;
            --into) OPT_INTO=${2:?--into needs a DIR}; shift 2 ;;
            --patches) OPT_PATCHES=$(realpath "${2:?--patches needs a DIR}"); shift 2 ;;
            --modules) OPT_MODULES=$(realpath "${2:?--modules needs a DIR}"); shift 2 ;;
            --jobs) OPT_JOBS=${2:?--jobs needs N}; shift 2 ;;
            --no-deps) OPT_DEPS=no; shift ;;
            --no-link) OPT_LINK=no; shift ;;
            --keep-work) OPT_KEEP_WORK=yes; shift ;;
            --fresh) OPT_FRESH=yes; shift ;;
            -h|--help) usage; exit 0 ;;
            -*) usage >&2; die "unknown option $1" ;;
            *) ARGS+=("$1"); shift ;;
        esac
    done
    [[ $OPT_JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs wants a positive number, not '$OPT_JOBS'"

    case $CMD in
        build)
            cmd_build ;;
        fetch)
            resolve_source
            printf '%s\n' "$SOURCE" ;;
        verify)
            [[ ${#ARGS[@]} -eq 1 ]] || die "usage: $PROG verify FILE"
            verify_source "${ARGS[0]}"
            printf '%s  %s\n' "$SOURCE_SHA256" "${ARGS[0]}" ;;
        apply)
            [[ -n $OPT_INTO && -d $OPT_INTO ]] || die "usage: $PROG apply --into DIR (an unpacked source tree)"
            apply_patches "$OPT_INTO" "$OPT_PATCHES" ;;
        prepare)
            [[ -n $OPT_INTO ]] || die "usage: $PROG prepare --into DIR [--source FILE]"
            BUILD_T0=$(now)
            resolve_source
            prepare_tree "$OPT_INTO"
            stage "" ;;
        key)
            resolve_source
            compute_key
            printf '%s\n' "$KEY" ;;
        prefix)
            resolve_source
            compute_key
            printf '%s\n' "$PREFIX" ;;
        prune)
            cmd_prune ;;
        *)
            usage >&2
            die "unknown command '$CMD'" ;;
    esac
}

# One line, so an edit of this file while a build runs cannot change what the
# running shell reads next.
main "$@"; exit
