#!/usr/bin/env bash
# The README's first ten minutes, checked as a new user would meet them (CI runs this after
# scripts/test.sh has built everything, so nothing here compiles a second time):
#  1. the main-job command builds only the `tally` target: its build step, in a fresh build
#     directory configured by its own configure step, is listed with `ninja -n` (nothing is
#     compiled) and must hold no test or benchmark;
#  2. the fenced sh commands of the sections "Set-up", "Run a real model" and "Serving" run
#     verbatim, in order, from the repository root: the real-model file they name is replaced
#     by the bundled model, `tally serve` runs in the background until the end, `--chat` reads
#     end-of-input and quits, and `~/.local` is a temporary HOME's. The one command left out
#     is `bash scripts/test.sh` (the full test run that CI is already inside).
#     scripts/setup.sh runs as written: it needs root or the network only for a missing package.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
readme=$root/README.md
work=$(mktemp -d)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The shell lines of the ```sh blocks of one README section (backslash continuations joined).
section_commands() {
  awk -v want="$1" '
    /^## / { in_section = (substr($0, 4) ~ want) }
    in_section && /^```sh$/ { in_block = 1; next }
    in_block && /^```$/ { in_block = 0; next }
    in_block { line = line $0; if (sub(/\\$/, "", line)) next; print line; line = "" }
  ' "$readme"
}

# 1. The main job builds only `tally`.
main_job=$(section_commands '^Set-up' | head -n 1)
build_step=$(grep -o 'cmake --build [^&]*' <<<"$main_job" | sed 's/ *$//')
configure_step=$(grep -o 'cmake --preset [^&]*' <<<"$main_job" | sed 's/ *$//')
[[ -n $build_step && -n $configure_step ]] || { echo "check_readme.sh: no configure/build step in: $main_job" >&2; exit 1; }
target=$(sed -n 's/.*--target \([^ ]*\).*/\1/p' <<<"$build_step")
[[ $target == tally ]] || { echo "check_readme.sh: '$build_step' does not build only the tally target" >&2; exit 1; }
fresh=$work/fresh-build
$configure_step -B "$fresh" >/dev/null
# `cmake --build --preset P --target T` is `ninja -C <dir> T`: in a fresh directory it runs
# every command T depends on, which `ninja -t commands` lists without running any (`ninja -n`
# stops at the glob re-check that CONFIGURE_DEPENDS adds).
edges=$(ninja -C "$fresh" -t commands "$target")
all=$(ninja -C "$fresh" -t commands)
grep -Eq 'tests/|bench/' <<<"$all" || { echo "check_readme.sh: the full build has no tests: this check cannot see them" >&2; exit 1; }
if grep -Eq 'tests/|bench/|gtest|benchmark' <<<"$edges"; then
  echo "check_readme.sh: the main job's build step compiles tests or benchmarks:" >&2
  grep -Eo '[^ ]*(tests/|bench/)[^ ]*' <<<"$edges" | head >&2
  exit 1
fi
tail -n 1 <<<"$edges" | grep -q -- '-o tally ' || { echo "check_readme.sh: the build step does not link tally" >&2; exit 1; }
echo "check_readme.sh: the main job's build step runs $(wc -l <<<"$edges") of the full build's $(wc -l <<<"$all") commands, none for tests or benchmarks"

# 2. The quick start, verbatim.
export HOME=$work/home
mkdir -p "$HOME"
# Below Linux's ephemeral range (32768-60999), where a client socket of another process may hold
# the port; a port that is still taken is retried with another.
pick_port() { port=$((10000 + RANDOM % 20000)); }
pick_port
mapfile -t commands < <(for s in '^Set-up' '^Run a real model' '^Serving'; do section_commands "$s"; done)
for cmd in "${commands[@]}"; do
  [[ -z $cmd || $cmd == *"bash scripts/test.sh"* ]] && continue
  readme_cmd=$cmd
  with_port() {
    sed -E 's#models/[A-Za-z0-9._-]+-q8_0\.gguf#models/stories260K.gguf#g; s#--port 8080#--port '"$port"'#; s#127\.0\.0\.1:8080#127.0.0.1:'"$port"'#g' <<<"$readme_cmd"
  }
  cmd=$(with_port)
  echo "check_readme.sh: \$ $cmd"
  if [[ $cmd == *" serve "* ]]; then
    if [[ -n $server_pid ]]; then kill "$server_pid"; wait "$server_pid" || true; fi
    for attempt in 1 2 3 4 5; do
      bash -c "exec $cmd" </dev/null >"$work/serve.log" 2>&1 &
      server_pid=$!
      up=
      for _ in $(seq 300); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null && { up=1; break; }
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
      done
      [[ -n $up ]] && break
      wait "$server_pid" || true
      if grep -q 'Address already in use' "$work/serve.log" && ((attempt < 5)); then
        pick_port
        cmd=$(with_port)
        echo "check_readme.sh: that port is taken; again on $port: \$ $cmd"
        continue
      fi
      cat "$work/serve.log" >&2
      echo "check_readme.sh: FAILED: $cmd" >&2
      exit 1
    done
    continue
  fi
  input=/dev/null
  if [[ $cmd == *--chat* ]]; then input=$work/chat.txt; echo "Hello" >"$input"; fi
  out=$(bash -c "set -euo pipefail; $cmd" <"$input" 2>&1) || { echo "$out" >&2; echo "check_readme.sh: FAILED: $cmd" >&2; exit 1; }
  [[ -n $out && $out != *'"error"'* ]] || { echo "check_readme.sh: no answer from: $cmd: $out" >&2; exit 1; }
done
# The install the quick start made: the binary finds the model installed beside it.
installed=$HOME/.local/bin/tally
[[ -x $installed ]] || { echo "check_readme.sh: the quick start installed no $installed" >&2; exit 1; }
info=$(cd / && env -u TALLY_MODEL "$installed" info)
[[ $info == *"file:          $HOME/.local/share/tally/models/stories260K.gguf"* ]] ||
  { echo "check_readme.sh: the installed tally does not use its installed model: $info" >&2; exit 1; }
[[ -f $HOME/.local/share/doc/tally/docs/cli.md ]] || { echo "check_readme.sh: docs not installed" >&2; exit 1; }
echo "check_readme.sh: the README's quick start runs as written"
