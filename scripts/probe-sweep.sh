#!/usr/bin/env bash
# The probe sweep (see docs/cli.md "The probe sweep"): replays the probes of careful use
# against the real CLI and checks exit statuses, untouched files, limits and leftover processes.
# Runs under the bundled Node 24 when the system Node cannot run TypeScript. Usage:
#   bash scripts/probe-sweep.sh [NAME-FILTER]
set -euo pipefail
cd "$(dirname "$0")/.."
node_bin=node
if ! node -e 'process.exit(process.features?.typescript ? 0 : 1)' 2>/dev/null; then
  node_bin=node_modules/node/bin/node
fi
exec "$node_bin" test/probe-sweep.ts "$@"
