#!/usr/bin/env bash
# Checks that scripts/setup.sh works for root without sudo and for a normal user with sudo,
# and says clearly what to do when neither holds. It runs setup.sh under a PATH of fakes
# (id, dpkg-query, apt-get, sudo, node, npm that only record their calls), so it needs neither
# root, nor the network, nor a change to the machine; then, when run as root, once for real as
# the user nobody on a machine where everything is installed (no sudo, no network needed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
setup=$root/scripts/setup.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() { echo "check_setup.sh: FAIL: $*" >&2; failures=$((failures + 1)); }

# make_fakes DIR UID MISSING_PKG WITH_SUDO: a bin folder that is the whole PATH of the run.
make_fakes() {
  local bin=$1 uid=$2 missing=$3 with_sudo=$4
  mkdir -p "$bin"
  for tool in bash grep cat; do ln -sf "$(command -v "$tool")" "$bin/$tool"; done
  printf '#!/bin/bash\n[[ $1 == -u ]] && echo %s || echo "uid=%s"\n' "$uid" "$uid" >"$bin/id"
  # dpkg-query -W -f=FORMAT PKG: every package installed except $missing.
  printf '#!/bin/bash\n[[ ${@: -1} == "%s" ]] && exit 1\necho -n "install ok installed"\n' \
    "$missing" >"$bin/dpkg-query"
  printf '#!/bin/bash\necho "apt-get uid=$(id -u) $*" >>"%s/calls"\n' "$bin" >"$bin/apt-get"
  printf '#!/bin/bash\nexit 0\n' >"$bin/node"
  cp "$bin/node" "$bin/npm"
  if [[ $with_sudo == yes ]]; then
    # A sudo that runs the command as uid 0: the fake id reads FAKE_UID.
    printf '#!/bin/bash\necho "sudo $*" >>"%s/calls"\nwhile [[ $1 == *=* ]]; do export "$1"; shift; done\nFAKE_UID=0 "$@"\n' \
      "$bin" >"$bin/sudo"
    printf '#!/bin/bash\nu=${FAKE_UID:-%s}\n[[ $1 == -u ]] && echo $u || echo "uid=$u"\n' "$uid" >"$bin/id"
  fi
  chmod +x "$bin"/*
}

# run_case NAME UID MISSING_PKG WITH_SUDO EXPECTED_RC: runs setup.sh; sets $out and $calls.
run_case() {
  local name=$1 bin=$work/$1/bin rc=0
  make_fakes "$bin" "$2" "$3" "$4"
  out=$(env -i PATH="$bin" HOME="$work/$name" "$bin/bash" "$setup" 2>&1) || rc=$?
  calls=$(cat "$bin/calls" 2>/dev/null || true)
  [[ $rc == "$5" ]] || fail "$name: exit status $rc, expected $5; output: $out"
}

run_case root-nothing-missing 0 none no 0
[[ -z $calls ]] || fail "root-nothing-missing: installed something: $calls"

run_case user-nothing-missing 1000 none no 0
[[ -z $calls ]] || fail "user-nothing-missing: ran $calls (needs neither sudo nor apt-get)"

run_case root-missing 0 libfmt-dev no 0
[[ $calls == *"apt-get uid=0 install"*libfmt-dev* ]] || fail "root-missing: no apt-get install as root: $calls"
[[ $calls != *sudo* ]] || fail "root-missing: used sudo as root: $calls"

run_case user-missing-with-sudo 1000 libfmt-dev yes 0
[[ $calls == *"sudo DEBIAN_FRONTEND=noninteractive apt-get install"* ]] || fail "user-missing-with-sudo: no sudo apt-get: $calls"
[[ $calls == *"apt-get uid=0 install"*libfmt-dev* ]] || fail "user-missing-with-sudo: apt-get did not run as root: $calls"

run_case user-missing-no-sudo 1000 libfmt-dev no 1
[[ -z $calls ]] || fail "user-missing-no-sudo: ran $calls"
[[ $out == *"libfmt-dev"*"sudo is not installed"*"as root"* ]] || fail "user-missing-no-sudo: unclear message: $out"

# For real, as a non-root user, on this machine (where CI's setup.sh has installed everything).
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  rc=0
  # A copy nobody can read, whatever the permissions of the checkout's folders.
  cp "$setup" "$work/setup.sh"
  chmod a+rx "$work" "$work/setup.sh"
  out=$(cd / && env -i PATH=/usr/local/bin:/usr/bin:/bin setpriv --reuid=nobody --regid=nogroup \
    --clear-groups bash "$work/setup.sh" 2>&1) || rc=$?
  [[ $rc == 0 && $out == *"packages present"* ]] || fail "as nobody: exit status $rc: $out"
fi

if ((failures)); then exit 1; fi
echo "check_setup.sh: setup.sh works as root, as a user with sudo, and explains itself without"
