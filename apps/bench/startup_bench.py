#!/usr/bin/env python3
"""How long a multi-worker job takes to connect: starts the est-train tasks of a TF_CONFIG
cluster of 2 and of 8 ranks at the same moment (the chief first, or the chief last), each
training one step of the linear model, and reads from their logs the time between
"joining" and "all N workers connected". Prints a table of medians and maxima over the runs
and one JSON line.

    python3 apps/bench/startup_bench.py --est-train build/bin/est-train --runs 10
"""
import argparse, datetime, json, os, re, socket, statistics, subprocess, tempfile

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--est-train", default="build/bin/est-train")
parser.add_argument("--runs", type=int, default=10)
args = parser.parse_args()
EST_TRAIN = args.est_train
RUNS = args.runs

def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s); ports.append(s.getsockname()[1])
    for s in socks: s.close()
    return ports

STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\]")
def stamp(line):
    return datetime.datetime.strptime(STAMP.search(line).group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()

def one_run(n, chief_last):
    ports = free_ports(n)
    cluster = {"chief": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{p}" for p in ports[1:]]}
    tasks = [("chief", 0)] + [("worker", i) for i in range(n - 1)]
    if chief_last: tasks = tasks[1:] + tasks[:1]
    with tempfile.TemporaryDirectory() as d:
        procs = []
        for kind, index in tasks:
            env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}}),
                       OMP_NUM_THREADS="1", EST_JOB_ID="timing")
            out = open(os.path.join(d, f"{kind}{index}.log"), "w")
            procs.append((subprocess.Popen([EST_TRAIN, "--strategy", "multi_worker", "--model-dir", os.path.join(d, "m"),
                                            "--max-steps", "1", "--batch-size", str(8 * n), "--model", "linear",
                                            "--save-checkpoints-steps", "1000", "--timeout-secs", "60"],
                                           stdout=out, stderr=subprocess.STDOUT, env=env), out, kind, index))
        worst = 0.0
        joins, connects = [], []
        for p, out, kind, index in procs:
            p.wait(timeout=120); out.close()
            text = open(out.name).read()
            joining = [stamp(l) for l in text.splitlines() if "joining job" in l]
            connected = [stamp(l) for l in text.splitlines() if "workers connected" in l]
            if not joining or not connected:
                raise SystemExit(f"{kind} {index} exited {p.returncode} without both lines:\n{text[-2000:]}")
            worst = max(worst, connected[0] - joining[0])
            joins.append(joining[0]); connects.append(connected[0])
        return worst, max(connects) - max(joins)

rows = []
for n in (2, 8):
    for chief_last in (False, True):
        runs = [one_run(n, chief_last) for _ in range(RUNS)]
        worst = [w for w, _ in runs]; after_last = [a for _, a in runs]
        rows.append((n, "chief last" if chief_last else "chief first", statistics.median(worst), max(worst),
                     statistics.median(after_last), max(after_last)))
print("join->connected: the slowest worker's time from its 'joining' line to its 'all N workers connected'")
print("last join->all connected: from the last 'joining' line of the job to its last 'connected' line")
print(f"{'ranks':>5} {'start order':>12} | {'join->connected':>22} | {'last join->all connected':>24}")
print(f"{'':>5} {'':>12} | {'median s':>10} {'max s':>11} | {'median s':>11} {'max s':>12}")
for n, order, med, mx, amed, amx in rows:
    print(f"{n:>5} {order:>12} | {med:10.3f} {mx:11.3f} | {amed:11.3f} {amx:12.3f}")
print(json.dumps({"startup": [{"ranks": r[0], "order": r[1], "join_to_connected_median_s": r[2], "join_to_connected_max_s": r[3],
                               "last_join_to_all_connected_median_s": r[4], "last_join_to_all_connected_max_s": r[5]} for r in rows]}))
