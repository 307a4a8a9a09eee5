"""est-launch across two simulated hosts (network namespaces, apps/bench/simulated_hosts.py),
one est-launch per host with --nnodes 2, each starting 2 est-train workers of the linear
model:

1. The job trains to its last step, the chief on host 0 alone writes, and the checkpoint holds
   what est-launch --workers 4 on one host writes: every tensor bit for bit, the same input
   positions (CHECKPOINT_DIFFERENCE compares them).
2. Host 1's est-launch is killed (SIGKILL) while the job trains: node 0 stops its tasks and,
   with --max-restarts 1, waits for host 1 to join again; a new est-launch on host 1 joins,
   every task restores the latest checkpoint and the job ends at its last step.

Exits 77 (skipped) where namespaces cannot be made.

usage: est_launch_hosts_test.py EST_LAUNCH EST_TRAIN CHECKPOINT_DIFFERENCE
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "bench"))
import simulated_hosts  # noqa: E402

RENDEZVOUS_PORT = 29400  # inside the namespaces, where nothing else listens
TIMEOUT_S = 240


def train_args(est_train, model_dir, max_steps, save_steps):
    return [est_train, "--model", "linear", "--strategy", "multi_worker", "--max-steps", str(max_steps),
            "--save-checkpoints-steps", str(save_steps), "--log-step-count-steps", "10", "--timeout-secs", "120",
            "--model-dir", model_dir]


class Node:
    """One est-launch of the job, on simulated host `rank`, its output in a file."""

    def __init__(self, net, rank, launch_args, log_path):
        self.rank = rank
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(net.command(rank, launch_args), stdout=self.log, stderr=subprocess.STDOUT)

    def output(self):
        with open(self.log_path) as log:
            return log.read()

    def wait(self, timeout=TIMEOUT_S):
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None
        finally:
            self.log.close()


def start_node(net, launch, rank, extra, command, log_path):
    args = [launch, "--nnodes", "2", "--node-rank", str(rank),
            "--rendezvous", f"{net.address(0)}:{RENDEZVOUS_PORT}", "--workers", "2"] + extra + ["--"] + command
    return Node(net, rank, args, log_path)


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def check(failures, condition, message):
    if not condition:
        failures.append(message)


def two_hosts_equal_one(net, launch, train, difference, work, failures):
    model_dir = os.path.join(work, "model")
    command = train_args(train, model_dir, 20, 10)
    nodes = [start_node(net, launch, rank, [], command, os.path.join(work, f"node{rank}.log")) for rank in range(2)]
    codes = [node.wait() for node in nodes]
    outputs = [node.output() for node in nodes]
    for rank, output in enumerate(outputs):
        print(f"--- node {rank} ---\n{output}")
    check(failures, codes == [0, 0], f"2 hosts: the est-launch exit statuses are {codes}, expected [0, 0]")
    check(failures, "[worker 2] " in outputs[1] and f"starting 2 task(s) on {net.address(1)} ports" in outputs[1],
          "2 hosts: host 1 does not run worker 2 on its own address")
    check(failures, "[worker 0] " in outputs[0] and "Saving checkpoints for 20" in outputs[0],
          "2 hosts: the chief (worker 0, host 0) did not save step 20")
    check(failures, "Saving checkpoints" not in outputs[1], "2 hosts: a task of host 1 wrote a checkpoint")

    one_host_dir = os.path.join(work, "one_host")
    single = subprocess.run([launch, "--workers", "4", "--"] + train_args(train, one_host_dir, 20, 10),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
    check(failures, single.returncode == 0, f"one host: est-launch --workers 4 exited {single.returncode}:\n"
                                            f"{single.stdout[-3000:]}")
    if codes == [0, 0] and single.returncode == 0:
        compared = subprocess.run([difference, os.path.join(model_dir, "model.ckpt-20"),
                                   os.path.join(one_host_dir, "model.ckpt-20")],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(failures, compared.returncode == 0,
              f"2 hosts x 2 workers: not est-launch --workers 4's checkpoint: {compared.stdout.strip()}")


def host_killed_and_rejoined(net, launch, train, work, failures):
    model_dir = os.path.join(work, "model_killed")
    command = train_args(train, model_dir, 400, 20)
    node0 = start_node(net, launch, 0, ["--max-restarts", "1", "--restart-backoff-secs", "0"], command,
                       os.path.join(work, "killed_node0.log"))
    node1 = start_node(net, launch, 1, [], command, os.path.join(work, "killed_node1.log"))
    trained = wait_for(lambda: "Saving checkpoints for 20" in node0.output(), TIMEOUT_S)
    node1.process.send_signal(signal.SIGKILL)
    node1.wait()
    if not trained:
        failures.append("host killed: the chief never saved step 20:\n" + node0.output())
        node0.process.kill()
        node0.wait()
        return
    rejoin = wait_for(lambda: "once every node has joined again" in node0.output(), 60)
    again = start_node(net, launch, 1, [], command, os.path.join(work, "killed_node1_again.log"))
    codes = [node0.wait(), again.wait()]
    outputs = [node0.output(), again.output()]
    print(f"--- node 0 ---\n{outputs[0]}\n--- node 1, killed ---\n{node1.output()}\n--- node 1, again ---\n{outputs[1]}")
    check(failures, rejoin, "host killed: node 0 did not say that it waits for the hosts to join again")
    check(failures, "est-launch: node 1's est-launch (" in outputs[0] and ") is gone" in outputs[0],
          "host killed: node 0 does not name node 1's est-launch as gone")
    check(failures, codes == [0, 0], f"host killed: the exit statuses are {codes}, expected [0, 0]")
    check(failures, "restart 1" in outputs[1], "host killed: the new node 1 did not start restart 1")
    check(failures, "Restoring parameters from " + model_dir + "/model.ckpt-" in outputs[1],
          "host killed: the workers of the new node 1 did not restore the checkpoint")
    check(failures, os.path.exists(os.path.join(model_dir, "model.ckpt-400.index")),
          "host killed: the job did not end with model.ckpt-400")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    launch, train, difference = (os.path.abspath(path) for path in sys.argv[1:])
    try:
        simulated_hosts.check_available()
    except simulated_hosts.Unavailable as why:
        print(f"skipped: {why}")
        return 77
    work = tempfile.mkdtemp(prefix="est_launch_hosts_")
    failures = []
    try:
        with simulated_hosts.SimulatedHosts(2, 1000) as net:
            two_hosts_equal_one(net, launch, train, difference, work, failures)
            host_killed_and_rejoined(net, launch, train, work, failures)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("failed:\n- " + "\n- ".join(failures))
        return 1
    print("ok: 2 hosts x 2 workers equal 4 workers on one host; a killed host's est-launch rejoined and the job ended")
    return 0


if __name__ == "__main__":
    sys.exit(main())
