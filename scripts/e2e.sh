#!/usr/bin/env bash
# Runs the end-to-end suite: builds the toolchain from Go modules when the cache lacks it
# (see docs/e2e-toolchain.md), then the scenarios against a throw-away local cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null; then
  echo "e2e: Go is not installed: cannot build the Pulumi CLI, providers and kube-apiserver" >&2
  exit 1
fi
t0=$SECONDS
E2E_BIN=$(scripts/e2e-toolchain.sh | tail -n 1)
export E2E_BIN
echo "e2e: toolchain ready in $((SECONDS - t0))s: $E2E_BIN" >&2
exec npx vitest run --config vitest.e2e.config.mts "$@"
