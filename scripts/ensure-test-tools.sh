#!/usr/bin/env bash
# Command-line tools the test suite runs: openssl (throwaway TLS certificates for the
# local HTTPS server of tests/integration/https_server.py) and gcc (the native objects
# tests/inspect compiles; the runtime build needs it anyway, `make test-fast` does not
# build the runtime).
set -euo pipefail
missing=()
command -v openssl >/dev/null || missing+=(openssl)
command -v gcc >/dev/null || missing+=(gcc libc6-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing ${missing[*]} with apt" >&2
  apt-get update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi
