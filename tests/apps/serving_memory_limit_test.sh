#!/usr/bin/env bash
# est-serve inside a 3 GiB memory cgroup survives every request its flags admit: the
# Fashion-MNIST CNN trained one step and exported by est-train, served by est-serve started
# inside a new memory cgroup (v1 or v2), sent by serving_load_client: (a) one TF Serving
# float_val broadcast to the largest [N, 1, 28, 28] --max-request-mib admits (a request of a few
# bytes), (b) the same N images in full over KServe v2 (a ~64 MiB request), (c) 8 of each at once
# while 1-image requests are timed beside them, (d) requests just past the limits, shapes with a
# size of 0, and (on a second est-serve) more examples than --max-request-examples. Asserts est-serve
# lives, was never OOM-killed, peaked below the limit, answered every row as 1-image requests are
# answered, and answered 1-image requests under that load within probe_bound_ms; prints a table of
# the peaks and latencies. Exits 77 ("skipped: ...") where no memory cgroup can be made.
# Usage: serving_memory_limit_test.sh <est-serve> <est-train> <serving_load_client>
set -uo pipefail

usage="usage: serving_memory_limit_test.sh <est-serve> <est-train> <serving_load_client>"
est_serve=${1:?$usage}
est_train=${2:?$usage}
client=${3:?$usage}
readonly limit_mib=3072
# est-serve's --max-request-mib default, and the most 1x28x28 float32 images it admits (21399,
# as serving/wire_tensor.cc's CheckedElementCount counts).
readonly request_mib=64
readonly largest=$(((request_mib << 20) / (28 * 28 * 4)))
readonly concurrent=8 # the large requests sent at once in (c)
# A 1-image request sent while $concurrent requests of $largest images run is answered within
# this; see the latency check at the end.
readonly probe_bound_ms=5000

fail() {
  echo "error: $*" >&2
  exit 1
}
skip() {
  echo "skipped: $*"
  exit 77
}

for program in "$est_serve" "$est_train" "$client"; do
  [[ -x "$program" ]] || fail "'$program' is not an executable file ($usage)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/est-serving-memory.XXXXXX")
cgroup=""
cgroup_version=""
server_pid=""
sampler_pid=""

# True while est-serve runs (a zombie, killed but not yet waited for, does not count).
server_alive() {
  [[ -n "$server_pid" && -r /proc/$server_pid/stat ]] || return 1
  local state
  state=$(sed 's/.*) //' "/proc/$server_pid/stat" | cut -d' ' -f1)
  [[ "$state" != Z ]]
}

stop_server() {
  [[ -n "$server_pid" ]] || return 0
  kill -TERM "$server_pid" 2>/dev/null
  for _ in $(seq 100); do server_alive || break; sleep 0.1; done
  server_alive && kill -KILL "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
  server_pid=""
}

