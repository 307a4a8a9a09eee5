"""make bench: runs TorchEstimator's benchmarks and their peers side by side, several
repetitions interleaved, and prints a table of medians plus one JSON line per figure.

usage: run_benchmarks.py --build BUILD_DIR [--repetitions 5] [--quick] [--only GROUP,...]

Groups (for --only): overhead (overhead, vs_glibc_malloc, memory), scaling (scaling_*, allreduce*),
efficiency (efficiency_cnn, ceiling_cnn), gpu (gpu_*; skipped with a line where the build or the
machine has no CUDA device), extras (input_pipeline_bench, checkpoint_bench), ps (ps_*).

Figures (see the README's Performance section):
  overhead       est-train's Estimator loop vs a hand-written LibTorch loop (Fashion-MNIST CNN, batch 64)
  scaling_cnn    2 workers: our MultiWorkerMirroredStrategy (Gloo) vs PyTorch DDP (gloo), examples/s
  scaling_mlp    the same on a 21 M-parameter MLP
  scaling_*_pinned_ddp  the same against DDP workers bound to CPUs as est-launch binds ours
  efficiency_cnn our 2-worker examples/s / (2 x our 1-worker examples/s), one thread per worker
  ceiling_cnn    two independent 1-worker runs at once / (2 x one alone): what the machine's shared
                 caches and memory allow efficiency_cnn before any communication
  allreduce      bus bandwidth of the bucketed all-reduce inside training vs a raw Gloo all-reduce (TCP)
  allreduce_own  the same vs our own all-reduce (shared memory between ranks on one host) outside training
  memory         peak RSS of the Estimator loop vs the hand-written loop
  vs_glibc_malloc  the Estimator loop vs the hand-written loop left with glibc's default malloc thresholds
  gpu_cnn_512    on cuda:0: the Estimator loop vs a hand-written LibTorch loop (pinned, non-blocking input
                 copies), Fashion-MNIST CNN at batch 512, examples/s
  gpu_resnet18   the same for ResNet-18 on 3x32x32 images at batch 128
  ps_async       2 workers and a ps task, async: examples/s vs MultiWorkerMirroredStrategy's 2 workers
  ps_sync        the same, sync (replicas_to_aggregate 2)
  ps_*_straggler the same with worker 1 slowed 2x by a sleep in its step (in both jobs)
  ps_transfer    a step's push and pull of the 21 M-parameter MLP's variables to one ps task, GB/s,
                 vs a bare gRPC service streaming the same bytes both ways in the same chunks
  ps_*_accuracy  Fashion-MNIST test accuracy per wall-clock minute of est-train (the same examples
                 in every mode), vs MultiWorkerMirroredStrategy's
and, when built, the figures of input_pipeline_bench and checkpoint_bench.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

GROUPS = ("overhead", "scaling", "efficiency", "gpu", "extras", "ps")
PYTHON = "/usr/bin/python3"  # Debian's, which has python3-torch
# Our Estimator raises glibc's mmap and trim thresholds itself (common/malloc_tuning.h);
# the peers get the same through the environment, so that the figures compare frameworks,
# not allocator settings. One extra figure shows the hand-written loop without them.
TUNED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def run(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1200)
    if result.returncode != 0:
        sys.exit(f"run_benchmarks: {' '.join(command)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


def json_lines(text):
    lines = []
    for line in text.splitlines():
        start = line.find("{")
        if start >= 0:
            try:
                lines.append(json.loads(line[start:]))
            except json.JSONDecodeError:
                pass
    return lines


class Runner:
    def __init__(self, build, quick):
        self.bin = os.path.join(build, "bin")
        self.quick = quick
        self.single_thread = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.peer_env = dict(os.environ, **TUNED_MALLOC)
        self.peer_single_thread = dict(self.single_thread, **TUNED_MALLOC)

    def sizes(self, model):
        if self.quick:
            return ["--steps", "3", "--warmup", "1"]
        # About 6 s a CNN run: shorter runs vary by several percent from run to run.
        return ["--steps", "600" if model == "cnn" else "20", "--warmup", "20" if model == "cnn" else "3"]

    def train_bench(self, loop, model, batch=64, env=None, device="cpu"):
        command = [os.path.join(self.bin, "train_bench"), "--loop", loop, "--model", model, "--batch-size", str(batch),
                   "--device", device]
        sizes = self.sizes(model) if device == "cpu" or self.quick else ["--steps", "100", "--warmup", "10"]
        return json_lines(run(command + sizes, env))[-1]

    def gpu(self):
        """The name of GPU 0 when train_bench can train on cuda:0 (a LibTorch with CUDA and a
        GPU), else why not."""
        probe = subprocess.run([os.path.join(self.bin, "train_bench"), "--loop", "handwritten", "--model", "mlp",
                                "--batch-size", "1", "--steps", "1", "--warmup", "1", "--device", "cuda:0"],
                               capture_output=True, text=True, timeout=600)
        if probe.returncode != 0:
            return None, (probe.stderr.strip().splitlines() or ["train_bench failed"])[0]
        try:
            name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                                  capture_output=True, text=True, timeout=60).stdout.strip()
        except OSError:
            name = ""
        return name or "an unnamed CUDA device", None

    def ours_workers(self, model, workers, batch=64):
        command = [os.path.join(self.bin, "est-launch"), "--workers", str(workers), "--",
                   os.path.join(self.bin, "train_bench"), "--loop", "estimator", "--model", model,
                   "--batch-size", str(batch), "--strategy", "multi_worker"] + self.sizes(model)
        results = json_lines(run(command, self.single_thread))
        return {"examples_per_sec": sum(r["examples_per_sec"] for r in results),
                "allreduce": results[0].get("allreduce", {}), "peak_rss_mb": max(r["peak_rss_mb"] for r in results)}

    def independent_pair(self, model, batch=64):
        """Two single-worker runs at once, each on a CPU of its own, without communicating:
        what the machine allows two workers before any all-reduce."""
        command = [os.path.join(self.bin, "train_bench"), "--loop", "estimator", "--model", model,
                   "--batch-size", str(batch)] + self.sizes(model)
        cpus = sorted(os.sched_getaffinity(0))
        processes = [subprocess.Popen((["taskset", "-c", str(cpus[i])] if len(cpus) >= 2 else []) + command,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                      env=self.single_thread) for i in range(2)]
        outputs = [process.communicate(timeout=1200)[0] for process in processes]
        if any(process.returncode != 0 for process in processes):
            sys.exit(f"run_benchmarks: {' '.join(command)} failed when run twice at once")
        return sum(json_lines(output)[-1]["examples_per_sec"] for output in outputs)

    def ddp(self, model, workers, batch=64, pin=False):
        command = [PYTHON, os.path.join(os.path.dirname(__file__), "ddp_peer.py"), "--model", model,
                   "--batch-size", str(batch), "--workers", str(workers)] + self.sizes(model) + (["--pin"] if pin else [])
        return json_lines(run(command, self.peer_single_thread))[-1]

    def ps_train(self, mode, straggler):
        """Examples/s of a 2-worker job (with a ps task unless mode is "mirrored"), summed over the workers."""
        sizes = ["--steps", "3", "--warmup", "2"] if self.quick else ["--steps", "300", "--warmup", "20"]
        command = [os.path.join(self.bin, "est-launch"), "--workers", "2"] + ([] if mode == "mirrored" else ["--ps", "1"]) + [
            "--", os.path.join(self.bin, "ps_bench"), "--loop", "train", "--mode", mode] + sizes + (["--straggler"] if straggler else [])
        results = [r for r in json_lines(run(command, self.single_thread)) if r.get("task") != "ps"]
        return sum(r["examples_per_sec"] for r in results)

    def ps_transfer(self):
        sizes = ["--model", "cnn", "--steps", "2", "--warmup", "1"] if self.quick else ["--model", "mlp", "--steps", "20", "--warmup", "3"]
        return json_lines(run([os.path.join(self.bin, "ps_bench"), "--loop", "transfer"] + sizes, self.single_thread))[-1]

    def ps_accuracy(self, mode):
        """Fashion-MNIST test accuracy and wall-clock minutes of est-train with 2 workers in `mode`."""
        steps = 20 if self.quick else 1500
        model_dir = f"/tmp/ps_accuracy_{os.getpid()}_{mode}"
        subprocess.run(["rm", "-rf", model_dir])
        strategy = ["--strategy", "multi_worker"] if mode == "mirrored" else ["--strategy", "parameter_server", "--ps-mode", mode]
        train = [os.path.join(self.bin, "est-train"), "--model", "fashion_mnist_cnn", "--model-dir", model_dir,
                 "--max-steps", str(steps), "--save-checkpoints-steps", str(steps), "--log-step-count-steps", "1000"]
        start = time.monotonic()
        run([os.path.join(self.bin, "est-launch"), "--workers", "2"] + ([] if mode == "mirrored" else ["--ps", "1"]) +
            ["--"] + train + strategy)
        minutes = (time.monotonic() - start) / 60
        # The same command without a cluster skips training (max_steps is saved) and evaluates.
        evaluation = subprocess.run(train, capture_output=True, text=True, env=dict(os.environ, TF_CONFIG=""), timeout=1200)
        subprocess.run(["rm", "-rf", model_dir])
        log = evaluation.stdout + evaluation.stderr
        if evaluation.returncode != 0 or "accuracy = " not in log:
            sys.exit(f"run_benchmarks: evaluating the {mode} job failed ({evaluation.returncode}):\n{log}")
        accuracy = float(log.split("accuracy = ")[-1].split(",")[0])
        return accuracy, minutes

    def raw_allreduce(self, num_bytes, calls, transport):
        command = [os.path.join(self.bin, "est-launch"), "--workers", "2", "--",
                   os.path.join(self.bin, "train_bench"), "--loop", "raw_allreduce", "--bytes", str(num_bytes),
                   "--steps", str(calls), "--warmup", "1", "--transport", transport]
        return json_lines(run(command, self.peer_single_thread))[0]["allreduce"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repetition (CI keeps the benchmarks working)")
    parser.add_argument("--only", default=",".join(GROUPS),
                        help=f"comma-separated groups to run, of {', '.join(GROUPS)} (default: all)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if not only <= set(GROUPS):
        parser.error(f"--only: unknown group(s) {', '.join(sorted(only - set(GROUPS)))}; expected some of {', '.join(GROUPS)}")
    repetitions = 1 if args.quick else args.repetitions
    runner = Runner(args.build, args.quick)

    samples = {}
    gpu_name, no_gpu = runner.gpu() if "gpu" in only else (None, None)

    def record(figure, ours, peer, unit):
        samples.setdefault(figure, {"ours": [], "peer": [], "unit": unit})
        samples[figure]["ours"].append(ours)
        samples[figure]["peer"].append(peer)

    for _ in range(repetitions):
        if "overhead" in only:
            estimator = runner.train_bench("estimator", "cnn")
            handwritten = runner.train_bench("handwritten", "cnn", env=runner.peer_env)
            untuned = runner.train_bench("handwritten", "cnn")
            record("overhead", estimator["examples_per_sec"], handwritten["examples_per_sec"], "examples/s")
            record("vs_glibc_malloc", estimator["examples_per_sec"], untuned["examples_per_sec"], "examples/s")
            record("memory", estimator["peak_rss_mb"], handwritten["peak_rss_mb"], "MB peak RSS")
        for model in ("cnn", "mlp") if "scaling" in only else ():
            ours = runner.ours_workers(model, 2)
            peer = runner.ddp(model, 2)
            record(f"scaling_{model}", ours["examples_per_sec"], peer["examples_per_sec"], "examples/s")
            pinned = runner.ddp(model, 2, pin=True)
            record(f"scaling_{model}_pinned_ddp", ours["examples_per_sec"], pinned["examples_per_sec"], "examples/s")
            if model == "mlp" and ours["allreduce"].get("calls"):
                stats = ours["allreduce"]
                per_call = stats["bytes"] // stats["calls"]
                raw = runner.raw_allreduce(per_call, max(3, stats["calls"]), "tcp")
                record("allreduce", stats["bus_gbytes_per_sec"], raw["bus_gbytes_per_sec"], "GB/s bus")
                own = runner.raw_allreduce(per_call, max(3, stats["calls"]), "auto")
                record("allreduce_own", stats["bus_gbytes_per_sec"], own["bus_gbytes_per_sec"], "GB/s bus")
        if gpu_name:
            for figure, model, batch in (("gpu_cnn_512", "cnn", 512), ("gpu_resnet18", "resnet", 128)):
                if args.quick:
                    batch = 8
                estimator = runner.train_bench("estimator", model, batch, device="cuda:0")
                handwritten = runner.train_bench("handwritten", model, batch, env=runner.peer_env, device="cuda:0")
                record(figure, estimator["examples_per_sec"], handwritten["examples_per_sec"], "examples/s")
        if "efficiency" in only:
            one = runner.ours_workers("cnn", 1)
            two = runner.ours_workers("cnn", 2)
            record("efficiency_cnn", two["examples_per_sec"] / 2, one["examples_per_sec"], "examples/s per worker")
            record("ceiling_cnn", runner.independent_pair("cnn") / 2, one["examples_per_sec"], "examples/s per worker")

        if "ps" in only:
            for straggler in (False, True):
                mirrored = runner.ps_train("mirrored", straggler)
                suffix = "_straggler" if straggler else ""
                for mode in ("async", "sync"):
                    record(f"ps_{mode}{suffix}", runner.ps_train(mode, straggler), mirrored, "examples/s")
            transfer = runner.ps_transfer()
            record("ps_transfer", transfer["ours_gbytes_per_sec"], transfer["raw_gbytes_per_sec"], "GB/s")
            mirrored_accuracy, mirrored_minutes = runner.ps_accuracy("mirrored")
            for mode in ("async", "sync"):
                accuracy, minutes = runner.ps_accuracy(mode)
                record(f"ps_{mode}_accuracy", accuracy / minutes, mirrored_accuracy / mirrored_minutes,
                       "test accuracy per minute")

    peers = {"overhead": "hand-written LibTorch loop", "memory": "hand-written LibTorch loop",
             "vs_glibc_malloc": "hand-written loop, glibc's default malloc thresholds",
             "scaling_cnn": "PyTorch DDP (gloo)", "scaling_mlp": "PyTorch DDP (gloo)",
             "scaling_cnn_pinned_ddp": "PyTorch DDP, each worker bound to its own CPU as ours",
             "scaling_mlp_pinned_ddp": "PyTorch DDP, each worker bound to its own CPU as ours",
             "allreduce": "raw Gloo all-reduce (TCP)",
             "allreduce_own": "our shared-memory all-reduce alone", "efficiency_cnn": "our 1 worker",
             "ceiling_cnn": "our 1 worker (ours: 2 independent 1-worker runs at once, no all-reduce)",
             "gpu_cnn_512": f"hand-written LibTorch loop on {gpu_name}",
             "gpu_resnet18": f"hand-written LibTorch loop on {gpu_name}",
             "ps_async": "MultiWorkerMirroredStrategy, 2 workers", "ps_sync": "MultiWorkerMirroredStrategy, 2 workers",
             "ps_async_straggler": "MultiWorkerMirroredStrategy, 2 workers, worker 1 slowed 2x",
             "ps_sync_straggler": "MultiWorkerMirroredStrategy, 2 workers, worker 1 slowed 2x",
             "ps_transfer": "bare gRPC streams of the same bytes",
             "ps_async_accuracy": "MultiWorkerMirroredStrategy, 2 workers",
             "ps_sync_accuracy": "MultiWorkerMirroredStrategy, 2 workers"}
    print(f"TorchEstimator benchmarks on {platform.node()}: {os.cpu_count()} cores, "
          f"{repetitions} repetition(s), medians{' (quick sizes: not a measurement)' if args.quick else ''}")
    if "gpu" in only and not gpu_name:
        print(f"gpu figures skipped: no CUDA device for train_bench ({no_gpu})")
    print(f"{'figure':<16} {'ours':>12} {'peer':>12} {'ratio':>7}  unit / peer")
    lines = []
    for figure, data in samples.items():
        ours, peer = statistics.median(data["ours"]), statistics.median(data["peer"])
        ratio = ours / peer if peer else float("nan")
        print(f"{figure:<16} {ours:>12.4g} {peer:>12.4g} {ratio:>7.3f}  {data['unit']} / {peers[figure]}")
        lines.append({"bench": "training", "figure": figure, "ours": ours, "peer": peer, "ratio": ratio,
                      "unit": data["unit"], "peer_name": peers[figure], "repetitions": repetitions,
                      "quick": args.quick, **({"gpu": gpu_name} if figure.startswith("gpu_") else {})})
    for extra in ("input_pipeline_bench", "checkpoint_bench") if "extras" in only else ():
        path = os.path.join(runner.bin, extra)
        if os.path.exists(path):
            output = run([path] + (["--quick"] if args.quick else []))
            print(output, end="")
    for line in lines:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
