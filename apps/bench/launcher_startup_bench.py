#!/usr/bin/env python3
"""Start-up to the first training step under each launcher: est-launch --workers N, Open MPI's
mpirun -np N and Slurm's srun -n N (a private Slurm on this machine, started by
tests/slurm/local_slurm.sh), each running est-train's linear model for 1 step. Times from the
launcher's start to the first "step = 0" line of the job's log, and to the launcher's exit;
prints a table of medians and maxima over the runs and one JSON line. A launcher that is not
installed is left out, with a line saying so.

    python3 apps/bench/launcher_startup_bench.py --est-train build/bin/est-train \
        --est-launch build/bin/est-launch --runs 5
"""
import argparse, datetime, json, os, re, shutil, socket, statistics, subprocess, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--est-train", default="build/bin/est-train")
parser.add_argument("--est-launch", default="build/bin/est-launch")
parser.add_argument("--runs", type=int, default=5)
parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
args = parser.parse_args()
EST_TRAIN = os.path.abspath(args.est_train)

STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\]")
FIRST_STEP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\] \[info\] loss = [^,]*, step = 0$")

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def train_args(model_dir):
    return [EST_TRAIN, "--model", "linear", "--strategy", "multi_worker", "--model-dir", model_dir, "--max-steps", "1",
            "--save-checkpoints-steps", "1000", "--timeout-secs", "60"]

def command(launcher, ranks, model_dir):
    if launcher == "est-launch":
        return [os.path.abspath(args.est_launch), "--workers", str(ranks), "--"] + train_args(model_dir), {}
    port = str(free_port())
    if launcher == "mpirun":
        return (["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), "-x", f"MASTER_PORT={port}"]
                + train_args(model_dir), {})
    return ["srun", f"--ntasks={ranks}", "--label"] + train_args(model_dir), {"MASTER_PORT": port}

def one_run(launcher, ranks):
    with tempfile.TemporaryDirectory() as d:
        cmd, extra_env = command(launcher, ranks, os.path.join(d, "model"))
        start = time.time()
        done = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1", **extra_env), capture_output=True,
                              text=True, timeout=300)
        end = time.time()
        output = done.stdout + done.stderr
        steps = [datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
                 for m in (FIRST_STEP.search(line) for line in output.splitlines()) if m]
        if done.returncode != 0 or not steps:
            raise SystemExit(f"{launcher} -n {ranks} exited {done.returncode} without a first step:\n{output[-3000:]}")
        return min(steps) - start, end - start

launchers = ["est-launch"]
if shutil.which("mpirun"):
    launchers.append("mpirun")
else:
    print("mpirun: not installed (Debian's openmpi-bin); left out")
slurm_dir = tempfile.mkdtemp(prefix="est-slurm-bench-")
slurm = subprocess.run(["bash", os.path.join(ROOT, "tests/slurm/local_slurm.sh"), "start", slurm_dir],
                       capture_output=True, text=True)
if slurm.returncode == 0:
    os.environ["SLURM_CONF"] = slurm.stdout.splitlines()[0]
    launchers.append("srun")
else:
    print(f"srun: left out: {(slurm.stdout + slurm.stderr).strip()}")
try:
    rows = []
    for launcher in launchers:
        for ranks in args.ranks:
            runs = [one_run(launcher, ranks) for _ in range(args.runs)]
            first = [f for f, _ in runs]; total = [t for _, t in runs]
            rows.append((launcher, ranks, statistics.median(first), max(first), statistics.median(total), max(total)))
finally:
    if slurm.returncode == 0:
        subprocess.run(["bash", os.path.join(ROOT, "tests/slurm/local_slurm.sh"), "stop", slurm_dir])
    shutil.rmtree(slurm_dir, ignore_errors=True)

print(f"est-train, linear model, 1 step, {args.runs} runs each; from the launcher's start")
print(f"{'launcher':>10} {'ranks':>5} | {'to the first step':>22} | {'to the launcher exit':>22}")
print(f"{'':>10} {'':>5} | {'median s':>10} {'max s':>11} | {'median s':>10} {'max s':>11}")
for launcher, ranks, med, mx, tmed, tmx in rows:
    print(f"{launcher:>10} {ranks:>5} | {med:10.2f} {mx:11.2f} | {tmed:10.2f} {tmx:11.2f}")
print(json.dumps({"launcher_startup": [{"launcher": r[0], "ranks": r[1], "first_step_median_s": round(r[2], 3),
                                        "first_step_max_s": round(r[3], 3), "exit_median_s": round(r[4], 3),
                                        "exit_max_s": round(r[5], 3)} for r in rows]}))
