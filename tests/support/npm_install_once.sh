#!/usr/bin/env bash
# Installs a test folder's pinned npm packages once per lock file; the node test packages'
# install.sh scripts call it. Concurrent callers (ctest -j) wait for each other. Exit 2 without
# node/npm, npm's status when the install fails (no network to the npm registry).
#
# Usage: npm_install_once.sh DIR PACKAGE NPM-ARGS...   (PACKAGE: a path under node_modules that
# shows the install is there; NPM-ARGS: the npm command, e.g. `ci`)
set -euo pipefail
dir=$1 package=$2
shift 2
cd "$dir"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "$dir/install.sh: node and npm are not installed (scripts/setup.sh installs them)" >&2
  exit 2
fi
exec 9>.install.lock
flock 9
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
marker=node_modules/.tally-lock-hash
if [[ -d node_modules/$package && -f $marker && $(cat "$marker") == "$lock_hash" ]]; then
  exit 0
fi
npm "$@" --no-audit --no-fund --loglevel=error >&2
echo "$lock_hash" >"$marker"
