#!/usr/bin/env bash
# Regenerates libs/contracts/src/generated from proto/ (buf + ts-proto, both from node_modules).
set -euo pipefail
cd "$(dirname "$0")/../.."
npx buf lint
rm -rf libs/contracts/src/generated
npx buf generate
echo "generated: libs/contracts/src/generated"
