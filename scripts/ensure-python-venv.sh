#!/usr/bin/env bash
# Make sure PYTHON can create virtual environments (Debian splits venv into python3-venv).
set -euo pipefail
python=${1:-python3}
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "[setup] installing python3-venv with apt" >&2
  apt-get update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-venv >/dev/null
fi
