#!/usr/bin/env bash
# Fails when libs/contracts/src/generated is not what proto/ generates (CONVENTIONS #9).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/proto" "$root/buf.yaml" "$root/buf.gen.yaml" "$tmp/"
ln -s "$root/node_modules" "$tmp/node_modules"
(cd "$tmp" && npx --no-install buf lint && npx --no-install buf generate)
(cd "$root" && node -r @swc-node/register tools/codegen/contracts-index.ts "$tmp/libs/contracts/src/generated")
if ! diff -r "$tmp/libs/contracts/src/generated" "$root/libs/contracts/src/generated" >"$tmp/diff.txt"; then
  head -40 "$tmp/diff.txt"
  echo "libs/contracts/src/generated is stale: run 'npm run proto:generate' and commit the result" >&2
  exit 1
fi
echo "proto: lint clean, generated code up to date"
