#!/usr/bin/env bash
# Makes a fresh machine ready: npm packages, and nats-server / redis-server from the OS
# packages when missing (installed when we may: root or passwordless sudo with apt-get).
# usage: bootstrap.sh [nats-server] [redis-server]
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ ! -d node_modules ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "bootstrap: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
fi

find_bin() { command -v "$1" 2>/dev/null || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; } || { [ -x "/usr/bin/$1" ] && echo "/usr/bin/$1"; } || true; }

missing=()
for bin in "$@"; do
  [ -n "$(find_bin "$bin")" ] || missing+=("$bin")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      echo "bootstrap: ${missing[*]} missing; install with: sudo apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  fi
  echo "bootstrap: installing ${missing[*]} from the OS packages"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  # The Debian packages start system services; gpufleet starts its own on free ports.
else
  echo "bootstrap: ${missing[*]} missing; install them with your OS package manager (e.g. 'brew install nats-server redis')" >&2
  exit 1
fi
