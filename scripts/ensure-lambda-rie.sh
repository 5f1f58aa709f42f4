#!/usr/bin/env bash
# The AWS Lambda Runtime Interface Emulator (aws-lambda-rie), built from its Go module
# through the Go module proxy, cached outside the checkout by version; prints its path.
# The Lambda packages' tests run under it: the emulator AWS ships, not a stand-in.
set -euo pipefail
VERSION=v0.0.0-20261030222936-bef5c4ba774d  # the module's version served here
CACHE=${FAASTLANE_CACHE:-$HOME/.cache/faastlane}
BIN=$CACHE/lambda-rie/$VERSION
if [ ! -x "$BIN/aws-lambda-rie" ]; then
  command -v go >/dev/null || { echo "ensure-lambda-rie: needs Go (https://go.dev/dl/) to build the emulator" >&2; exit 1; }
  echo "[setup] building aws-lambda-rie $VERSION with go install" >&2
  mkdir -p "$BIN.tmp"
  GOBIN="$BIN.tmp" GOFLAGS=-mod=mod go install \
    "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$VERSION" >&2
  rm -rf "$BIN" && mv "$BIN.tmp" "$BIN"
fi
echo "$BIN/aws-lambda-rie"
