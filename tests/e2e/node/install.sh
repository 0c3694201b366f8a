#!/usr/bin/env bash
# Installs the pinned openai package (package-lock.json) into tests/e2e/node/node_modules with
# `npm ci`, once per lock file: the server e2e tests call this before running the node scripts.
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../../support/npm_install_once.sh" "$here" openai ci
