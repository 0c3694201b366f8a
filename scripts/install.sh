#!/usr/bin/env bash
# Builds tally (release, only the `tally` target) and installs it under PREFIX (default
# ~/.local): PREFIX/bin/tally, the bundled model in PREFIX/share/tally/models (the installed
# tally's default model) and the docs in PREFIX/share/doc/tally.
#   usage: bash scripts/install.sh [PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-$HOME/.local}

cmake --preset release >/dev/null
cmake --build --preset release --target tally
cmake --install build/release --prefix "$prefix"
echo "install.sh: installed $prefix/bin/tally"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "install.sh: $prefix/bin is not on your PATH; add it: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
