# Sourced by scripts that drive a real `tally serve` (scripts/soak.sh, bench/hostile_load.sh).
# start_server LOG ARGS...: runs "$TALLY serve ARGS..." in the background with stderr in LOG,
# waits until it prints its port, and sets SERVER (its pid), PORT and URL. Exits the calling
# script with the log when the server dies or does not listen within 60 s.
start_server() {
  local log=$1
  shift
  "$TALLY" serve "$@" 2>"$log" &
  SERVER=$!
  PORT=""
  for _ in $(seq 1 600); do
    PORT=$(grep -oE 'listening on http://[^:]+:[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
    [[ -n "$PORT" ]] && break
    kill -0 "$SERVER" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.1
  done
  [[ -n "$PORT" ]] || { echo "the server did not start"; cat "$log"; exit 1; }
  URL="http://127.0.0.1:$PORT"
}
