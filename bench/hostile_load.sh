#!/usr/bin/env bash
# A real `tally serve` under CLIENTS concurrent clients, half of them hostile (issue 16's
# benchmark). Two phases of SECONDS each on the same server:
#   baseline: CLIENTS/2 well-behaved clients (each its own key) streaming 64-token completions
#             back to back, and a /health probe every 20 ms;
#   mixed:    the same, plus CLIENTS/2 hostile clients in six kinds: slow readers (a 4 KiB
#             receive buffer read 16 bytes a second), slowloris headers, slow bodies, 8 MiB
#             bodies announced, wrong keys with 4 MiB announced, and one key far past its limit.
# Reports TPOT/TTFT of the well-behaved streams and /health latency in both phases, and exits 1
# when /health p99 under attack exceeds 100 ms, TPOT p50 exceeds 1.5x the baseline's, or a
# well-behaved client or probe got anything but 200.
#   bench/hostile_load.sh      CLIENTS=1000 SECONDS_PER_PHASE=60 THREADS=2 HOSTILE_NICE=10
#                              TALLY=build/release/tally MODEL=models/stories260K.gguf
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-1000}
PHASE_SECONDS=${SECONDS_PER_PHASE:-60}
THREADS=${THREADS:-2}
# The attackers run on the server's own cores here; a real attacker's CPU is not the server's
# cost, so their process runs at a lower priority (the report gives the attempts per second).
HOSTILE_NICE=${HOSTILE_NICE:-10}
TALLY=${TALLY:-build/release/tally}
MODEL=${MODEL:-models/stories260K.gguf}
WORK=${WORK:-$(mktemp -d /tmp/tally_hostile.XXXXXX)}
HALF=$((CLIENTS / 2))
CLIENT=bench/hostile_clients.py
[[ -x "$TALLY" ]] || { echo "hostile_load: $TALLY not built"; exit 1; }

# Every well-behaved and hostile client has its own key (so per-key limits do not mix them up),
# except the over-limit kind, which shares sk-hammer.
{
  for i in $(seq 0 $((HALF - 1))); do echo "sk-good-$i"; echo "sk-slow-$i"; done
  echo sk-hammer
} >"$WORK/keys"

cleanup() {
  kill "${SERVER:-}" 2>/dev/null || true
  jobs -p | xargs -r kill 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
# The open-file limit sizes --max-connections: room for every client and the probes.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# shellcheck source=scripts/lib/start_server.sh
source scripts/lib/start_server.sh
start_server "$WORK/serve.err" -m "$MODEL" --port 0 --threads "$THREADS" \
  --api-keys-file "$WORK/keys" --open-health --rate-limit-rpm 60 --access-log off \
  --max-queue $((CLIENTS + 64))
echo "hostile_load: tally serve pid $SERVER on $URL; $HALF well-behaved + $HALF hostile clients," \
  "${PHASE_SECONDS}s a phase; work dir $WORK; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

wait_until_idle() {  # the queue of one phase must not spill into the next
  for _ in $(seq 1 600); do
    page=$(curl -s -H "Authorization: Bearer sk-good-0" "$URL/metrics" || true)
    awk '$1 == "tally:num_requests_running" {r = $2} $1 == "tally:num_requests_waiting" {w = $2}
         END {exit !(r == 0 && w == 0)}' <<<"$page" && return 0
    sleep 0.5
  done
  echo "hostile_load: the server did not drain"; return 1
}

# CPU ticks each server thread has used so far, by thread name (tally-engine, tally-compute-N,
# tally-prompt-N, and the I/O thread, which keeps the process's name).
thread_ticks() {
  for task in /proc/"$SERVER"/task/*; do
    # comm may hold spaces in general, not here; utime and stime are fields 14 and 15.
    awk -v name="$(cat "$task/comm")" '{print name, $14 + $15}' "$task/stat"
  done
}

run_phase() {
  local phase=$1 pids=()
  thread_ticks >"$WORK/${phase}_ticks_start.txt"
  python3 "$CLIENT" health --port "$PORT" --seconds "$PHASE_SECONDS" \
    --out "$WORK/${phase}_health.json" & pids+=($!)
  python3 "$CLIENT" good "$HALF" --port "$PORT" --seconds "$PHASE_SECONDS" \
    --out "$WORK/${phase}_good.json" & pids+=($!)
  if [[ $phase == mixed ]]; then
    nice -n "$HOSTILE_NICE" python3 "$CLIENT" hostile "$HALF" --port "$PORT" --seconds "$PHASE_SECONDS" \
      --out "$WORK/${phase}_hostile.json" & pids+=($!)
  fi
  wait "${pids[@]}"
  thread_ticks >"$WORK/${phase}_ticks_end.txt"
  echo "hostile_load: $phase done; server RSS $(awk '/^VmRSS/ {print $2, $3}' "/proc/$SERVER/status")"
}

run_phase baseline
wait_until_idle
run_phase mixed
wait_until_idle
kill -0 "$SERVER" || { echo "hostile_load: the server died"; cat "$WORK/serve.err"; exit 1; }
echo "hostile_load: load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
TICKS_PER_SECOND=$(getconf CLK_TCK) python3 "$CLIENT" report "$WORK"
