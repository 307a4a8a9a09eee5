#!/usr/bin/env bash
# The optimized est-train under an address-space limit (ulimit -v) too small to load LibTorch,
# or to train: one line naming the limit and exit 1 within seconds, where OpenBLAS would retry
# forever, in its initializer before main() (apps/est_train/address_space_preflight.cc) or at
# the first matrix product (estimator/address_space_check.cc). Run on the gcc
# build: AddressSanitizer reserves terabytes of address space, so no limit can be tested
# under it. Usage: address_space_limit_test.sh <est-train>
set -uo pipefail

est_train=${1:?usage: address_space_limit_test.sh <est-train>}
output=$( (ulimit -v 700000 && timeout 30 "$est_train" --help) 2>&1 >/dev/null)
status=$?
expected="est-train: error: the address-space limit (ulimit -v 700000) is too small to load LibTorch"
if [[ $status -ne 1 || "$output" != "$expected"* || $(printf '%s\n' "$output" | wc -l) -ne 1 ]]; then
  echo "error: est-train under ulimit -v 700000 exited $status (expected 1, one line starting '$expected'):" >&2
  printf '%s\n' "$output" >&2
  exit 1
fi
# A limit that loads LibTorch but leaves too little to train: one error naming the room needed,
# where OpenBLAS would spin for ever at the first matrix product (est-train ignored SIGTERM
# there, hence SIGKILL here).
model_dir=$(mktemp -d)
trap 'rm -rf "$model_dir"' EXIT
output=$( (ulimit -v 1000000 && timeout -s KILL 60 "$est_train" --model linear --model-dir "$model_dir/m" \
  --max-steps 10) 2>&1 >/dev/null)
status=$?
errors=$(printf '%s\n' "$output" | grep -v '\[info\]')
expected="est-train: error: the address-space limit (ulimit -v 1000000) leaves"
if [[ $status -ne 1 || "$errors" != "$expected"*"Allow at least "*" KiB (ulimit -v)"* ||
      $(printf '%s\n' "$errors" | wc -l) -ne 1 ]]; then
  echo "error: est-train --model linear under ulimit -v 1000000 exited $status (expected 1, one error line" \
    "starting '$expected'):" >&2
  printf '%s\n' "$output" >&2
  exit 1
fi
# With the limit lifted it loads and runs.
"$est_train" --help >/dev/null || { echo "error: est-train --help failed without a limit" >&2; exit 1; }
echo "ok: est-train under ulimit -v 700000 and 1000000 said so in one line and exited 1"
