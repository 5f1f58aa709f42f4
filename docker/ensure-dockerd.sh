#!/usr/bin/env bash
# Make sure a Docker engine answers: install docker.io from Debian if the CLI or the
# daemon is missing, and start dockerd if nothing is listening.  Used by the Docker
# tests and CI; prints nothing on success when the engine was already up.
#   DOCKERD_LOG   where a dockerd started here logs (default: $FAASTLANE_CACHE/dockerd.log)
set -euo pipefail
CACHE=${FAASTLANE_CACHE:-${HOME:?set HOME or FAASTLANE_CACHE}/.cache/faastlane}
LOG=${DOCKERD_LOG:-$CACHE/dockerd.log}

die() { printf 'ensure-dockerd: error: %s\n' "$*" >&2; exit 1; }

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then exit 0; fi

if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
    [[ $(id -u) == 0 ]] || die "Docker is not installed and this is not root: sudo apt-get install docker.io"
    echo "ensure-dockerd: installing docker.io" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq docker.io >/dev/null \
        || die "apt-get install docker.io failed"
fi

[[ $(id -u) == 0 ]] || die "the Docker engine is not running and only root can start it here (sudo dockerd)"
mkdir -p "$(dirname "$LOG")"
echo "ensure-dockerd: starting dockerd (log: $LOG)" >&2
# setsid: the daemon outlives the test session that started it, as a service would.
setsid dockerd >"$LOG" 2>&1 < /dev/null &
for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && exit 0
    sleep 0.5
done
tail -20 "$LOG" >&2
die "dockerd did not come up within 30 s (log above)"
