#!/usr/bin/env bash
# Installs the pinned node-llama-cpp and its prebuilt linux-x64 CPU binaries (package-lock.json
# pins every version) into tests/llamacpp/node_modules, once per lock file. `npm install`, not
# `npm ci`: ci refuses a lock that lacks the other platforms' optional packages, which the
# registry mirror here does not serve. Optional dependencies (CUDA and Vulkan builds, other
# platforms) and install scripts are skipped: the prebuilt CPU libraries are all the reference
# needs, and nothing is built or downloaded past the registry.
# Concurrent callers (ctest -j) wait for each other. Exit 2 without node/npm, npm's status when
# the install fails (no network to the npm registry).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install.sh: node and npm are not installed (scripts/setup.sh installs them)" >&2
  exit 2
fi
exec 9>.install.lock
flock 9
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
marker=node_modules/.tally-lock-hash
if [[ -d node_modules/@node-llama-cpp/linux-x64 && -f $marker && $(cat "$marker") == "$lock_hash" ]]; then
  exit 0
fi
npm install --omit=optional --ignore-scripts --no-save --no-audit --no-fund --loglevel=error >&2
echo "$lock_hash" >"$marker"
