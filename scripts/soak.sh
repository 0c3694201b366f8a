#!/usr/bin/env bash
# Soak test: a real `tally serve` on the bundled model under a mixed load for MINUTES minutes
# (default 30): streams, non-streamed and chat requests, clients that cancel mid-stream or
# disconnect before the answer, malformed requests, bad keys, and one key hammered past its
# rate limit. At the end it checks:
#   - no leaked KV blocks: /metrics reports 0 running, 0 waiting and a KV usage of 0 once the
#     load has stopped (the prefix cache is off, so every block must be back in the pool);
#   - stable memory: the server's RSS at the end is within 5% of its RSS after the warm-up
#     (the first tenth of the run, at least 20 s);
#   - 0 unexpected 5xx: every status is one its kind of request may get (see expect_status).
# Exits 0 when all hold, 1 otherwise (the reasons are printed).
#   scripts/soak.sh [MINUTES]     TALLY=build/release/tally  MODEL=models/stories260K.gguf
#   SOAK_SECONDS=N overrides MINUTES (for short runs).
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=${1:-30}
SECONDS_TOTAL=${SOAK_SECONDS:-$((MINUTES * 60))}
TALLY=${TALLY:-build/release/tally}
MODEL=${MODEL:-models/stories260K.gguf}
WORK=$(mktemp -d /tmp/tally_soak.XXXXXX)
# The well-behaved workers spread their requests over 64 keys, each far below the limit of
# 30 requests a minute; the hammer's one key is far above it.
GOOD_KEYS=()
for i in $(seq 1 64); do GOOD_KEYS+=("sk-soak-$i"); done
HAMMER_KEY=sk-soak-hammer
printf '%s\n' "${GOOD_KEYS[@]}" "$HAMMER_KEY" >"$WORK/keys"
[[ -x "$TALLY" ]] || { echo "soak: $TALLY not built (cmake --build --preset release)"; exit 1; }
command -v curl >/dev/null || { echo "soak: curl is needed"; exit 1; }

