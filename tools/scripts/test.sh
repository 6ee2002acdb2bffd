#!/usr/bin/env bash
# `npm test`: bootstrap, then every check CI relies on. Extra args go to Jest.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/scripts/bootstrap.sh nats-server redis-server sshd bwrap
echo "== proto: lint and generated code"
bash tools/codegen/check.sh
echo "== typecheck (strict)"
npx tsc -p tsconfig.json --noEmit
echo "== lint (module boundaries)"
# The boundary rule reads the Nx project graph; without a computed one it silently skips.
npx nx show projects >/dev/null
npx eslint . --max-warnings 0
# Unit and integration specs are isolated (each starts its own servers on free ports, in its own
# temp dirs) and mostly wait on them: two workers halve their time on two cores. The e2e specs
# each start a whole stack of service processes: one at a time, so that their timings hold.
echo "== jest: unit, integration (2 workers)"
npx jest --ci --selectProjects unit integration --maxWorkers=2 --passWithNoTests "$@"
echo "== jest: e2e (one at a time)"
npx jest --ci --selectProjects e2e --runInBand --passWithNoTests "$@"
