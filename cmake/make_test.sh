#!/usr/bin/env bash
# make test, in the order that keeps both CPUs of a small machine busy (docs/testing.md, "Build
# times"). The packages are installed already (make test's deps).
#  - The optimized tree without the kernels (build-checks/) configures now and then builds at
#    the idle scheduling class (SCHED_IDLE): it runs on what CPU time the sanitizer build and
#    suite leave unused (their links, their tests' waits), never on theirs, so it slows neither
#    nor changes their timing; once they are done it has every CPU. It builds first what the
#    limit checks run (make checks-first-build), then the rest. It only compiles: what runs
#    there waits for the foreground, where no timeout of theirs can expire for want of CPU. Its
#    output goes to build-checks/background.log, shown when it fails.
#  - The Python environments install beside the sanitizer build (mostly downloads).
#  - Then the sanitizer suite; the limit checks, once what they run is built, while the rest of
#    the optimized tree builds on their unused CPU time (they wait on est-serve's requests for
#    half of theirs); and with the optimized tree built, the installed example and the quick
#    benchmarks, beside the fuzzers one at a time: the benchmarks wait on their peers, links and
#    timeouts a third of their time, and their figures at tiny sizes are not measurements.
# Usage: make_test.sh MAKE CHECKS_DIR SANITIZE_DIR
set -euo pipefail
usage="usage: make_test.sh MAKE CHECKS_DIR SANITIZE_DIR"
make_cmd=${1:?$usage}
checks_dir=${2:?$usage}
sanitize_dir=${3:?$usage}
make_() { "$make_cmd" --no-print-directory DEPS_DONE=1 "$@"; }

# A command's output, shown only when it fails.
quiet_unless_failing() {
  local log=$1
  shift
  if ! "$@" >"$log" 2>&1; then
    echo "make test: '$*' failed; its output ($log):" >&2
    tail -n 60 "$log" >&2
    return 1
  fi
}

mkdir -p "$checks_dir"
background_log=$checks_dir/background.log
# In a process group of its own (set -m), which a failure of the rest stops whole, but in this
# session: a new session (setsid) is a scheduling group of its own (autogroup), which the
# kernel would give half the CPU whatever its class. The idle class where this kernel and user
# may set it (chrt --idle); else nice 19.
first_built=$checks_dir/.first-built
rm -f "$first_built"
set -m
(
  chrt --idle -p 0 "$BASHPID" 2>/dev/null || renice -n 19 -p "$BASHPID" >/dev/null
  make_ checks-first-build && touch "$first_built" && make_ checks-build
) >"$background_log" 2>&1 &
background=$!
set +m
trap 'kill -- "-$background" 2>/dev/null || true' EXIT

quiet_unless_failing /tmp/est-make-test-venvs.log make_ tensorboard serving-clients &
venvs=$!
make_ sanitize-build
wait "$venvs" || exit 1
make_ sanitize
# Shows the background build's log and fails.
background_failed() {
  echo "make test: building the optimized tree failed; its output ($background_log):" >&2
  tail -n 80 "$background_log" >&2
  exit 1
}
echo "make test: waiting for what the limit checks run (build-checks/)"
while [ ! -e "$first_built" ]; do
  kill -0 "$background" 2>/dev/null || [ -e "$first_built" ] || background_failed
  sleep 1
done
make_ CHECKS_BUILT=1 limit-checks
echo "make test: waiting for the rest of the optimized tree (build-checks/)"
wait "$background" || background_failed
trap - EXIT
tail -n 3 "$background_log"
# In a process group of its own, which a failure of the rest stops whole (ctest and its fuzzer).
fuzz_log=$sanitize_dir/fuzz.log
set -m
make_ JOBS=1 fuzz >"$fuzz_log" 2>&1 &
fuzz=$!
set +m
trap 'kill -- "-$fuzz" 2>/dev/null || true' EXIT
make_ CHECKS_BUILT=1 installed-example quick-benchmarks optimized-tests
echo "make test: waiting for the fuzzers (their output: $fuzz_log)"
if ! wait "$fuzz"; then
  echo "make test: make fuzz failed; its output ($fuzz_log):" >&2
  tail -n 80 "$fuzz_log" >&2
  exit 1
fi
trap - EXIT
grep -E "tests passed|Total Test time" "$fuzz_log" || true