cleanup() {
  kill "${SERVER:-}" 2>/dev/null || true
  jobs -p | xargs -r kill 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
# shellcheck source=scripts/lib/start_server.sh
source scripts/lib/start_server.sh
start_server "$WORK/serve.err" -m "$MODEL" --port 0 --threads 2 --kv-cache-memory 64MiB \
  --no-prefix-cache --api-keys-file "$WORK/keys" --rate-limit-rpm 30 --access-log off \
  --max-body-bytes 65536
echo "soak: tally serve pid $SERVER on $URL for ${SECONDS_TOTAL}s (work dir $WORK)"

END=$(($(date +%s) + SECONDS_TOTAL))

# One request; appends "<kind> <status>" to the status log. curl's 000 (no status) is what a
# client that gave up on purpose sees.
call() {
  local kind=$1 max_time=$2
  shift 2
  local status
  status=$(curl -s -o /dev/null -w '%{http_code}' --max-time "$max_time" "$@" || true)
  echo "$kind ${status:-000}" >>"$WORK/status.$BASHPID"
}

auth_of() { echo "Authorization: Bearer ${GOOD_KEYS[$((RANDOM % ${#GOOD_KEYS[@]}))]}"; }
json=(-H "Content-Type: application/json")
completion='{"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0.8}'
stream='{"prompt": "The little dog", "max_tokens": 64, "stream": true}'
chat='{"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 32}'

worker_streams() { while (($(date +%s) < END)); do
  local auth=(-H "$(auth_of)" "${json[@]}")
  call stream 60 -N "${auth[@]}" -d "$stream" "$URL/v1/completions"; done; }
worker_completions() { while (($(date +%s) < END)); do
  local auth=(-H "$(auth_of)" "${json[@]}")
  call completion 60 "${auth[@]}" -d "$completion" "$URL/v1/completions"
  call chat 60 "${auth[@]}" -d "$chat" "$URL/v1/chat/completions"
  call tokenize 60 "${auth[@]}" -d '{"prompt": "hello world"}' "$URL/tokenize"; done; }
worker_cancels() { while (($(date +%s) < END)); do
  local auth=(-H "$(auth_of)" "${json[@]}")
  call cancel 0.$((RANDOM % 9 + 1)) -N "${auth[@]}" -d "$stream" "$URL/v1/completions"
  call disconnect 0.05 "${auth[@]}" -d "$completion" "$URL/v1/completions"; done; }
worker_malformed() { while (($(date +%s) < END)); do
  local auth=(-H "$(auth_of)" "${json[@]}")
  call malformed 10 "${auth[@]}" -d '{"prompt": ' "$URL/v1/completions"
  call malformed 10 "${auth[@]}" -d '{"prompt": "x", "max_tokens": -3}' "$URL/v1/completions"
  call malformed 10 "${auth[@]}" -d '{"prompt": "x", "n": 1000}' "$URL/v1/completions"
  call malformed 10 "${auth[@]}" -d '{"messages": 5}' "$URL/v1/chat/completions"
  call malformed 10 "${auth[@]}" -H "Content-Length: 4194304" -d 'x' "$URL/v1/completions"
  call badkey 10 -H "Authorization: Bearer sk-wrong" -d "$completion" "$URL/v1/completions"
  call badkey 10 -d "$completion" "$URL/v1/completions"
  call notfound 10 "${auth[@]}" "$URL/no/such/route"
  sleep 1; done; }
worker_hammer() { while (($(date +%s) < END)); do
  call hammer 30 -H "Authorization: Bearer $HAMMER_KEY" -d '{"prompt": "x"}' "$URL/tokenize"
  done; }

worker_streams & worker_streams & worker_completions & worker_completions &
worker_cancels & worker_malformed & worker_hammer & worker_hammer & worker_hammer &

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER/status"; }
WARMUP=$((SECONDS_TOTAL / 10 > 20 ? SECONDS_TOTAL / 10 : 20))
sleep "$WARMUP"
RSS_WARM=$(rss_kib)
echo "soak: RSS after ${WARMUP}s of warm-up: ${RSS_WARM} KiB"
while (($(date +%s) < END)); do
  sleep 10
  kill -0 "$SERVER" 2>/dev/null || { echo "soak: the server died"; cat "$WORK/serve.err"; exit 1; }
done
wait $(jobs -p | grep -v "^$SERVER\$") 2>/dev/null || true

# The load is over: give the engine a moment to free what the last cancels left.
# (The whole page first: an awk that stops reading early would fail curl under pipefail.)
metric() {
  local page
  page=$(curl -s -H "$(auth_of)" "$URL/metrics" || true)
  awk -v name="$1" '$1 ~ ("^tally:" name "(\\{|$)") && !found {print $2; found = 1}' <<<"$page"
}
for _ in $(seq 1 50); do
  awk -v r="$(metric num_requests_running)" -v w="$(metric num_requests_waiting)" \
    'BEGIN {exit !(r == 0 && w == 0)}' && break
  sleep 0.2
done
RSS_END=$(rss_kib)
running=$(metric num_requests_running)
waiting=$(metric num_requests_waiting)
kv=$(metric kv_cache_usage_perc)

# Which statuses each kind may get: anything else (every 5xx among them) is unexpected.
expect_status() {
  case "$1" in
    stream | completion | chat | tokenize) [[ "$2" == 200 ]] ;;
    cancel | disconnect) [[ "$2" == 200 || "$2" == 000 ]] ;;
    malformed) [[ "$2" == 400 || "$2" == 413 ]] ;;
    badkey) [[ "$2" == 401 ]] ;;
    notfound) [[ "$2" == 404 ]] ;;
    hammer) [[ "$2" == 200 || "$2" == 429 ]] ;;
    *) false ;;
  esac
}
cat "$WORK"/status.* >"$WORK/statuses"
total=$(wc -l <"$WORK/statuses")
unexpected_requests=0
while read -r count kind status; do
  if ! expect_status "$kind" "$status"; then
    unexpected_requests=$((unexpected_requests + count))
    echo "soak: unexpected: $count x $kind -> $status"
  fi
done < <(sort "$WORK/statuses" | uniq -c)
echo "soak: $total requests by kind and status:"
sort "$WORK/statuses" | uniq -c | sed 's/^/  /'

failed=0
echo "soak: after the load: running=$running waiting=$waiting kv_cache_usage=$kv"
if ! awk -v r="$running" -v w="$waiting" -v k="$kv" 'BEGIN {exit !(r == 0 && w == 0 && k == 0)}'; then
  echo "soak: FAIL: KV blocks or requests left after the load"; failed=1
fi
growth=$(awk -v a="$RSS_WARM" -v b="$RSS_END" 'BEGIN {printf "%.2f", (b - a) * 100 / a}')
echo "soak: RSS ${RSS_WARM} KiB after warm-up, ${RSS_END} KiB at the end (${growth}%)"
if awk -v g="$growth" 'BEGIN {exit !(g > 5 || g < -5)}'; then
  echo "soak: FAIL: RSS moved more than 5%"; failed=1
fi
if ((unexpected_requests > 0)); then
  echo "soak: FAIL: $unexpected_requests requests got an unexpected status"; failed=1
fi
((failed == 0)) && echo "soak: passed" || true
exit "$failed"
