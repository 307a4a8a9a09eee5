#!/bin/bash
# A private Slurm on this machine for the tests: munged, slurmctld and one slurmd whose node is
# this host, each with its own files, sockets and ports under DIR, so that no system
# configuration is read or changed.
#
#   local_slurm.sh start DIR   starts them; prints the SLURM_CONF to export, exits 77 with a
#                              line saying why where Slurm cannot run here (not installed, not root)
#   local_slurm.sh stop DIR    stops them (safe to repeat)
set -euo pipefail

action=${1:?usage: local_slurm.sh start|stop DIR}
dir=${2:?usage: local_slurm.sh start|stop DIR}

skip() { echo "skipped: $*"; exit 77; }

stop() {
  # Jobs first, so that no task outlives the daemons (slurmstepd is a process of its own).
  if [ -f "$dir/slurmctld.pid" ] && [ -f "$dir/slurm.conf" ]; then
    SLURM_CONF=$dir/slurm.conf scancel --quiet --signal=KILL --full --partition=test 2>/dev/null || true
    for _ in $(seq 100); do
      SLURM_CONF=$dir/slurm.conf squeue --noheader 2>/dev/null | grep -q . || break
      sleep 0.1
    done
  fi
  for daemon in slurmd slurmctld munged; do
    [ -f "$dir/$daemon.pid" ] || continue
    pid=$(cat "$dir/$daemon.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/$daemon.pid"
  done
}

if [ "$action" = stop ]; then stop; exit 0; fi
[ "$action" = start ] || { echo "unknown action '$action': expected start or stop" >&2; exit 2; }

for program in munged slurmctld slurmd sbatch srun; do
  command -v "$program" >/dev/null || PATH=$PATH:/usr/sbin command -v "$program" >/dev/null ||
    skip "needs Slurm and munge (Debian's slurmctld, slurmd, slurm-client and munge; make test installs them)"
done
export PATH=$PATH:/usr/sbin
[ "$(id -u)" = 0 ] || skip "needs root to start slurmd (it runs jobs as their users)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

stop
mkdir -p "$dir"/{state,spool,munge}
chmod 700 "$dir/munge"
node=$(hostname -s)
cpus=8  # more than the cores here, so that 4 tasks and an evaluator fit (config_overrides)

# munge: a key of our own and a socket of our own, which Slurm's AuthInfo names.
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"

: > "$dir/plugstack.conf"
cat > "$dir/slurm.conf" <<CONF
ClusterName=est-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
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
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF" -N "$node"
for _ in $(seq 150); do
  if sinfo --noheader --states=idle --format=%N 2>/dev/null | grep -q .; then
    echo "$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "Slurm did not bring node $node up within 30 s; its logs:" >&2
tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd.log "$dir"/munged.log >&2 || true
stop
exit 1
