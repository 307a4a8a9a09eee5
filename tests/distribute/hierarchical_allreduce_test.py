"""The hierarchical all-reduce across 2 simulated hosts x 2 ranks: collective_worker's
"hierarchy" mode on each rank (the collective must be hierarchical; integers exact, floats
equal to a flat all-reduce over TCP within rounding, every operation checked). Hosts are
network namespaces joined by 10 Gbit/s links (apps/bench/simulated_hosts.py); the two ranks
of a host are started together, so they share its mount namespace as processes of one
machine do. Exits 77 (skipped) where namespaces cannot be made.

usage: hierarchical_allreduce_test.py COLLECTIVE_WORKER
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "bench"))
import simulated_hosts  # noqa: E402

HOSTS = 2
RANKS_PER_HOST = 2
PORT = 29731  # inside the namespaces, where nothing else listens


def run_host(worker, host, store_address, own_address):
    """Runs the ranks of `host` together (this process is inside the host's namespace) and
    exits with the first failure's status."""
    processes = []
    for local in range(RANKS_PER_HOST):
        rank = host * RANKS_PER_HOST + local
        command = [worker, "--host", store_address, "--port", str(PORT), "--rank", str(rank),
                   "--world", str(HOSTS * RANKS_PER_HOST), "--bind", own_address, "--mode", "hierarchy",
                   "--timeout-ms", "60000"] + (["--serve"] if rank == 0 else [])
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    status = 0
    for local, process in enumerate(processes):
        output, _ = process.communicate(timeout=300)
        print(f"rank {host * RANKS_PER_HOST + local}: {output.strip()}", flush=True)
        status = status or process.returncode
    return status


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--host":
        return run_host(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
    worker = simulated_hosts.program_argument_or_exit(__doc__)
    with simulated_hosts.SimulatedHosts(HOSTS, 10000) as net:
        hosts = [subprocess.Popen(net.command(h, [sys.executable, os.path.abspath(__file__), "--host", worker, str(h),
                                                  net.address(0), net.address(h)]))
                 for h in range(HOSTS)]
        statuses = [host.wait(timeout=360) for host in hosts]
    if any(statuses):
        print(f"failed: host exit statuses {statuses}")
        return 1
    print(f"ok: {HOSTS} hosts x {RANKS_PER_HOST} ranks all-reduced hierarchically")
    return 0


if __name__ == "__main__":
    sys.exit(main())
