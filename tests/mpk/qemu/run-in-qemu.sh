#!/usr/bin/env bash
# run-in-qemu.sh DIR CMD... -- run CMD in directory DIR of this machine's filesystem,
# inside Debian's kernel booted under QEMU's software CPU (-accel tcg -cpu max), which
# emulates Intel protection keys (PKU) even where the host CPU has none.  The host's root
# filesystem is mounted read-write over 9p, so the built runtime, its libraries and the
# tests are simply there.  Prints CMD's output (stdout and stderr, via the serial console)
# and exits with CMD's status.
#
# Exit status: CMD's own; 125 when the guest ended without reporting one (crash, timeout);
# 126 when the harness could not set itself up (QEMU, busybox or the kernel could not be
# installed) -- always with a line starting "QEMU-HARNESS-ERROR:" on stderr.
#
# Environment:
#   FAASTLANE_CACHE   cache root (default $HOME/.cache/faastlane); kernel, initramfs and
#                     per-run job folders live in $FAASTLANE_CACHE/qemu, outside the checkout
#   QEMU_TIMEOUT      seconds before the guest is killed (default 900)
#   QEMU_SMP, QEMU_MEM  guest CPUs (default 2) and memory (default 2G)
#   QEMU_APPEND       extra kernel command-line words (e.g. "nopku")
#   QEMU_KEEP_JOB     when set, keep the run's job folder (job.sh, serial.log) for debugging
#   QEMU_PASS_ENV     extra variable names to export into the guest; PYTHONPATH,
#                     PYTHONDONTWRITEBYTECODE and every FAASTLANE_* variable always pass
#
# Concurrent runs are safe: setup is serialised with flock and published atomically, and
# each run has its own job folder (named on the kernel command line) and serial log.
set -euo pipefail

