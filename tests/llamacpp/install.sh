#!/usr/bin/env bash
# Installs the pinned node-llama-cpp and its prebuilt linux-x64 CPU binaries (package-lock.json
# pins every version) into tests/llamacpp/node_modules, once per lock file. `npm install`, not
# `npm ci`: ci refuses a lock that lacks the other platforms' optional packages, which the
# registry mirror here does not serve. Optional dependencies (CUDA and Vulkan builds, other
# platforms) and install scripts are skipped: the prebuilt CPU libraries are all the reference
# needs, and nothing is built or downloaded past the registry.
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../support/npm_install_once.sh" "$here" @node-llama-cpp/linux-x64 \
  install --omit=optional --ignore-scripts --no-save
