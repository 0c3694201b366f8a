#!/usr/bin/env bash
# Installs the pinned openai package (package-lock.json) into tests/e2e/node/node_modules with
# `npm ci`, once per lock file: the server e2e tests call this before running the node scripts.
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
if [[ -d node_modules/openai && -f $marker && $(cat "$marker") == "$lock_hash" ]]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$lock_hash" >"$marker"