die() { echo "QEMU-HARNESS-ERROR: $*" >&2; exit 126; }
[ $# -ge 2 ] || { echo "usage: $0 DIR CMD..." >&2; exit 2; }

cache=${FAASTLANE_CACHE:-${HOME:-/root}/.cache/faastlane}/qemu
mkdir -p "$cache/jobs" || die "cannot create the cache folder $cache"

have() { command -v "$1" >/dev/null 2>&1; }
static_busybox() {
  local bb
  bb=$(command -v busybox 2>/dev/null) || return 1
  ! ldd "$bb" >/dev/null 2>&1     # ldd fails on a static executable
}

apt_install() {
  local opts=(-y -qq --no-install-recommends -o Dpkg::Use-Pty=0)
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install "${opts[@]}" "$@" >"$cache/apt.log" 2>&1 && return 0
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$cache/apt.log" 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install "${opts[@]}" "$@" >>"$cache/apt.log" 2>&1
}

setup_tools() {
  if have qemu-system-x86_64 && static_busybox && have cpio && have gzip; then
    return 0
  fi
  have apt-get || die "qemu-system-x86_64, a static busybox and cpio are needed and apt-get is missing"
  apt_install qemu-system-x86 busybox-static cpio gzip \
    || die "apt-get could not install qemu-system-x86 busybox-static cpio (log: $cache/apt.log)"
  if ! { have qemu-system-x86_64 && static_busybox && have cpio; }; then
    die "qemu-system-x86_64, a static busybox or cpio still missing after apt-get install"
  fi
}

# Debian's kernel (6.1 in bookworm) has CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS=y.
kernel_package() {
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  if [ -z "$pkg" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$cache/apt.log" 2>&1 || true
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  fi
  [ -n "$pkg" ] || die "apt-cache knows no linux-image-amd64 kernel package (log: $cache/apt.log)"
  echo "$pkg"
}

setup_kernel() {
  local pkg tmp
  if ls "$cache"/kernel/boot/vmlinuz-* >/dev/null 2>&1; then
    return 0
  fi
  pkg=$(kernel_package)
  tmp=$(mktemp -d "$cache/kernel.tmp.XXXXXX")
  (cd "$tmp" && apt-get download "$pkg" >"$cache/apt-download.log" 2>&1) \
    || { rm -rf "$tmp"; die "apt-get download $pkg failed (log: $cache/apt-download.log)"; }
  dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/root" || { rm -rf "$tmp"; die "dpkg-deb -x $pkg failed"; }
  rm -rf "$cache/kernel"
  mv "$tmp/root" "$cache/kernel"
  rm -rf "$tmp"
}

# The guest's /init: load virtio + 9p, mount the host root, run the job named on the
# kernel command line chrooted there, report its status, power off.
write_init() {
  cat >"$1" <<'EOI'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p; do
  [ -f /mods/$m.ko ] && { insmod /mods/$m.ko || echo "QEMU-HARNESS-ERROR: insmod $m failed"; }
done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose host /mnt \
  || echo "QEMU-HARNESS-ERROR: 9p mount of the host root failed"
mount -t proc proc /mnt/proc; mount -t sysfs sys /mnt/sys; mount -t devtmpfs dev /mnt/dev 2>/dev/null
mount -t tmpfs tmp /mnt/dev/shm 2>/dev/null
job=$(sed -n 's/.*faastlane\.job=\([^ ]*\).*/\1/p' /proc/cmdline)
chroot /mnt /bin/bash "$job"
echo "QEMU-HARNESS-EXIT: $?"
poweroff -f
EOI
  chmod +x "$1"
}

setup_initrd() {
  local vmlinuz=$1 kver mods r out
  kver=${vmlinuz##*/vmlinuz-}
  out=$cache/initrd-$kver.gz
  [ -f "$out" ] && { echo "$out"; return 0; }
  mods=$cache/kernel/lib/modules/$kver/kernel
  r=$(mktemp -d "$cache/initroot.XXXXXX")
  mkdir -p "$r"/{bin,proc,sys,dev,mnt,mods}
  cp "$(command -v busybox)" "$r/bin/busybox"
  for m in drivers/virtio/virtio drivers/virtio/virtio_ring drivers/virtio/virtio_pci_legacy_dev \
           drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci net/9p/9pnet \
           net/9p/9pnet_virtio fs/netfs/netfs fs/fscache/fscache fs/9p/9p; do
    # Some are built in (or absent) in other kernel versions: copy what exists.
    [ -f "$mods/$m.ko" ] && cp "$mods/$m.ko" "$r/mods/"
  done
  [ -f "$r/mods/9p.ko" ] || { rm -rf "$r"; die "the kernel package has no 9p module under $mods"; }
  write_init "$r/init"
  (cd "$r" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$out.tmp.$$"
  mv "$out.tmp.$$" "$out"
  rm -rf "$r"
  echo "$out"
}

# ---- setup, serialised between concurrent runs ----
exec 9>"$cache/setup.lock"
flock 9
setup_tools
setup_kernel
kernels=("$cache"/kernel/boot/vmlinuz-*)
vmlinuz=${kernels[0]}
initrd=$(setup_initrd "$vmlinuz")
flock -u 9
exec 9>&-

# ---- the job ----
dir=$1; shift
job=$(mktemp -d "$cache/jobs/run.XXXXXX")
[ -n "${QEMU_KEEP_JOB:-}" ] || trap 'rm -rf "$job"' EXIT
{
  printf 'cd %q || { echo "QEMU-HARNESS-ERROR: no directory %q in the guest"; exit 97; }\n' "$dir" "$dir"
  printf 'export PATH=%q HOME=%q LANG=C.UTF-8\n' "$PATH" "${HOME:-/root}"
  # QEMU 7.2's TCG mis-emulates the AVX2-class SIMD numpy and OpenBLAS dispatch to
  # (scikit-learn saw 12 classes in the 10-digit set; a run died of SIGSEGV; native
  # runs are clean): guest jobs use their SSE4.2 kernels.
  echo 'export NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR" OPENBLAS_CORETYPE=Nehalem'
  # Loopback up: jobs may serve on 127.0.0.1 inside the guest (the examples' local AWS).
  echo 'busybox ip link set lo up 2>/dev/null || busybox ifconfig lo 127.0.0.1 up 2>/dev/null || true'
  for v in PYTHONPATH PYTHONDONTWRITEBYTECODE ${QEMU_PASS_ENV:-} $(compgen -e | grep '^FAASTLANE_' || true); do
    [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
  done
  echo 'echo QEMU-HARNESS-BEGIN'
  printf '%q ' "$@"; echo
} >"$job/job.sh"

log=$job/serial.log
timeout "${QEMU_TIMEOUT:-900}" qemu-system-x86_64 -accel tcg -cpu max \
  -smp "${QEMU_SMP:-2}" -m "${QEMU_MEM:-2G}" -nographic -no-reboot \
  -kernel "$vmlinuz" -initrd "$initrd" \
  -append "console=ttyS0 panic=-1 quiet loglevel=1 ${QEMU_APPEND:-} faastlane.job=$job/job.sh" \
  -fsdev local,id=h,path=/,security_model=passthrough,multidevs=remap \
  -device virtio-9p-pci,fsdev=h,mount_tag=host >"$log" 2>&1 || true

sed -e 's/\r$//' "$log" | sed -n '/QEMU-HARNESS-BEGIN/,$p' | sed '1d' | grep -av 'QEMU-HARNESS-EXIT: '
grep -a 'QEMU-HARNESS-ERROR' "$log" | sed -e 's/\r$//' >&2 || true
code=$(sed -e 's/\r$//' "$log" | sed -n 's/.*QEMU-HARNESS-EXIT: \([0-9]*\).*/\1/p' | tail -1)
if [ -z "$code" ]; then
  echo "QEMU-HARNESS-ERROR: the guest reported no exit status (crash or timeout after ${QEMU_TIMEOUT:-900} s); last console lines:" >&2
  sed -e 's/\r$//' "$log" | tail -20 >&2
  exit 125
fi
exit "$code"
