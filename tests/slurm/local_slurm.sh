#!/bin/bash
# A private Slurm on this machine for the tests: munged, slurmctld and slurmd, each with its own
# files, sockets and ports under DIR, so that no system configuration is read or changed.
# With one node (the default) slurmd's node is this host. With NODES >= 2 the nodes node1 ...
# nodeN are simulated hosts (slurm_hosts.py: network namespaces on one switch): a slurmd in
# each, with the node's own host name (a UTS namespace), /etc/hosts naming every node (bound
# in its mount namespace), address, spool, pid and log files; slurmctld and the commands run
# here reach them over this machine's own link to the switch.
#
#   local_slurm.sh start DIR [NODES]   starts them; prints the SLURM_CONF to export; exits 77
#                                      with a line saying why where Slurm cannot run here (not
#                                      installed, not root; for NODES >= 2 no network namespaces)
#   local_slurm.sh stop DIR            stops every job and daemon and removes the hosts (safe to
#                                      repeat, and after a crash: it needs only what DIR holds)
set -euo pipefail

action=${1:?usage: local_slurm.sh start|stop DIR [NODES]}
dir=${2:?usage: local_slurm.sh start|stop DIR [NODES]}
nodes=${3:-1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=$PATH:/usr/sbin

skip() { echo "skipped: $*"; exit 77; }

# Sends TERM to every pid given, then KILL to those still alive after 5 s.
end_processes() {
  kill "$@" 2>/dev/null || true
  for _ in $(seq 50); do
    local alive=()
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    [ ${#alive[@]} -gt 0 ] || return 0
    set -- "${alive[@]}"
    sleep 0.1
  done
  kill -9 "$@" 2>/dev/null || true
}

stop() {
  # Jobs first, so that no task outlives the daemons (slurmstepd is a process of its own).
  if [ -f "$dir/slurm.conf" ] && [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    export SLURM_CONF=$dir/slurm.conf
    timeout 10 scancel --quiet --signal=KILL --full --partition=test 2>/dev/null || true
    local deadline=$((SECONDS + 10))
    while [ $SECONDS -lt $deadline ] && timeout 5 squeue --noheader 2>/dev/null | grep -q .; do sleep 0.1; done
  fi
  # The daemons, each only if its pid is still that daemon (not a process that got the pid since).
  local pid_files=() pids=()
  for pid_file in "$dir"/slurmd-*.pid "$dir/slurmctld.pid" "$dir/munged.pid"; do
    [ -f "$pid_file" ] || continue
    pid_files+=("$pid_file")
    local pid daemon
    pid=$(cat "$pid_file")
    daemon=$(basename "$pid_file" .pid)
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "${daemon%%-*}" ] && pids+=("$pid")
  done
  [ ${#pids[@]} = 0 ] || end_processes "${pids[@]}"
  rm -f "${pid_files[@]}"
  # The simulated hosts, with whatever still runs in them (what a crash left).
  if [ -f "$dir/hosts.made" ]; then
    read -r tag _ < "$dir/hosts.made"
    for namespace in $(ip netns list | awk '{ print $1 }' | grep -E "^${tag}(sw|h[0-9]+)$"); do
      for pid in $(ip netns pids "$namespace" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    done
    python3 "$here/slurm_hosts.py" down "$dir"
  fi
}

if [ "$action" = stop ]; then stop; exit 0; fi
[ "$action" = start ] || { echo "unknown action '$action': expected start or stop" >&2; exit 2; }
[[ "$nodes" =~ ^[1-9][0-9]?$ ]] || { echo "NODES '$nodes': expected 1 to 99" >&2; exit 2; }

for program in munged slurmctld slurmd sbatch srun; do
  command -v "$program" >/dev/null ||
    skip "needs Slurm and munge (Debian's slurmctld, slurmd, slurm-client and munge; make test installs them)"
done
[ "$(id -u)" = 0 ] || skip "needs root to start slurmd (it runs jobs as their users)"
if [ "$nodes" -gt 1 ]; then
  command -v unshare >/dev/null || skip "needs unshare (util-linux) for the nodes' host names"
fi

# Two distinct free ports (both held while they are chosen), below the kernel's ephemeral range
# (ip_local_port_range), which it hands to every connect() and bind() to port 0 of the other
# tests: ports from that range were taken again before the daemons bound them, three starts in a
# row beside a busy suite. Another process may still bind one explicitly: the start then tries
# again with others (below).
free_ports() {
  python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
chosen = []
while len(chosen) < 2:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randrange(max(1024, low - 12000), low) if low > 2048 else 0))
    except OSError:
        s.close()
        continue
    if all(s.getsockname()[1] != c.getsockname()[1] for c in chosen):
        chosen.append(s)
print(*(c.getsockname()[1] for c in chosen))'
}
read -r controller_port slurmd_port < <(free_ports)

stop
mkdir -p "$dir"/{state,spool,munge}
chmod 700 "$dir/munge"
trap 'echo "local_slurm.sh: start failed; stopping what it started" >&2; stop' ERR

controller=$(hostname -s)
if [ "$nodes" = 1 ]; then
  controller_address=127.0.0.1
  node_lines="NodeName=$controller NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN"
else
  status=0
  hosts=$(python3 "$here/slurm_hosts.py" up "$dir" "$nodes") || status=$?
  if [ $status = 77 ]; then stop; echo "$hosts"; exit 77; fi
  [ $status = 0 ] || { echo "slurm_hosts.py up failed ($status): $hosts" >&2; stop; exit 1; }
  controller_address=$(head -n 1 <<< "$hosts")
  namespaces=() node_lines="" etc_hosts="127.0.0.1 localhost"$'\n'"$controller_address $controller"
  index=0
  while read -r namespace address; do
    index=$((index + 1))
    namespaces+=("$namespace")
    node_lines+="NodeName=node$index NodeHostname=node$index NodeAddr=$address CPUs=8 State=UNKNOWN"$'\n'
    etc_hosts+=$'\n'"$address node$index"
  done < <(tail -n +2 <<< "$hosts")
  echo "$etc_hosts" > "$dir/hosts"
fi

# munge: a key of our own and a socket of our own, which Slurm's AuthInfo names (a file, so
# the daemons in the hosts' namespaces reach it too).
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"

# CPUs=8, more than the cores here, so that 4 tasks and an evaluator fit (config_overrides).
: > "$dir/plugstack.conf"
cat > "$dir/slurm.conf" <<CONF
ClusterName=est-test
SlurmctldHost=$controller($controller_address)
SlurmctldPort=$controller_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/builtin
KillWait=30
MinJobAge=300
JobRequeue=1
$node_lines
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" -i
if [ "$nodes" = 1 ]; then
  mkdir -p "$dir/spool/$controller"
  slurmd -f "$SLURM_CONF" -N "$controller"
else
  for index in $(seq "$nodes"); do
    # slurmd forks into the background in the host's network namespace, with the node's host
    # name and /etc/hosts. nsenter, not `ip netns exec`, which mounts a /sys without cgroups.
    mkdir -p "$dir/spool/node$index"
    # shellcheck disable=SC2016  # $1..$3 are the inner shell's arguments
    nsenter --net="/run/netns/${namespaces[index - 1]}" unshare --uts --mount --propagation private /bin/sh -c \
      'hostname "$1" && mount --bind "$2" /etc/hosts && exec slurmd -f "$3" -N "$1"' \
      slurmd "node$index" "$dir/hosts" "$SLURM_CONF"
  done
fi
deadline=$((SECONDS + 30))
while [ $SECONDS -lt $deadline ]; do
  idle=$(timeout 5 sinfo --noheader --Node --states=idle --format=%N 2>/dev/null | sort -u | grep -c . || true)
  if [ "$idle" = "$nodes" ]; then
    echo "$SLURM_CONF"
    exit 0
  fi
  grep -qs "Address already in use" "$dir"/slurmctld.log "$dir"/slurmd-*.log && break
  sleep 0.2
done
trap - ERR
attempt=${EST_SLURM_START_ATTEMPT:-1}
if grep -qs "Address already in use" "$dir"/slurmctld.log "$dir"/slurmd-*.log && [ "$attempt" -lt 3 ]; then
  echo "local_slurm.sh: a port was taken between its choice and the daemons' bind; starting again" >&2
  stop
  rm -f "$dir"/slurmctld.log "$dir"/slurmd-*.log
  EST_SLURM_START_ATTEMPT=$((attempt + 1)) exec bash "$0" start "$dir" "$nodes"
fi
echo "Slurm did not bring its $nodes node(s) up within 30 s; its logs:" >&2
tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd-*.log "$dir"/munged.log >&2 || true
stop
exit 1