cleanup() {
  [[ -n "$sampler_pid" ]] && kill "$sampler_pid" 2>/dev/null && wait "$sampler_pid" 2>/dev/null
  stop_server
  if [[ -n "$cgroup" && -d "$cgroup" ]]; then
    for _ in $(seq 50); do
      local pids=()
      readarray -t pids <"$cgroup/cgroup.procs" 2>/dev/null
      ((${#pids[@]} == 0)) && break
      kill -KILL "${pids[@]}" 2>/dev/null
      sleep 0.1
    done
    rmdir "$cgroup" 2>/dev/null || echo "warning: could not remove the cgroup $cgroup" >&2
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- The cgroup: $limit_mib MiB, no swap ----

make_cgroup() {
  [[ $EUID -eq 0 ]] || skip "not root: making a memory cgroup needs root"
  local available_kib
  available_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
  ((available_kib / 1024 > limit_mib + 1024)) ||
    skip "this machine has $((available_kib / 1024)) MiB available; the test needs $((limit_mib + 1024)) MiB"
  local name="est-serve-memory-$$" limit=$((limit_mib << 20))
  if [[ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]]; then
    cgroup_version=1
    local own parent
    own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
    for parent in "/sys/fs/cgroup/memory${own%/}" /sys/fs/cgroup/memory; do
      if [[ -d "$parent" ]] && mkdir "$parent/$name" 2>/dev/null; then
        cgroup="$parent/$name"
        break
      fi
    done
    [[ -n "$cgroup" ]] || skip "cannot make a cgroup under /sys/fs/cgroup/memory (cgroup v1)"
    local parent_limit
    parent_limit=$(cat "$(dirname "$cgroup")/memory.limit_in_bytes")
    ((parent_limit > limit)) || skip "the parent cgroup $(dirname "$cgroup") is limited to $((parent_limit >> 20)) MiB"
    echo "$limit" >"$cgroup/memory.limit_in_bytes" || skip "cannot set $cgroup/memory.limit_in_bytes"
    # Where swap is accounted, memory + swap gets the same limit: nothing goes to swap.
    if [[ -f "$cgroup/memory.memsw.limit_in_bytes" ]]; then
      echo "$limit" >"$cgroup/memory.memsw.limit_in_bytes" || skip "cannot set $cgroup/memory.memsw.limit_in_bytes"
    fi
  elif [[ $(stat -fc %T /sys/fs/cgroup 2>/dev/null) == cgroup2fs ]] &&
    grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    cgroup_version=2
    # Under the root, which alone may both hold processes and enable controllers for its children.
    if ! grep -qw memory /sys/fs/cgroup/cgroup.subtree_control; then
      echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
        skip "cannot enable the memory controller in /sys/fs/cgroup/cgroup.subtree_control (cgroup v2)"
    fi
    mkdir "/sys/fs/cgroup/$name" 2>/dev/null || skip "cannot make a cgroup under /sys/fs/cgroup (cgroup v2)"
    cgroup="/sys/fs/cgroup/$name"
    echo "$limit" >"$cgroup/memory.max" || skip "cannot set $cgroup/memory.max"
    if [[ -f "$cgroup/memory.swap.max" ]]; then
      echo 0 >"$cgroup/memory.swap.max" || skip "cannot set $cgroup/memory.swap.max"
    fi
  else
    skip "no memory cgroup: neither cgroup v1's /sys/fs/cgroup/memory nor a cgroup v2 memory controller"
  fi
}

# OOM kills in the cgroup so far.
oom_kills() {
  local file=memory.oom_control
  [[ $cgroup_version == 2 ]] && file=memory.events
  awk '$1 == "oom_kill" {print $2; found = 1} END {if (!found) print 0}' "$cgroup/$file"
}

# The peak of a stretch, MiB: v1 resets its high-water mark, v2 samples memory.current.
begin_peak() {
  if [[ $cgroup_version == 1 ]]; then
    echo 0 >"$cgroup/memory.max_usage_in_bytes"
  else
    echo 0 >"$work/peak"
    (
      max=0
      while read -r now <"$cgroup/memory.current"; do
        ((now > max)) && max=$now && echo "$max" >"$work/peak"
        sleep 0.02
      done
    ) &
    sampler_pid=$!
  fi
}
# Sets stretch_peak, and counts it in the whole run's peak.
end_peak() {
  if [[ $cgroup_version == 1 ]]; then
    stretch_peak=$(($(cat "$cgroup/memory.max_usage_in_bytes") >> 20))
  else
    kill "$sampler_pid" 2>/dev/null
    wait "$sampler_pid" 2>/dev/null
    sampler_pid=""
    stretch_peak=$(($(cat "$work/peak") >> 20))
  fi
  ((stretch_peak > overall_sampled)) && overall_sampled=$stretch_peak
}

# The whole run's peak, MiB: the largest of the stretches' (every moment est-serve ran is in one),
# or v2's memory.peak where it is larger (the sampling may miss a short peak).
overall_peak() {
  local peak=$overall_sampled
  if [[ $cgroup_version == 2 && -f "$cgroup/memory.peak" ]]; then
    local kernel=$(($(cat "$cgroup/memory.peak") >> 20))
    ((kernel > peak)) && peak=$kernel
  fi
  echo "$peak"
}


# ---- est-serve inside the cgroup ----

# Starts est-serve in the cgroup with the flags given; waits for its port.
start_server() {
  rm -f "$work/port"
  echo "--- est-serve $*" >>"$work/serve.log"
  (echo "$BASHPID" >"$cgroup/cgroup.procs" && exec "$est_serve" --model fashion_mnist_cnn \
    --export-dir "$work/model/export/final" --port 0 --port-file "$work/port" --reload-interval-ms 0 "$@") \
    >/dev/null 2>>"$work/serve.log" &
  server_pid=$!
  for _ in $(seq 600); do
    [[ -s "$work/port" ]] && break
    server_alive || fail "est-serve $* exited at start: $(tail -5 "$work/serve.log")"
    sleep 0.1
  done
  [[ -s "$work/port" ]] || fail "est-serve $* wrote no port file within 60 s: $(tail -5 "$work/serve.log")"
  port=$(head -1 "$work/port")
}

# ---- Scenarios ----

rows=()
refusals=()
overall_sampled=0
stretch_peak=0
line=""

# The field `key` of the client's line.
field() {
  local head=" ${line%% message=*} "
  [[ "$head" =~ \ $1=([^ ]*)\  ]] && echo "${BASH_REMATCH[1]}"
}

# scenario LABEL CODES MESSAGE CLIENT-FLAGS...: sends the scenario and checks est-serve lived and
# answered with a code matching the regular expression CODES, whose message holds MESSAGE; an
# answer of OK must carry a row for each image, each as a 1-image request answers it.
scenario() {
  local label=$1 codes=$2 message=$3
  shift 3
  begin_peak
  line=$(timeout 240 "$client" --address "127.0.0.1:$port" --deadline-s 180 "$@" 2>"$work/client.err")
  local status=$?
  end_peak
  local peak=$stretch_peak
  if ! server_alive; then
    fail "est-serve died in '$label' (peak $peak MiB of $limit_mib, OOM kills: $(oom_kills)): $(tail -3 "$work/serve.log")"
  fi
  [[ $status -eq 0 ]] || fail "serving_load_client $* exited $status in '$label': $(cat "$work/client.err")"
  local code ok requests check got_message=${line#* message=}
  code=$(field code)
  ok=$(field ok)
  requests=$(field requests)
  check=$(field check)
  [[ "$code" =~ ^($codes)$ ]] || fail "'$label' answered $code (expected $codes): $got_message"
  [[ "$got_message" == *"$message"* ]] || fail "'$label' answered '$got_message'; expected a message holding '$message'"
  if [[ "$code" == OK && ",$(field shape)," != *,0,* ]]; then
    [[ "$ok" == "$requests" ]] || fail "'$label': $ok of $requests requests answered"
    [[ "$check" == ok ]] || fail "'$label': answers differ from 1-image answers by $(field max_diff) (check $check)"
  fi
  local probes="-"
  if [[ "$(field probes)" != 0 ]]; then
    probes=$(printf '%3d, median %4.0f ms, max %5.0f ms' "$(field probes)" "$(field probe_ms_median)" \
      "$(field probe_ms_max)")
  fi
  rows+=("$(printf '%-50s %-19s %8s %8.2f  %s' "$label" "$code" "$peak" "$(field seconds)" "$probes")")
  [[ "$code" == OK ]] || refusals+=("$label: $got_message")
}

make_cgroup

echo "Training and exporting the Fashion-MNIST CNN (1 step)"
timeout 600 "$est_train" --model fashion_mnist_cnn --max-steps 1 --eval-steps 1 --log-step-count-steps 100 \
  --export final --model-dir "$work/model" >"$work/train.log" 2>&1 ||
  fail "est-train did not train and export: $(tail -5 "$work/train.log")"

begin_peak
start_server
sleep 1
end_peak
rows+=("$(printf '%-50s %-19s %8s %8s  %s' "est-serve start-up, 1 s idle" "-" "$stretch_peak" "-" "-")")

tf_shape="$largest,1,28,28"
scenario "1 image, TF Serving (before)" OK "" --protocol tf --shape 1,1,28,28 --fill full
before_logits=$(field logits)
scenario "1 image, KServe v2" OK "" --protocol kserve --shape 1,1,28,28 --fill full
scenario "(a) TF float_val broadcast [$tf_shape]" OK "" --protocol tf --shape "$tf_shape" --fill broadcast
scenario "(b) KServe raw [$tf_shape], $(((largest * 3136) >> 20)) MiB" OK "" \
  --protocol kserve --shape "$tf_shape" --fill full
scenario "(c) $concurrent x (a) at once, 1-image probes" OK "" --protocol tf --shape "$tf_shape" \
  --fill broadcast --requests "$concurrent" --probe-interval-ms 100
probe_max_tf=$(field probe_ms_max) probes_tf=$(field probes) probes_failed_tf=$(field probes_failed)
scenario "(c) $concurrent x (b) at once, 1-image probes" OK "" --protocol kserve --shape "$tf_shape" \
  --fill full --requests "$concurrent" --probe-interval-ms 100
probe_max_kserve=$(field probe_ms_max) probes_kserve=$(field probes) probes_failed_kserve=$(field probes_failed)
scenario "(d) TF broadcast [$((largest + 1)),1,28,28]" INVALID_ARGUMENT "is too large" \
  --protocol tf --shape "$((largest + 1)),1,28,28" --fill broadcast
scenario "(d) KServe raw [$((largest + 1)),1,28,28]" RESOURCE_EXHAUSTED "--max-request-mib" \
  --protocol kserve --shape "$((largest + 1)),1,28,28" --fill full
# Shapes with a size of 0 carry no values: admitted or refused, never run at their other sizes.
for protocol in tf kserve; do
  scenario "(d) $protocol, no values, [$largest,0,28,28]" "OK|INVALID_ARGUMENT" "" \
    --protocol "$protocol" --shape "$largest,0,28,28" --fill full
  scenario "(d) $protocol, no values, [0,1,28,28]" "OK|INVALID_ARGUMENT" "" --protocol "$protocol" --shape 0,1,28,28 \
    --fill full
  scenario "(d) $protocol, no values, [0,2^40,28,28]" INVALID_ARGUMENT "is too large" \
    --protocol "$protocol" --shape "0,$((1 << 40)),28,28" --fill full
done
scenario "(d) TF broadcast [$((largest * 784)),1,1,1]" INVALID_ARGUMENT "" \
  --protocol tf --shape "$((largest * 784)),1,1,1" --fill broadcast
scenario "1 image, TF Serving (after)" OK "" --protocol tf --shape 1,1,28,28 --fill full
after_logits=$(field logits)
stop_server

# More examples than --max-request-examples (64 MiB holds at most $largest images of this model).
begin_peak
start_server --max-request-examples 1000
end_peak
scenario "(d) --max-request-examples 1000: 1000 images" OK "" --protocol tf --shape 1000,1,28,28 --fill broadcast
scenario "(d) --max-request-examples 1000: 1001 images" INVALID_ARGUMENT "--max-request-examples" \
  --protocol tf --shape 1001,1,28,28 --fill broadcast
total_peak=$(overall_peak)
total_ooms=$(oom_kills)
stop_server

echo
echo "est-serve in a ${limit_mib} MiB memory cgroup (v$cgroup_version), --max-request-mib $request_mib" \
  "(at most $largest images of 1x28x28 float32), --max-batch-size 64 (defaults)"
printf '%-50s %-19s %8s %8s  %s\n' "scenario" "answer" "peak MiB" "seconds" "1-image requests meanwhile"
printf '%s\n' "${rows[@]}"
echo "peak MiB: the cgroup's high-water mark in the scenario (memory est-serve kept from earlier ones included)"
echo "peak of the whole run: $total_peak MiB of $limit_mib; OOM kills: $total_ooms"
echo "refused:"
printf '  %s\n' "${refusals[@]}"
echo

((total_ooms == 0)) || fail "est-serve was OOM-killed $total_ooms times in the cgroup"
((total_peak < limit_mib)) ||
  fail "est-serve's cgroup peaked at $total_peak MiB, at its limit of $limit_mib MiB"
[[ -n "$before_logits" && "$after_logits" == "$before_logits" ]] ||
  fail "a 1-image request answered logits $after_logits after the load, $before_logits before"
# A large request runs in parts of --max-batch-size (64) images, 5 to 15 ms each on 2 cores (the
# images of (a), all 0.5, are the slower), so a 1-image request waits for the parts the other
# requests' threads have started, not for whole requests: 2 cores measured a median of 70 to 120 ms
# and at most 0.4 to 0.9 s under 8 (1.4 s under 16). The bound leaves 5 x that to slower or busier
# machines; before, each large request was one model call (about 7 s here) and a 1-image request
# waited for every one ahead of it (48 s in the issue).
((probes_tf > 0 && probes_kserve > 0)) || fail "no 1-image request went while the $concurrent large requests ran"
((probes_failed_tf == 0 && probes_failed_kserve == 0)) ||
  fail "1-image requests under load failed or answered wrongly ($probes_failed_tf TF, $probes_failed_kserve KServe)"
for worst in "$probe_max_tf" "$probe_max_kserve"; do
  awk -v worst="$worst" -v bound="$probe_bound_ms" 'BEGIN {exit !(worst <= bound)}' ||
    fail "a 1-image request under $concurrent large ones took $worst ms (bound $probe_bound_ms ms)"
done
echo "ok: est-serve lived through every scenario in $limit_mib MiB, never OOM-killed, peak $total_peak MiB"
