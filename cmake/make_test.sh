#!/usr/bin/env bash
# make test, in the order that keeps both CPUs of a small machine busy (docs/testing.md, "How
# long make test takes"). The packages are installed already (make test's deps).
#  - The optimized tree without the kernels (build-checks/) configures now and then builds, with
#    the installed example after it, at the idle scheduling class (SCHED_IDLE): it runs on
#    what CPU time the sanitizer build and suite leave unused (their links, their tests' waits),
#    never on theirs, so it slows neither nor changes their timing; once they are done it has
#    every CPU. Its output goes to build-checks/background.log, shown when it fails.
#  - The Python environments install beside the sanitizer build (mostly downloads).
#  - Then the sanitizer suite, the fuzzers, and, with the optimized tree built, the release
#    checks and the quick benchmarks.
# Usage: make_test.sh MAKE SANITIZE_DIR CHECKS_DIR
set -euo pipefail
make_cmd=${1:?usage: make_test.sh MAKE SANITIZE_DIR CHECKS_DIR}
sanitize_dir=${2:?usage: make_test.sh MAKE SANITIZE_DIR CHECKS_DIR}
checks_dir=${3:?usage: make_test.sh MAKE SANITIZE_DIR CHECKS_DIR}
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
# The idle class where this kernel and user may set it (chrt --idle); else nice 19. In a
# process group of its own (set -m), which a failure of the rest stops whole, but in this
# session: a new session (setsid) is a scheduling group of its own (autogroup), which the
# kernel would give half the CPU whatever its class.
idle=(chrt --idle 0)
chrt --idle 0 true 2>/dev/null || idle=(nice -n 19)
set -m
"${idle[@]}" "$make_cmd" --no-print-directory DEPS_DONE=1 checks-build installed-example >"$background_log" 2>&1 &
background=$!
set +m
trap 'kill -- "-$background" 2>/dev/null || true' EXIT

quiet_unless_failing /tmp/est-make-test-venvs.log make_ tensorboard serving-clients &
venvs=$!
make_ sanitize-build
wait "$venvs" || exit 1
make_ sanitize
make_ fuzz
echo "make test: waiting for the optimized tree (build-checks/) and the installed example"
if ! wait "$background"; then
  echo "make test: building the optimized tree or the installed example failed; its output ($background_log):" >&2
  tail -n 80 "$background_log" >&2
  exit 1
fi
trap - EXIT
tail -n 3 "$background_log"
make_ release-checks
