#!/usr/bin/env bash
# Two est-train workers under a descriptor limit too small to open the collective's sockets
# (ulimit -n 24): the chief's one error line names the limit (ulimit -n), not the address it
# could not open. Run on the gcc build: the sanitizers themselves need descriptors to check a
# pointer, and report a bad one where none are left.
# Usage: descriptor_limit_test.sh <est-train>
set -uo pipefail

est_train=${1:?usage: descriptor_limit_test.sh <est-train>}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
config() {
  printf '{"cluster": {"worker": ["127.0.0.1:%s", "127.0.0.1:1"]}, "task": {"type": "worker", "index": %s}}' \
    "$port" "$1"
}
train=("$est_train" --model linear --strategy multi_worker --timeout-secs 5 --model-dir "$dir/model")
output=$( (ulimit -n 24
  TF_CONFIG=$(config 0) timeout -s KILL 60 "${train[@]}" 2>&1 >/dev/null &
  TF_CONFIG=$(config 1) timeout -s KILL 60 "${train[@]}" >/dev/null 2>&1
  wait) )
errors=$(printf '%s\n' "$output" | grep 'est-train: ')
if [[ "$errors" != *"no file descriptor left"*"(ulimit -n 24)"* ||
      "$errors" == *"must be an address of this machine"* || $(printf '%s\n' "$errors" | wc -l) -ne 1 ]]; then
  echo "error: the chief under ulimit -n 24 did not name the limit in one line:" >&2
  printf '%s\n' "$output" >&2
  exit 1
fi
echo "ok: est-train under ulimit -n 24 names the descriptor limit: ${errors#est-train: error: }"
