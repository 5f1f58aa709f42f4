#!/usr/bin/env bash
# Command-line tools the test suite runs: openssl (throwaway TLS certificates for the
# local HTTPS server of tests/integration/https_server.py).
set -euo pipefail
if ! command -v openssl >/dev/null; then
  echo "[setup] installing openssl with apt" >&2
  apt-get update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq openssl >/dev/null
fi
