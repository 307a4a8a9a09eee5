"""A link cut between two all-reduces over TCP: rank 0 (serving the job's store) on one
simulated host, rank 1 on another; after one all-reduce, rank 1's link goes down at the
switch, so its packets are dropped and no connection is reset. The next all-reduce must fail
on both ranks with a TimeoutError soon after the Gloo timeout (5 s), not after the store's
timeout too (120 s): rank 0 names rank 1 as the rank that did not arrive, and rank 1 says
that the job's store is unreachable from it too, so its own link may be cut. Exits 77
(skipped) where namespaces cannot be made.

usage: link_cut_test.py COLLECTIVE_WORKER
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "bench"))
import simulated_hosts  # noqa: E402

PORT = 29741  # inside the namespaces, where nothing else listens
GLOO_TIMEOUT_S = 5
STORE_TIMEOUT_S = 120
# What a rank may take past the Gloo timeout: rank 0 waits 2 s for the others' reports;
# rank 1 finds its connection to the store dead by keepalive (a ping every 5 s, 10 s
# without an answer) and gives the store 2 s more.
MOST_PAST_TIMEOUT_S = {0: 6, 1: 22}


def main():
    worker = simulated_hosts.program_argument_or_exit(__doc__)
    gate = tempfile.mkdtemp(prefix="link_cut_")
    try:
        with simulated_hosts.SimulatedHosts(2, 1000) as net:
            ranks = []
            for rank in range(2):
                command = [worker, "--host", net.address(0), "--port", str(PORT), "--rank", str(rank), "--world", "2",
                           "--bind", net.address(rank), "--mode", "link_cut", "--timeout-ms",
                           str(GLOO_TIMEOUT_S * 1000), "--store-timeout-ms", str(STORE_TIMEOUT_S * 1000),
                           "--cut-gate", gate] + (["--serve"] if rank == 0 else [])
                ranks.append(subprocess.Popen(net.command(rank, command), stdout=subprocess.PIPE,
                                              stderr=subprocess.STDOUT, text=True))
            deadline = time.monotonic() + 120
            while len(glob.glob(os.path.join(gate, "ready.*"))) < 2:
                if time.monotonic() > deadline or any(r.poll() is not None for r in ranks):
                    for r in ranks:
                        r.kill()
                    print("failed: the ranks never reached the cut:\n" + "\n".join(r.communicate()[0] for r in ranks))
                    return 1
                time.sleep(0.05)
            net.cut(1)
            open(os.path.join(gate, "go"), "w").close()
            outputs = [r.communicate(timeout=STORE_TIMEOUT_S + 60)[0].strip() for r in ranks]
    finally:
        shutil.rmtree(gate, ignore_errors=True)
    failures = []
    expected = {0: "did not arrive (stuck, or slower than the timeout)",
                1: "the job's store is unreachable from this rank too, so this rank's own link may be cut"}
    for rank, output in enumerate(outputs):
        print(f"rank {rank}: {output}")
        found = re.search(r"after ([0-9.]+) s: TimeoutError: Gloo allreduce on rank %d of 2 did not complete" % rank,
                          output)
        if not found:
            failures.append(f"rank {rank} did not fail with a TimeoutError of the all-reduce")
            continue
        took = float(found.group(1))
        if took > GLOO_TIMEOUT_S + MOST_PAST_TIMEOUT_S[rank]:
            failures.append(f"rank {rank} took {took} s, more than {GLOO_TIMEOUT_S} s and "
                            f"{MOST_PAST_TIMEOUT_S[rank]} s more")
        if expected[rank] not in output:
            failures.append(f"rank {rank} does not say '{expected[rank]}'")
    if "rank 1 ([" not in outputs[0]:
        failures.append("rank 0 does not name rank 1 with its address")
    if failures:
        print("failed: " + "; ".join(failures))
        return 1
    print("ok: both ranks failed soon after the timeout, naming the cut")
    return 0


if __name__ == "__main__":
    sys.exit(main())
