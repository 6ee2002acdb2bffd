#!/usr/bin/env bash
# `npm start`: a whole simulated fleet on this machine (examples/fleets/dev.yaml).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/scripts/bootstrap.sh nats-server
exec node bin/gpufleet up --fleet examples/fleets/dev.yaml "$@"
