#!/usr/bin/env bash
# Makes a fresh machine ready: npm packages, and nats-server / redis-server / sshd / bwrap from the OS
# packages when missing (installed when we may: root or passwordless sudo with apt-get).
# usage: bootstrap.sh [nats-server] [redis-server] [sshd] [bwrap]
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ ! -d node_modules ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "bootstrap: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
fi

find_bin() { command -v "$1" 2>/dev/null || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; } || { [ -x "/usr/bin/$1" ] && echo "/usr/bin/$1"; } || true; }

# The Debian package that provides a binary.
package_of() { case "$1" in sshd) echo openssh-server ;; bwrap) echo bubblewrap ;; *) echo "$1" ;; esac; }

missing=()
for bin in "$@"; do
  [ -n "$(find_bin "$bin")" ] || missing+=("$(package_of "$bin")")
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
  # Keep the packages from starting their system services (sshd on 22, redis on 6379, …): a
  # temporary policy-rc.d refuses service starts during this install only.
  added_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null && $sudo chmod +x /usr/sbin/policy-rc.d && added_policy=1
  fi
  status=0
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null || status=$?
  if [ -n "$added_policy" ]; then $sudo rm -f /usr/sbin/policy-rc.d; fi
  if [ "$status" -ne 0 ]; then echo "bootstrap: apt-get install ${missing[*]} failed" >&2; exit "$status"; fi
  # gpufleet starts its own servers on free ports (sshd: one per GPU instance, own config).
else
  echo "bootstrap: ${missing[*]} missing; install them with your OS package manager (e.g. 'brew install nats-server redis')" >&2
  exit 1
fi
