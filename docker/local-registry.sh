#!/usr/bin/env bash
# Run a local image registry from Debian's docker-registry package (the CNCF
# "distribution" registry), for pushing Faastlane's images where no public or private
# registry is reachable:
#
#   docker/local-registry.sh [ADDR [DIR]]   serve on ADDR (default 127.0.0.1:5000),
#                                           storing images under DIR (default
#                                           $FAASTLANE_CACHE/registry); runs in the
#                                           foreground (exec), so its PID is the server's
#
# then `faastlane deploy ... --docker --registry 127.0.0.1:5000`. dockerd pushes to a
# registry on 127.0.0.0/8 over plain HTTP without configuration (such registries are
# insecure-by-default there); any other address needs TLS or dockerd's
# --insecure-registry. Installs docker-registry with apt-get when missing (root only).
set -euo pipefail
CACHE=${FAASTLANE_CACHE:-${HOME:?set HOME or FAASTLANE_CACHE}/.cache/faastlane}
ADDR=${1:-127.0.0.1:5000}
DIR=${2:-$CACHE/registry}

die() { printf 'local-registry: error: %s\n' "$*" >&2; exit 1; }

if ! command -v docker-registry >/dev/null; then
    [[ $(id -u) == 0 ]] || die "docker-registry is not installed: sudo apt-get install docker-registry"
    echo "local-registry: installing docker-registry" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq docker-registry >/dev/null \
        || die "apt-get install docker-registry failed"
fi
mkdir -p "$DIR"
config="$DIR/config.yml"
cat >"$config" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $DIR/data
  delete:
    enabled: true
http:
  addr: $ADDR
YAML
exec docker-registry serve "$config"
