#!/usr/bin/env bash
# Renders the upstream charts of the platform's UIs into test/data/charts/ (Services and pod
# templates only, each file headed by the chart, version and commit it came from).
#
# Usage: scripts/render-charts.sh [chart-file...]     (default: every chart)
#
# Environment:
#   HELM                    a helm v3 binary to use instead of building one
#   RENDER_CHARTS_MIRRORS   where the git mirrors of the charts' repositories are
#                           (default /work/.mirror, laid out <owner>+<name>/repo)
#
# helm is the optional `helm` stage of scripts/e2e-toolchain.sh (built from Go modules; CI
# does not build it: the rendered files are committed). See test/data/charts/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${HELM:-}" ]]; then
  BIN=$(E2E_ONLY=helm scripts/e2e-toolchain.sh | tail -1)
  HELM="$BIN/helm"
fi
[[ -x "$HELM" ]] || { echo "render-charts: no helm at $HELM" >&2; exit 1; }
exec npx --no-install tsx scripts/render-charts.ts "$HELM" test/data/charts "$@"
