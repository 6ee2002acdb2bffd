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
echo "== jest (unit, integration, e2e)"
npx jest --ci "$@"
