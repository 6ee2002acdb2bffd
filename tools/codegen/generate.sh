#!/usr/bin/env bash
# Regenerates libs/contracts/src/generated from proto/ (buf + ts-proto, both from node_modules),
# then its index.ts (tools/codegen/contracts-index.ts).
set -euo pipefail
cd "$(dirname "$0")/../.."
npx buf lint
rm -rf libs/contracts/src/generated
npx buf generate
node -r @swc-node/register tools/codegen/contracts-index.ts libs/contracts/src/generated
echo "generated: libs/contracts/src/generated"
