#!/usr/bin/env bash
# Installs every Debian 12 package that tally's build and tests need. Idempotent; run as root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache git pkg-config
  clang libclang-rt-14-dev          # libFuzzer + sanitizer runtimes
  libgtest-dev libgmock-dev libbenchmark-dev
  libsimde-dev                      # AVX-512 matmul kernels tested under emulation
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libpcre2-dev libxxhash-dev
  libboost-dev                      # Asio + Beast (tally serve)
  curl prometheus                   # server e2e tests: raw HTTP, promtool checks /metrics
  python3                           # test helpers (golden-vector readers)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: missing packages (${missing[*]}); run as root" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The server e2e tests drive tally serve with the official openai npm package.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: node/npm missing; run as root" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
fi
echo "setup.sh: all ${#packages[@]} packages present"
