"""make bench: runs TorchEstimator's benchmarks and their peers side by side, several
repetitions interleaved, and prints a table of medians plus one JSON line per figure.

usage: run_benchmarks.py --build BUILD_DIR [--repetitions 5] [--quick] [--only GROUP,...] [--tf-venv DIR]

Groups (for --only): overhead (overhead*, vs_glibc_malloc, memory, fused_adam_*), estimator
(estimator_vs_tf*: the TensorFlow peer in BUILD_DIR/tf-venv, as the input group's), scaling (scaling_*, allreduce*),
efficiency (efficiency_cnn, ceiling_cnn), gpu (gpu_*; skipped with a line where the build or the
machine has no CUDA device), extras (input_pipeline_bench, checkpoint_bench), ps (ps_*), input (input_*:
TFRecord shards made once into BUILD_DIR/bench-data/fashion-tfrecord; the tf.data peer runs in
BUILD_DIR/tf-venv, installed once by cmake/install_venv.sh, or is skipped with a line saying why),
hosts (hosts_*: needs root and network namespaces; skipped with a line saying why where it cannot run),
lm (lm_*: the fortunes text of Debian's fortunes package), serve (serve_*: serve_bench, in one process over
loopback gRPC), elastic (elastic_*: failures of workers in a running job), canned (canned_*: canned_bench vs
TensorFlow 2.15's canned estimators on ctr_data.py's click-through data, made once into
BUILD_DIR/bench-data/ctr with BUILD_DIR/tf-venv's Python; skipped with a line saying why without it).

Every model runs on LibTorch's own layers (stock) unless a figure says "kernels": then on the CPU
kernels of kernels/ (est::kernels), in ours and in the peer alike where the peer is ours too.

Figures (see docs/performance.md):
  overhead       est-train's Estimator loop vs a hand-written LibTorch loop (Fashion-MNIST CNN, batch 64, stock
                 layers), both stepping LibTorch's Adam (RunConfig::fused_optimizer_step off): the loop's own cost
  overhead_kernels  the same, both loops running the CNN's layers on the kernels
  overhead_ops   the same, both loops with --kernels ops (LibTorch's layers, its slow CPU kernels replaced, Adam
                 fused, the CNN's forward run as a fused graph by est::kernels::FusedForward in both)
  overhead_same_allocator  overhead, the hand-written loop also on the Estimator's CachingCpuAllocator
  fused_adam_{cnn,mlp}  the Estimator with the kernels' fused Adam step (the default) vs with LibTorch's Adam::step
  estimator_vs_tf  est-train on the CNN's LibTorch layers with the general replacements of LibTorch's slow CPU
                 kernels, the fused Adam step and the forward run as a traced graph with its convolution, relu and
                 max-pool fused (--kernels ops, its default where the kernels are built;
                 Fashion-MNIST CNN, batch 64, IDX files, one thread), steps/s, vs TensorFlow 2.15's tf.estimator on
                 the same model, data, batch and threads (tf_estimator_peer.py)
  estimator_vs_tf_stock  the same with est-train --kernels off: LibTorch's own kernels and Adam::step
  estimator_vs_tf_kernels  the same with est-train --kernels model: the CNN's layers on kernels fitted to it
  estimator_vs_tf_all_cores  the same (--kernels ops) on every core: each side's default thread pools
  estimator_vs_tf_2_workers  2 workers, each bound to a CPU with one thread: est-launch --workers 2 of est-train
                 --strategy multi_worker vs tf.estimator under MultiWorkerMirroredStrategy, examples/s
                 (_stock: ours with --kernels off)
  resnet_ops_vs_off  the second model: ResNet-18 (train_bench's, CIFAR-sized, no max-pool) in the Estimator loop
                 at one thread, batch 16, --kernels ops vs --kernels off with Adam::step, examples/s
  estimator_vs_tf_time_to_088  seconds from launch to the first evaluation at 0.88 test accuracy, one thread, both
                 sides checkpointing and evaluating on the whole test set every 1000 steps to step 3000
                 (make demo's schedule), lower is better (_stock: ours with --kernels off)
                 (the group also prints a per-op table of one thread's step, ours beside TensorFlow's)
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
  lm_examples    est-train --model transformer_lm (a byte-level Transformer LM with AdamW in two variable groups,
                 warmup into cosine decay, clipping, dropout) trained by 2 workers under est-launch, windows of 64
                 bytes per second, vs PyTorch DDP training the same model (nn.TransformerEncoderLayer) the same way
  lm_validation_loss  the validation loss (nats per byte) after the same steps, ours vs that DDP peer's
  ps_async       2 workers and a ps task, async: examples/s vs MultiWorkerMirroredStrategy's 2 workers
  ps_sync        the same, sync (replicas_to_aggregate 2)
  ps_*_straggler the same with worker 1 slowed 2x by a sleep in its step (in both jobs)
  ps_transfer    a step's push and pull of the 21 M-parameter MLP's variables to one ps task, GB/s,
                 vs a bare gRPC service streaming the same bytes both ways in the same chunks
  ps_*_accuracy  Fashion-MNIST test accuracy per wall-clock minute of est-train (the same examples
                 in every mode), vs MultiWorkerMirroredStrategy's
  input_raw      a plain read(2) of the Fashion-MNIST TFRecord shards in 256 KiB chunks, MB/s (the limit;
                 no peer); the input_* figures read the 10 training shards from the page cache
  input_framing  TFRecordReader::next over every record vs that raw read, MB/s (target >= 0.8)
  input_framing_unchecked  input_framing without verifying the checksums: the reader's own cost
  input_raw_cold, input_framing_cold  input_raw and input_framing with the files dropped from the
                 page cache before every pass, so read from disk (left out where the cache keeps them)
  input_parse    TFRecordDataset + ParseExample + batch 64, InterleaveFiles with 2 threads, vs tf.data's
                 interleave + batch + parse_example + decode_raw with 2 threads, records/s (target >= 1.0)
  input_parse_single  the same vs tf.data parsing one record at a time (parse_single_example), records/s
  input_parse_vs_raw  our input_parse vs the raw read of the same files, MB/s (target >= 0.8)
  input_parse_threads our input_parse (2 threads) vs our TFRecordDataset + parse + batch on 1 thread
  input_parse_gzip    input_parse on GZIP shards
  input_memory   peak RSS after 100% vs after 10% of a 1 GB stream of records through TFRecordDataset +
                 parse + batch (flat: 1.0; the growth in MiB is printed)
  input_training est-train steps/s fed from the TFRecord shards vs from the IDX files, same flags
                 (target >= 0.97)
  canned_wide_deep_vs_tf  canned_bench's DNNLinearCombinedClassifier (the columns, rates Ftrl 0.1 / Adagrad
                 0.05, batch 256 and file-order TFRecord input of tests/estimator/canned/tensorflow_canned.py, one
                 intra-op thread) vs TensorFlow 2.15's (canned_tf_peer.py, one intra- and one inter-op thread),
                 examples/s from the first step to the last (target >= 1.3)
  canned_wide_deep_ps_vs_tf  the same wide & deep trained asynchronously by 2 workers and 1 ps task (one
                 TF_CONFIG cluster of processes on this host, one intra-op thread each): ours
                 (ParameterServerStrategy) vs TensorFlow's estimator (between-graph replication), examples of
                 all steps from the first step's start to the last one's end, the workers starting together
  canned_linear_vs_tf, canned_dnn_regressor_vs_tf  the same for LinearClassifier and DNNRegressor
  canned_auc     wide & deep's eval AUC after the same steps, ours vs TensorFlow's (within 0.005)
  canned_dnn_regressor_loss  DNNRegressor's eval average loss after the same steps, ours vs TensorFlow's
  canned_time_to_auc  wide & deep: seconds of steps until the first checkpoint (every 250 steps, each
                 evaluated on the whole eval file) at CANNED_AUC_TARGET, ours vs TensorFlow's, lower is better
  canned_input_tfrecord_vs_tensors  our wide & deep fed from the TFRecord file vs from the same batches parsed
                 once before training and held in memory, examples/s (target >= 0.95)
  hosts_{cnn,mlp}_{1,10}g  2 simulated hosts (network namespaces joined by a bridge over veth links
                 shaped by tc tbf to 1 or 10 Gbit/s each way; simulated_hosts.py), one worker on each,
                 bound to a CPU of its own: ours vs PyTorch DDP (gloo), examples/s (target >= 1.10)
  hosts_*_fp16   the same with float16 gradients on the wire: ours (error feedback) vs DDP's
                 fp16_compress_hook (target >= 1.10)
  hosts_*_fp16_vs_fp32  ours with float16 gradients vs ours with float32, examples/s
  hosts_*_powersgd  ours with PowerSGD rank 1 (DDP's default rank) vs DDP with its fp16_compress_hook (its
                 powerSGD_hook fails over Gloo in PyTorch 1.13: docs/performance.md), examples/s
  hosts_*_powersgd_vs_fp32  ours with PowerSGD vs ours with float32, examples/s
  hosts_resnet_1g_bucket_{5,100}mb  ResNet-18 (batch 32), 2 hosts x 1 worker at 1 Gbit/s: ours with 5 or 100 MiB
                 gradient buckets vs ours with DDP's default 25 MiB, examples/s (--quick: at 10 Gbit/s, _10g_)
  hosts_mlp_*_allreduce  bus bandwidth of the MLP's all-reduce inside training, 2 hosts x 1 worker, vs bare Gloo
                 TCP all-reduces of the same bucket sizes over the same link (target >= 0.9)
  hosts_*_1g_2x2  2 workers on each of the 2 hosts (a host's 2 workers share its CPU), 1 Gbit/s links (--quick: 10):
                 ours (hierarchical all-reduce: shared memory within a host, Gloo among one
                 leader per host) vs PyTorch DDP (gloo, flat), examples/s
  hosts_*_1g_2x2_vs_flat  the same, ours hierarchical vs ours with a flat Gloo TCP all-reduce
  serve_predictor_batch_{1,64}  Predictor::predict on an export of the Fashion-MNIST CNN (stock layers, one thread)
                 vs the limit: the same module and weights called directly under InferenceMode, making the same
                 predictions, interleaved; examples/s (target >= 0.95); p50/p99 latencies printed below the table
  serve_program_batch_{1,64}  the export's traced program (Predictor without model_fn: no model code) vs model_fn's
                 own forward (Predictor with it) on the same export, interleaved; examples/s (target >= 0.95)
  serve_json_decode_{kserve,tf}_us  microseconds to decode one REST body of one example (784 floats; the MLP's
                 1024): KServe v2's infer JSON, TensorFlow Serving's :predict row format (no peer)
  serve_vs_torchserve_64_clients  est-serve serving the export's traced program (no model code) vs TorchServe 0.12
                 serving the same model.pt (apps/bench/torchserve_handler.py; BUILD_DIR/torchserve-venv beside
                 Debian's torch; Java), both batching at most 64 with the same delay, 64 clients posting the same
                 :predict body over keep-alive HTTP, requests/s (skipped with a line saying why without Java)
  serve_{kserve,tf}_rest_batched_64_clients  the REST APIs (KServe v2 infer, TF Serving :predict, JSON, keep-alive
                 connections) at 64 clients, batched, requests/s, vs gRPC ModelInfer at 64 clients on the same server
  serve_grpc_{unbatched,batched}_{1,8,64}_clients  est-serve (ModelServer on 127.0.0.1) under 1, 8 or 64 client
                 threads sending KServe v2 ModelInfer requests of one image as fast as they can, without and with
                 dynamic batching (at most 64 examples, 2 ms queue delay), requests/s, vs the Predictor's examples/s
                 in process at the batch the server runs (1 or 64): the compute's ceiling
  serve_batching_gain_64_clients  est-serve batched vs unbatched at 64 clients, requests/s (target >= 3)
  serve_p99_bound_64_clients  the batched p99 latency at 64 clients vs 2 x the queue delay + the Predictor's
                 batch-64 compute (p50), ms (target <= 1)
  serve_grpc_batched_open_64_clients, serve_p99_bound_open_64_clients  the same 64 clients in open loop (each
                 sending on a Poisson schedule, latency counted from the scheduled time; MLPerf's server scenario)
                 at half the closed loop's requests/s: requests/s, and the p99 vs the same bound (target <= 1)
  serve_hot_reload_failed  failed requests of 8 clients sending while new versions are exported into the served
                 base directory and reloaded (ServedModel::reload), vs the requests sent (target 0)
  serve_hot_reload_versions  the versions served by those reloads vs the versions exported (target 1)
  serve_mlp_*    the same figures for a 21 M-parameter MLP (1024-4096-4096-10), whose single request reads every
                 weight for one example: where batching pays most (the CNN's batch-64 call computes only about twice
                 as many examples a second as its batch-1 call)
  elastic_recorder_call  nanoseconds to enter and leave one recorded collective call (flight_recorder_bench), vs
                 the same while another thread takes records as fast as it can (a dump on demand at its worst)
  elastic_recorder_share  the flight recorder's share of a training step, in percent: recorded calls per step (the
                 recorders' own counts, logged at their end) x elastic_recorder_call / the step's time, in
                 est-launch --workers 2 of train_bench's CNN (target: below the overhead figure's noise)
  elastic_stop_to_error  seconds from SIGSTOP of worker 1 of 2 (est-train, linear model, under est-launch) to
                 worker 0's error naming it, vs the collective timeout (--timeout-secs; target <= timeout + 2 s)
  elastic_recovery_shrink  seconds from SIGKILL of worker 1 (of a chief and 2 workers: est-train's CNN on stock
                 layers, 64 examples a task, 6 logical input shards) to the job's next completed step, in-job
                 (est-launch --min-workers 2), vs torchrun's elastic agent restarting the 3 ranks of the DDP peer
                 (elastic_ddp_peer.py) from its last checkpoint (target: <= 2 s and 5x faster)
  elastic_recovery_replace  the same, in-job with a replacement (est-launch --min-workers 2 --max-restarts 1): the
                 2 left train on while worker 1, started again alone, comes back; it joins them between two steps
                 and takes the chief's state by broadcast
  elastic_regrow_pause  seconds the chief's steps stop while that replacement joins (the gap between its last
                 step before the newcomer was seen and its first step with 3 workers, one step's time included)
  elastic_recovery_replace_wait  the same with --min-workers 3: the 2 left wait for the replacement
  elastic_recovery_restart  the same with est-launch --max-restarts 1: every task restarts from the checkpoint
  elastic_recovery_silent  seconds from SIGSTOP of worker 1 (the same job, --min-workers 2) to the next completed
                 step: its connections stay open, as when a host hangs or drops its packets, and the chief cuts
                 it off after the beat lease (5 s), vs the collective timeout (60 s) it waited for before
  elastic_steps_lost_{shrink,replace,replace_wait,restart,silent}  completed steps lost by the kill (a checkpoint
                 every 20 steps, the kill after step 30), vs torchrun's
and, when built, the figures of input_pipeline_bench and checkpoint_bench.
"""

import argparse
import glob
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import simulated_hosts  # beside this file

GROUPS = ("overhead", "estimator", "scaling", "efficiency", "gpu", "extras", "ps", "input", "hosts", "lm", "serve",
          "elastic", "canned")
# The elastic group's collective timeout for the stopped worker, seconds (--quick: 3).
STOP_TIMEOUT_SECS = 10
# The elastic group's recovery runs: a task is killed after this step; checkpoints every so many steps.
RECOVERY_KILL_STEP, RECOVERY_SAVE_STEPS = 30, 20
LM_STEPS, LM_BATCH = 1000, 64  # the lm group's full run: steps and global batch (windows of 64 bytes)
# The link rates of the hosts group, Mbit/s: 1 and 10 Gbit/s.
HOST_LINK_RATES = (1000, 10000)
# The serve group's concurrent clients (one configuration each), the clients sending during the
# hot reloads, the batcher's largest batch and its queue delay (microseconds).
SERVE_CLIENTS, SERVE_RELOAD_CLIENTS, SERVE_BATCH, SERVE_DELAY_US = (1, 8, 64), 8, 64, 2000
# The rank of PowerSGD's factors in the hosts group: DDP's default rank.
POWERSGD_RANK = 1
# The estimator group's time to accuracy: Fashion-MNIST test accuracy to reach.
TIME_TO_ACCURACY_TARGET = 0.88
# The canned group: training steps, the checkpoints evaluated every so many (wide & deep), the eval AUC
# whose time is reported (TensorFlow's wide & deep reaches it near step 1000), and the learning rates
# (Ftrl, Adagrad) that make wide & deep learn (TENSORFLOW_CANNED_FACTS.md).
CANNED_STEPS, CANNED_EVAL_EVERY, CANNED_AUC_TARGET = 2000, 250, 0.755
CANNED_RATES = ("0.1", "0.05")
# The gradient bucket caps (MiB) the hosts group compares with DDP's default of 25.
BUCKET_CAPS_MB = (5, 25, 100)
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


def run_log(command, env=None):
    """`command`'s stdout and stderr together (where a program logs), or exits naming it."""
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1200)
    if result.returncode != 0:
        sys.exit(f"run_benchmarks: {' '.join(command)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout + result.stderr


def logged_steps_per_sec(lines, log_every):
    """Steps/s over the global_step/sec lines of a log that logs every `log_every` steps, the first
    two intervals (which hold the start-up) left out where there are more."""
    rates = [float(line.split("global_step/sec: ")[1].split()[0]) for line in lines if "global_step/sec: " in line]
    timed = rates[2:] or rates
    return len(timed) * log_every / sum(log_every / rate for rate in timed)


def free_ports(count):
    """`count` TCP ports of this host that are free now (bound and released)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("localhost", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def seconds_to_target(name, evaluations, started, ended):
    """Seconds from `started` to the first of `evaluations` ((step, accuracy, Unix time) each) at
    TIME_TO_ACCURACY_TARGET or above; where none got there, the whole run's (to `ended`), with a
    line that says so."""
    reached = [at for _, accuracy, at in evaluations if accuracy >= TIME_TO_ACCURACY_TARGET]
    if not reached:
        print(f"time to accuracy: {name} did not reach {TIME_TO_ACCURACY_TARGET} (evaluations: "
              f"{[(step, round(accuracy, 4)) for step, accuracy, _ in evaluations]}); its figure is the whole run's")
    return (min(reached) if reached else ended) - started


def canned_seconds_to_auc(name, curve):
    """Seconds of steps until the first point of `curve` ([step, seconds, auc] each) at CANNED_AUC_TARGET
    or above; where none got there, the whole run's, with a line that says so."""
    reached = [seconds for _, seconds, auc in curve if auc >= CANNED_AUC_TARGET]
    if not reached:
        print(f"canned time to AUC: {name} did not reach {CANNED_AUC_TARGET} (curve: "
              f"{[(step, round(auc, 4)) for step, _, auc in curve]}); its figure is the whole run's")
    return reached[0] if reached else curve[-1][1]


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


def task_pid(launcher, task):
    """The pid of est-launch `launcher`'s task `task` ("worker-1"): a child whose EST_TASK is it."""
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat, encoding="utf-8") as text:
                fields = text.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != launcher:
                continue
            pid = int(stat.split("/")[2])
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if f"EST_TASK={task}".encode() in environ.read().split(b"\0"):
                    return pid
        except (OSError, IndexError, ValueError):
            continue
    sys.exit(f"run_benchmarks: est-launch {launcher} has no task {task}")


class Runner:
    def __init__(self, build, quick, tf_venv=None):
        self.build = build
        self.tf_venv = tf_venv or os.path.join(build, "tf-venv")
        self.bin = os.path.join(build, "bin")
        self.quick = quick
        # Whether the build has the kernels of kernels/ (EST_WITH_KERNELS), from its config header.
        with open(os.path.join(build, "include", "common", "config.h"), encoding="utf-8") as config:
            self.kernels_built = "#define EST_WITH_KERNELS 1" in config.read()
        self.single_thread = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.peer_env = dict(os.environ, **TUNED_MALLOC)
        self.peer_single_thread = dict(self.single_thread, **TUNED_MALLOC)
        # Each side's own thread pools at their defaults: every core.
        self.all_cores = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}

    def sizes(self, model):
        if self.quick:
            return ["--steps", "3", "--warmup", "1"]
        # About 6 s a CNN run (1.8 ms a step since the AVX-512 kernels, at LibTorch's default of one
        # intra-op thread on this VM): shorter runs vary by several percent from run to run.
        return ["--steps", "3000" if model == "cnn" else "20", "--warmup", "50" if model == "cnn" else "3"]

    def train_bench(self, loop, model, batch=64, env=None, device="cpu", fused=True, extra=()):
        command = [os.path.join(self.bin, "train_bench"), "--loop", loop, "--model", model, "--batch-size", str(batch),
                   "--device", device] + ([] if fused else ["--fused-optimizer-step", "false"]) + list(extra)
        # On a GPU a CNN step takes about 1 ms: 100 steps varied by 30 % from call to call on an H200.
        gpu_steps = "1000" if model == "cnn" else "300"
        sizes = self.sizes(model) if device == "cpu" or self.quick else ["--steps", gpu_steps, "--warmup", "20"]
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

    def on_hosts(self, net, model, loop, batch=64, compression="none", per_host=1, transport="auto",
                 raw_bytes=0, raw_calls=0, bucket_cap_mb=25):
        """Examples/s summed over `per_host` workers on each of `net`'s simulated hosts, ours
        ("ours": train_bench's Estimator with MultiWorkerMirroredStrategy from a TF_CONFIG of the
        hosts' addresses) or PyTorch DDP's ("ddp"), each host's workers bound to a CPU of its own
        as on a machine of its own; `compression` "fp16" sends float16 gradients (ours with error
        feedback, DDP with its fp16_compress_hook); `transport` "tcp" makes ours all-reduce flat
        over Gloo TCP, "auto" lets a host's ranks meet in shared memory (the hierarchical
        all-reduce where hosts hold several ranks). A host's workers are started by one shell
        inside its namespace, so that they share its mount namespace as processes of one machine
        do. Returns {"examples_per_sec", "allreduce": the first worker's all-reduce statistics
        (ours)}; loop "raw_allreduce" times `raw_calls` bare Gloo TCP all-reduces of `raw_bytes`
        between the hosts instead (train_bench --loop raw_allreduce), and "allreduce" is theirs.
        `bucket_cap_mb`: ours, the gradient buckets' cap (DDP's bucket_cap_mb)."""
        cpus = sorted(os.sched_getaffinity(0))
        workers = net.count * per_host
        expected_collective = "gloo" if transport == "tcp" or per_host == 1 else "gloo+hierarchy"
        hosts = []
        for i in range(net.count):
            lines = []
            for k in range(per_host):
                rank = i * per_host + k
                if loop in ("ours", "raw_allreduce"):
                    cluster = {"worker": [f"{net.address(h)}:{23456 + j}" for h in range(net.count) for j in range(per_host)]}
                    tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": rank}})
                    argv = [os.path.join(self.bin, "train_bench"), "--loop", "estimator", "--model", model,
                            "--batch-size", str(batch), "--strategy", "multi_worker", "--compression", compression,
                            "--transport", transport, "--powersgd-rank", str(POWERSGD_RANK),
                            "--bucket-cap-mb", str(bucket_cap_mb)] + self.sizes(model)
                    if loop == "raw_allreduce":
                        argv = [os.path.join(self.bin, "train_bench"), "--loop", "raw_allreduce", "--bytes",
                                str(raw_bytes), "--steps", str(raw_calls), "--warmup", "1", "--transport", "tcp"]
                    env = dict(self.single_thread, TF_CONFIG=tf_config, EST_JOB_ID="hosts-bench",
                               EST_JOB_TOKEN="hosts-bench-token")
                else:
                    argv = [PYTHON, os.path.join(os.path.dirname(__file__), "ddp_peer.py"), "--model", model,
                            "--batch-size", str(batch), "--workers", str(workers), "--rank", str(rank),
                            "--master", f"{net.address(0)}:29500", "--compression", compression] + self.sizes(model)
                    env = dict(self.peer_single_thread, GLOO_SOCKET_IFNAME="eth0")
                output = tempfile.NamedTemporaryFile(mode="w+", prefix="hosts_bench_")
                assignments = [f"{key}={shlex.quote(value)}" for key, value in env.items()
                               if os.environ.get(key) != value]
                lines.append((output, " ".join(["env"] + assignments + ["taskset", "-c", str(cpus[i % len(cpus)])]
                                               + [shlex.quote(a) for a in argv]) + f" > {shlex.quote(output.name)} 2>&1"))
            # Every worker's status: the shell exits non-zero if any of its workers failed.
            script = " ".join(f"{line} & p{k}=$!;" for k, (_, line) in enumerate(lines))
            script += " status=0; " + " ".join(f"wait $p{k} || status=$?;" for k in range(per_host)) + " exit $status"
            hosts.append((subprocess.Popen(net.command(i, ["sh", "-c", script]), stdout=subprocess.DEVNULL,
                                           stderr=subprocess.STDOUT, start_new_session=True),
                          [output for output, _ in lines]))
        # A host that fails ends the run at once: the others would wait for it until their timeout.
        deadline = time.monotonic() + 1800
        while any(process.poll() is None for process, _ in hosts):
            failed = [process for process, _ in hosts if process.returncode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                for process, _ in hosts:
                    if process.poll() is None:
                        os.killpg(process.pid, signal.SIGKILL)  # the shell and its workers
                        process.wait()
                break
            time.sleep(0.2)
        texts = []
        for _, outputs in hosts:
            for output in outputs:
                output.seek(0)
                texts.append(output.read())
                output.close()
        for (process, _), index in zip(hosts, range(net.count)):
            if process.returncode != 0:
                sys.exit(f"run_benchmarks: a {loop} worker on simulated host {index} failed ({process.returncode}):\n"
                         + "\n\n".join("\n".join(text.strip().splitlines()[-15:])
                                         for text in texts[index * per_host:(index + 1) * per_host]))
        results = [json_lines(text)[-1] for text in texts]
        if loop == "ours" and any(r.get("collective") != expected_collective for r in results):
            sys.exit(f"run_benchmarks: expected the {expected_collective} collective on the simulated hosts, got "
                     f"{sorted(set(r.get('collective') for r in results))}")
        return {"examples_per_sec": sum(r.get("examples_per_sec", 0) for r in results),
                "allreduce": results[0].get("allreduce", {})}

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

    def transformer_lm(self):
        """est-train --model transformer_lm trained by 2 workers under est-launch: windows per second
        over its logged rates after the first (the chief's), and the validation loss the evaluator
        task finds in the final checkpoint."""
        steps = 30 if self.quick else LM_STEPS
        model_dir = f"/tmp/lm_{os.getpid()}"
        subprocess.run(["rm", "-rf", model_dir])
        command = [os.path.join(self.bin, "est-launch"), "--workers", "2", "--evaluator", "--",
                   os.path.join(self.bin, "est-train"), "--model", "transformer_lm", "--strategy", "multi_worker",
                   "--model-dir", model_dir, "--max-steps", str(steps), "--batch-size", str(LM_BATCH),
                   "--save-checkpoints-steps", str(steps), "--log-step-count-steps", str(max(5, steps // 10)),
                   # The framework against DDP on the same layers: none of kernels/ (AdamW stepped by
                   # LibTorch, matrix products on LibTorch's BLAS), as the peer.
                   "--kernels", "off"]
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=self.single_thread, timeout=1800)
        subprocess.run(["rm", "-rf", model_dir])
        log = result.stdout  # the tasks' logs, prefixed with their names
        if result.returncode != 0:
            sys.exit(f"run_benchmarks: {' '.join(command)} failed ({result.returncode}):\n{log}")
        def lines(task):
            return "\n".join(line for line in log.splitlines() if line.startswith(f"[{task}]"))
        rates = [float(rate) for rate in re.findall(r"global_step/sec: ([0-9.e+-]+)", lines("worker 0"))][1:]
        losses = re.findall(r"Saving dict for global step \d+: .*loss = ([0-9.e+-]+)", lines("evaluator 0"))
        if not rates or not losses:
            sys.exit(f"run_benchmarks: est-train --model transformer_lm logged no rate or evaluation:\n{log}")
        return {"examples_per_sec": LM_BATCH * sum(rates) / len(rates), "validation_loss": float(losses[-1])}

    def recorder_call(self):
        """flight_recorder_bench's nanoseconds per recorded call, alone and while records are taken."""
        calls = "100000" if self.quick else "5000000"
        return json_lines(run([os.path.join(self.bin, "flight_recorder_bench"), "--calls", calls]))[-1]

    def recorder_calls_per_step(self):
        """2 workers of train_bench's CNN under est-launch: examples/s, and the recorded collective calls per
        step of worker 0 (its recorders log their counts at their end)."""
        sizes = self.sizes("cnn")
        steps = int(sizes[sizes.index("--steps") + 1]) + int(sizes[sizes.index("--warmup") + 1])
        command = [os.path.join(self.bin, "est-launch"), "--workers", "2", "--",
                   os.path.join(self.bin, "train_bench"), "--loop", "estimator", "--model", "cnn",
                   "--batch-size", "64", "--strategy", "multi_worker"] + sizes
        result = subprocess.run(command, capture_output=True, text=True, env=self.single_thread, timeout=1200)
        if result.returncode != 0:
            sys.exit(f"run_benchmarks: {' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
        calls = sum(int(count) for count in re.findall(
            r"\[worker 0\] .*Flight recorder of \S+ rank 0 of 2 at its end: (\d+) calls?", result.stderr))
        if calls == 0:
            sys.exit(f"run_benchmarks: worker 0's flight recorders logged no count at their end:\n{result.stderr}")
        results = json_lines(result.stdout)
        return sum(r["examples_per_sec"] for r in results), calls / steps

    def stop_to_error(self):
        """Seconds from SIGSTOP of worker 1 of 2 (est-train under est-launch) to worker 0's error naming
        rank 1, and the collective timeout it ran with."""
        timeout = 3 if self.quick else STOP_TIMEOUT_SECS
        model_dir = tempfile.mkdtemp(prefix="elastic_stop_")
        launch = subprocess.Popen(
            [os.path.join(self.bin, "est-launch"), "--workers", "2", "--grace-secs", "2", "--",
             os.path.join(self.bin, "est-train"), "--model", "linear", "--strategy", "multi_worker",
             "--model-dir", model_dir, "--max-steps", "100000000", "--save-checkpoints-steps", "50",
             "--log-step-count-steps", "100000", "--timeout-secs", str(timeout)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.single_thread)
        try:
            stopped, log = None, []
            for line in launch.stdout:
                log.append(line)
                if stopped is None and "Saving checkpoints for" in line:
                    worker = task_pid(launch.pid, "worker-1")
                    os.kill(worker, signal.SIGSTOP)
                    stopped = time.monotonic()
                if stopped is not None and line.startswith("[worker 0]") and "did not complete within" in line:
                    seconds = time.monotonic() - stopped
                    break
            else:
                sys.exit("run_benchmarks: no timeout after SIGSTOP of worker 1:\n" + "".join(log))
            if not re.search(r"rank 1\b.*did not arrive", line):
                sys.exit(f"run_benchmarks: worker 0's error does not name rank 1: {line}")
            launch.communicate(timeout=120)
        finally:
            if launch.poll() is None:
                launch.kill()
                launch.wait()
            shutil.rmtree(model_dir, ignore_errors=True)
        return seconds, timeout

    def recovery(self, mode):
        """Seconds from SIGKILL of one training task of 3 (after step RECOVERY_KILL_STEP) to the job's next
        completed step, and the completed steps lost: `mode` "shrink" (ours, est-launch --min-workers 2: the
        others go on), "replace" (ours, --min-workers 2 --max-restarts 1: the others go on, and the killed task,
        started again alone, joins them later), "replace_wait" (--min-workers 3: the others wait for it), "restart" (ours, est-launch --max-restarts 1: every task restarts from the checkpoint),
        "silent" (ours, --min-workers 2, the task stopped by SIGSTOP rather than killed: its connections stay
        open, and the chief cuts it off after the beat lease, 5 s) or "torchrun" (the DDP peer under torchrun's
        elastic agent, which restarts every rank from its checkpoint).
        The Fashion-MNIST CNN on stock layers, 64 examples per task and step, a checkpoint every
        RECOVERY_SAVE_STEPS steps, one thread per task. Returns the seconds, the steps lost, and for "replace"
        the seconds the chief's steps stopped while the replacement joined (else None)."""
        model_dir = tempfile.mkdtemp(prefix=f"elastic_{mode}_")
        # "replace" trains on until the replacement has joined.
        max_steps = str(RECOVERY_KILL_STEP + (2000 if mode == "replace" else 20))
        if mode == "torchrun":
            # --redirects/--tee 1: Debian's torch 1.13 on Python 3.11 fails on their default, 0.
            command = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "3",
                       "--max_restarts", "1", "--monitor_interval", "0.1", "--redirects", "1", "--tee", "1",
                       "--log_dir", os.path.join(model_dir, "logs"),
                       os.path.join(os.path.dirname(__file__), "elastic_ddp_peer.py"), "--checkpoint-dir", model_dir,
                       "--batch-size", "64", "--save-steps", str(RECOVERY_SAVE_STEPS), "--max-steps", max_steps]
            step_line = re.compile(r"elastic_ddp_peer: step (\d+) restart (\d+) at ([0-9.]+)")
            recovered = lambda line, match: match is not None and match.group(2) != "0"  # noqa: E731
        else:
            flags = {"shrink": ["--min-workers", "2"], "silent": ["--min-workers", "2"],
                     "replace": ["--min-workers", "2", "--max-restarts", "1", "--restart-backoff-secs", "0"],
                     "replace_wait": ["--min-workers", "3", "--max-restarts", "1", "--restart-backoff-secs", "0"],
                     "restart": ["--max-restarts", "1", "--restart-backoff-secs", "0"]}[mode]
            command = [os.path.join(self.bin, "est-launch"), "--chief", "--workers", "2", "--grace-secs", "5"] + \
                flags + ["--", os.path.join(self.bin, "est-train"), "--model", "fashion_mnist_cnn", "--kernels",
                         "off", "--strategy", "multi_worker", "--model-dir", model_dir, "--batch-size", "192",
                         "--logical-input-shards", "6", "--max-steps", max_steps, "--save-checkpoints-steps",
                         str(RECOVERY_SAVE_STEPS), "--log-step-count-steps", "1", "--timeout-secs", "60"]
            step_line = re.compile(r"^\[chief 0\] .*\bstep = (\d+)$")
            marker = "restarting every task in" if mode == "restart" else "Training goes on from global step"
            recovered = lambda line, match: marker in line  # noqa: E731
        launch = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=self.single_thread, start_new_session=True)
        log, pids = [], {}
        killed_at, last_before, resumed, stopped = None, 0, False, None
        recovery, last_step_at, newcomer_seen_after, regrown = None, None, None, False
        try:
            for line in launch.stdout:
                log.append(line)
                line = line.rstrip("\n")
                if recovery is not None:  # "replace": the pause while the replacement joins
                    if newcomer_seen_after is None and "a newcomer waits to join" in line:
                        newcomer_seen_after = last_step_at
                    regrown = regrown or (newcomer_seen_after is not None and "with 3 worker(s)" in line)
                    if regrown and step_line.search(line):
                        return recovery + (time.time() - newcomer_seen_after,)
                    if step_line.search(line):
                        last_step_at = time.time()
                    continue
                started = re.search(r"elastic_ddp_peer: rank (\d+) pid (\d+) restart 0", line)
                if started:
                    pids[int(started.group(1))] = int(started.group(2))
                match = step_line.search(line)
                if killed_at is not None and not resumed and recovered(line, match):
                    resumed = True
                if match is None:
                    continue
                step = int(match.group(1))
                if resumed:  # the peer's lines say when they were written
                    now = float(match.group(3)) if mode == "torchrun" else time.time()
                    if mode != "replace":
                        return now - killed_at, last_before - (step - 1), None
                    recovery, last_step_at = (now - killed_at, last_before - (step - 1)), now
                    continue
                last_before = max(last_before, step)
                if killed_at is None and step >= RECOVERY_KILL_STEP:
                    victim = pids[2] if mode == "torchrun" else task_pid(launch.pid, "worker-1")
                    if mode == "silent":
                        stopped = victim
                    os.kill(victim, signal.SIGSTOP if mode == "silent" else signal.SIGKILL)
                    killed_at = time.time()
            sys.exit(f"run_benchmarks: {mode}: no step completed after the kill, or no replacement joined:\n" +
                     "".join(log[-60:]))
        finally:
            if stopped is not None:  # it would answer the launcher's SIGTERM only once continued
                os.kill(stopped, signal.SIGKILL)
            if launch.poll() is None:  # the launcher stops its tasks on SIGTERM
                launch.terminate()
                try:
                    launch.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(launch.pid, signal.SIGKILL)
                    launch.communicate()
            shutil.rmtree(model_dir, ignore_errors=True)

    def lm_ddp(self):
        steps = 30 if self.quick else LM_STEPS
        command = [PYTHON, os.path.join(os.path.dirname(__file__), "lm_ddp_peer.py"), "--steps", str(steps),
                   "--batch-size", str(LM_BATCH), "--workers", "2"]
        return json_lines(run(command, self.peer_single_thread))[-1]

    def raw_allreduce(self, num_bytes, calls, transport):
        command = [os.path.join(self.bin, "est-launch"), "--workers", "2", "--",
                   os.path.join(self.bin, "train_bench"), "--loop", "raw_allreduce", "--bytes", str(num_bytes),
                   "--steps", str(calls), "--warmup", "1", "--transport", transport]
        return json_lines(run(command, self.peer_single_thread))[0]["allreduce"]

    def tfrecord_shards(self):
        """The directories of the Fashion-MNIST TFRecord shards, plain and GZIP, made once by
        est-idx-to-tfrecord (into a temporary directory renamed into place when complete)."""
        root = os.path.join(self.build, "bench-data", "fashion-tfrecord")
        dirs = {}
        for name, compression in (("plain", "none"), ("gzip", "gzip")):
            path = os.path.join(root, name)
            if not glob.glob(os.path.join(path, "train-*")):
                partial = f"{path}.tmp-{os.getpid()}"
                shutil.rmtree(partial, ignore_errors=True)
                run([os.path.join(self.bin, "est-idx-to-tfrecord"), "--output-dir", partial, "--compression", compression])
                shutil.rmtree(path, ignore_errors=True)
                os.rename(partial, path)
            dirs[name] = path
        return dirs

    def tensorflow_python(self):
        """The Python of --tf-venv (BUILD_DIR/tf-venv), where TensorFlow is (installed once), or None and why not."""
        venv = self.tf_venv
        if self.quick and not os.path.exists(os.path.join(venv, "bin", "python")):
            return None, f"no TensorFlow in {venv} (--quick installs nothing; make bench installs it)"
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "cmake", "install_venv.sh")
        try:
            result = subprocess.run(["bash", script, venv, "tensorflow", "tensorflow-cpu==2.15.*"],
                                    capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            return None, "installing TensorFlow took over 30 minutes"
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"installing TensorFlow into {venv} failed: {last} (see /tmp/est-pip-tensorflow.log)"
        return os.path.join(venv, "bin", "python"), None

    def torchserve_venv(self):
        """BUILD_DIR/torchserve-venv, where TorchServe is (installed once, beside Debian's
        python3-torch, which runs its worker), or None and why not. TorchServe's frontend is Java."""
        venv = os.path.abspath(os.path.join(self.build, "torchserve-venv"))
        if shutil.which("java") is None:
            return None, "no java (TorchServe's frontend runs on Java 11 or newer: apt install openjdk-17-jre-headless)"
        if self.quick and not os.path.exists(os.path.join(venv, "bin", "torchserve")):
            return None, f"no TorchServe in {venv} (--quick installs nothing; make bench installs it)"
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "cmake", "install_venv.sh")
        result = subprocess.run(["bash", script, venv, "ts", "torchserve==0.12.*", "torch-model-archiver==0.12.*"],
                                capture_output=True, text=True, timeout=1800,
                                env=dict(os.environ, EST_VENV_SYSTEM_SITE_PACKAGES="1"))
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"installing TorchServe into {venv} failed: {last} (see /tmp/est-pip-ts.log)"
        return venv, None

    def shard_glob(self, directory):
        """The training shards of `directory` that the input figures read (--quick: the first)."""
        return os.path.join(directory, "train-00000-of-*" if self.quick else "train-*")

    def tfrecord_bench(self, dirs, threads):
        """tfrecord_bench's JSON lines, by (figure, compression, threads, page cache); "memory" for its
        memory line."""
        command = [os.path.join(self.bin, "tfrecord_bench"), "--plain-files", self.shard_glob(dirs["plain"]),
                   "--gzip-files", self.shard_glob(dirs["gzip"]), "--threads", str(threads),
                   "--repetitions", "1", "--temp-dir", self.build] + (["--quick"] if self.quick else [])
        lines = {}
        for line in json_lines(run(command)):
            key = "memory" if line["figure"] == "memory" else (line["figure"], line["compression"], line["threads"],
                                                                line.get("page_cache", "warm"))
            lines[key] = line
        return lines

    def tfdata(self, python, directory, compression, threads):
        """The tf.data peer's JSON lines by figure (parse, parse_single)."""
        command = [python, os.path.join(os.path.dirname(__file__), "tfdata_peer.py"),
                   "--files", self.shard_glob(directory), "--compression", compression,
                   "--threads", str(threads), "--min-seconds", "0.01" if self.quick else "1"]
        return {line["figure"]: line for line in json_lines(run(command))}

    def est_train_steps_per_sec(self, data_format, dirs, env=None, kernels=None):
        """est-train's steps/s (Fashion-MNIST CNN, batch 64, --kernels as given, else est-train's
        default) after its first 200 steps, from its global_step/sec lines, fed from the IDX
        files or the plain TFRecord shards."""
        steps = 30 if self.quick else 1200
        log_every = 10 if self.quick else 100
        model_dir = f"/tmp/input_training_{os.getpid()}_{data_format}"
        shutil.rmtree(model_dir, ignore_errors=True)
        command = [os.path.join(self.bin, "est-train"), "--model", "fashion_mnist_cnn", "--model-dir", model_dir,
                   "--max-steps", str(steps), "--save-checkpoints-steps", str(steps), "--log-step-count-steps",
                   str(log_every), "--eval-steps", "1", "--batch-size", "64"] + (["--kernels", kernels] if kernels else [])
        if data_format == "tfrecord":
            command += ["--data-format", "tfrecord", "--data-files", os.path.join(dirs["plain"], "train-*"),
                        "--eval-data-files", os.path.join(dirs["plain"], "t10k-*")]
        try:
            log = run_log(command, env)
        finally:
            shutil.rmtree(model_dir, ignore_errors=True)
        return logged_steps_per_sec(log.splitlines(), log_every)


    def ctr_data(self, python):
        """BUILD_DIR/bench-data/ctr: ctr_data.py's click-through data (100k train, 20k eval rows, seed 73;
        --quick: ctr-quick, 3000 and 1000), made once (into a temporary directory renamed into place)."""
        quick = self.quick
        path = os.path.join(self.build, "bench-data", "ctr-quick" if quick else "ctr")
        if not os.path.exists(os.path.join(path, "eval.tfrecord")):
            partial = f"{path}.tmp-{os.getpid()}"
            shutil.rmtree(partial, ignore_errors=True)
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "estimator", "canned",
                                  "ctr_data.py")
            rows = ["--train-rows", "3000", "--eval-rows", "1000"] if quick else []
            run([python, script, partial, "--seed", "73"] + rows)
            shutil.rmtree(path, ignore_errors=True)
            os.rename(partial, path)
        return path

    def canned_sizes(self, estimator):
        """Steps and evaluation interval of a canned run: wide & deep's checkpoints are evaluated
        every CANNED_EVAL_EVERY steps for the time to an AUC, the others' at the end only."""
        if self.quick:
            return ["--steps", "20", "--eval-every", "10" if estimator == "wide_deep" else "0"]
        return ["--steps", str(CANNED_STEPS), "--eval-every",
                str(CANNED_EVAL_EVERY) if estimator == "wide_deep" else "0"]

    def canned_ours(self, data_dir, estimator, data_input="tfrecord"):
        """canned_bench's JSON line: our canned `estimator` fed from the TFRecord file or from
        tensors parsed before training, one intra-op thread."""
        command = [os.path.join(self.bin, "canned_bench"), "--data-dir", data_dir, "--estimator", estimator,
                   "--input", data_input, "--linear-learning-rate", CANNED_RATES[0], "--dnn-learning-rate",
                   CANNED_RATES[1], "--threads", "1"] + self.canned_sizes(estimator)
        return [line for line in json_lines(run(command, self.single_thread)) if line.get("bench") == "canned"][-1]

    def canned_peer(self, python, data_dir, estimator):
        """canned_tf_peer.py's JSON line: TensorFlow 2.15's canned `estimator`, the same way, one thread,
        glibc's malloc tuned as ours tunes its own (TUNED_MALLOC)."""
        command = [python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "canned_tf_peer.py"),
                   "--data-dir", data_dir, "--estimator", estimator, "--linear-learning-rate", CANNED_RATES[0],
                   "--dnn-learning-rate", CANNED_RATES[1], "--threads", "1"] + self.canned_sizes(estimator)
        return json_lines(run(command, self.peer_single_thread))[-1]

    def canned_cluster(self, data_dir, tf_python=None):
        """Examples/s of wide & deep trained asynchronously by 2 workers (the chief and worker 0) and 1 ps
        task on this host: ours (canned_bench, ParameterServerStrategy) or, given `tf_python`,
        TensorFlow's (canned_tf_peer.py, the estimator's between-graph replication), each task a
        process of one TF_CONFIG cluster with one intra-op thread. The training tasks meet before their
        first step; the figure is the examples of all their steps over the time from the first step's
        start to the last one's end (CLOCK_MONOTONIC, shared by the processes)."""
        ports = free_ports(3)
        cluster = {"chief": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"],
                   "ps": [f"localhost:{ports[2]}"]}
        work = tempfile.mkdtemp(prefix="canned_cluster_")
        steps = self.canned_sizes("linear")[:2]  # --steps N, no evaluation
        flags = ["--data-dir", data_dir, "--estimator", "wide_deep", "--linear-learning-rate", CANNED_RATES[0],
                 "--dnn-learning-rate", CANNED_RATES[1], "--threads", "1", "--model-dir", os.path.join(work, "model"),
                 "--barrier-dir", os.path.join(work, "barrier")] + steps
        if tf_python:
            command = [tf_python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "canned_tf_peer.py")]
            env = self.peer_single_thread
        else:
            command = [os.path.join(self.bin, "canned_bench")]
            env = self.single_thread
        processes, logs = {}, {}
        try:
            for job in ("ps", "chief", "worker"):
                logs[job] = open(os.path.join(work, f"{job}.log"), "w+")
                task_env = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": 0}}))
                processes[job] = subprocess.Popen(command + flags, env=task_env, stdout=logs[job],
                                                  stderr=subprocess.STDOUT, text=True)
            tasks = []
            # TensorFlow's ps task serves until it is killed; ours returns once the chief is done.
            for job in ("chief", "worker") if tf_python else ("chief", "worker", "ps"):
                code = processes[job].wait(timeout=1200)
                logs[job].seek(0)
                output = logs[job].read()
                if code != 0:
                    sys.exit(f"run_benchmarks: {' '.join(command)} as the cluster's {job} failed ({code}):\n{output}")
                tasks += [line for line in json_lines(output) if "first" in line]
        finally:
            for process in processes.values():
                if process.poll() is None:
                    process.kill()
                    process.wait()
            for log in logs.values():
                log.close()
            shutil.rmtree(work, ignore_errors=True)
        if len(tasks) != 2:
            sys.exit(f"run_benchmarks: the cluster's training tasks printed {len(tasks)} figures, not 2")
        seconds = max(task["last"] for task in tasks) - min(task["first"] for task in tasks)
        return sum(task["steps"] for task in tasks) * tasks[0]["batch_size"] / seconds

    def serve_bench(self, model):
        """serve_bench's JSON lines for `model` ("cnn" or "mlp"), one a figure: the Predictor vs
        hand-written LibTorch, est-serve under SERVE_CLIENTS with and without batching, hot reload
        under load. The MLP answers about 40 single requests a second: it gets fewer."""
        if self.quick:
            sizes = ["--requests", "2" if model == "mlp" else "20", "--warmup-requests", "1", "--predict-calls",
                     "4" if model == "mlp" else "32", "--reloads", "1", "--reload-pause-ms", "20"]
        elif model == "mlp":
            sizes = ["--requests", "20", "--warmup-requests", "2", "--predict-calls", "200", "--reloads", "3",
                     "--reload-pause-ms", "500"]
        else:
            sizes = ["--requests", "500", "--warmup-requests", "20", "--predict-calls", "2000", "--reloads", "5",
                     "--reload-pause-ms", "200"]
        command = [os.path.join(self.bin, "serve_bench"), "--model", model, "--threads", "1", "--repetitions", "1",
                   "--clients", ",".join(str(c) for c in SERVE_CLIENTS), "--reload-clients", str(SERVE_RELOAD_CLIENTS),
                   "--max-batch-size", str(SERVE_BATCH), "--max-queue-delay-us", str(SERVE_DELAY_US)] + sizes
        venv, why_not = self.torchserve_venv()
        if venv:
            command += ["--torchserve-venv", venv, "--torchserve-handler",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchserve_handler.py")]
        else:
            print(f"serve: no TorchServe peer: {why_not}")
        output = run(command, self.single_thread)
        return [line for line in json_lines(output) if line.get("bench") == "serve"]

    def tf_estimator(self, python, trace_steps=0, threads=1):
        """tf_estimator_peer.py's steps/s: tf.estimator training est-train's CNN on `threads` threads
        (0: TensorFlow's defaults, all cores); with trace_steps, also each op type's microseconds a
        step over that many traced steps after."""
        steps, warmup = (30, 10) if self.quick else (1200, 200)
        model_dir = f"/tmp/tf_estimator_peer_{os.getpid()}"
        shutil.rmtree(model_dir, ignore_errors=True)
        command = [python, os.path.join(os.path.dirname(__file__), "tf_estimator_peer.py"), "--model-dir", model_dir,
                   "--steps", str(steps), "--warmup", str(warmup), "--threads", str(threads),
                   "--trace-steps", str(trace_steps)]
        try:
            lines = json_lines(run(command, self.single_thread if threads == 1 else self.all_cores))
            return lines[0]["steps_per_sec"], (lines[1]["op_micros_per_step"] if trace_steps else None)
        finally:
            shutil.rmtree(model_dir, ignore_errors=True)

    def tf_estimator_workers(self, python, workers=2):
        """tf_estimator_peer.py --multi-worker: `workers` tf.estimator workers under
        MultiWorkerMirroredStrategy on this host, each bound to a CPU as est-launch binds ours, one
        thread each: examples/s (64 a worker a step)."""
        steps, warmup = (30, 10) if self.quick else (1200, 200)
        ports = free_ports(workers)
        cluster = {"worker": [f"localhost:{port}" for port in ports]}
        cpus = sorted(os.sched_getaffinity(0))
        model_dir = tempfile.mkdtemp(prefix="tf_estimator_workers_")
        processes = []
        try:
            for index in range(workers):
                env = dict(self.single_thread,
                           TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}))
                bind = ["taskset", "-c", str(cpus[index % len(cpus)])] if len(cpus) >= workers else []
                processes.append(subprocess.Popen(
                    bind + [python, os.path.join(os.path.dirname(__file__), "tf_estimator_peer.py"), "--model-dir",
                            model_dir, "--steps", str(steps), "--warmup", str(warmup), "--threads", "1",
                            "--multi-worker"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
            outputs = [process.communicate(timeout=1200) for process in processes]
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
            shutil.rmtree(model_dir, ignore_errors=True)
        if any(process.returncode != 0 for process in processes):
            sys.exit("run_benchmarks: tf_estimator_peer.py --multi-worker failed:\n" +
                     "\n".join(err[-2000:] for _, err in outputs))
        rates = [json_lines(out)[-1]["steps_per_sec"] for out, _ in outputs]
        return statistics.mean(rates) * 64 * workers

    def est_train_workers(self, kernels, workers=2):
        """est-train's CNN trained by `workers` workers under est-launch (each bound to a CPU, one
        thread, batches of 64 each): examples/s after the first 200 steps, from worker 0's
        global_step/sec lines."""
        steps, log_every = (30, 10) if self.quick else (1200, 100)
        model_dir = tempfile.mkdtemp(prefix="est_train_workers_")
        command = [os.path.join(self.bin, "est-launch"), "--workers", str(workers), "--",
                   os.path.join(self.bin, "est-train"), "--model", "fashion_mnist_cnn", "--model-dir", model_dir,
                   "--strategy", "multi_worker", "--max-steps", str(steps), "--save-checkpoints-steps", str(steps),
                   "--log-step-count-steps", str(log_every), "--eval-steps", "1", "--batch-size", "64",
                   "--kernels", kernels]
        try:
            log = run_log(command, self.single_thread)
        finally:
            shutil.rmtree(model_dir, ignore_errors=True)
        worker_0 = [line for line in log.splitlines() if line.startswith("[worker 0]")]
        return logged_steps_per_sec(worker_0, log_every) * 64 * workers

    def accuracy_schedule(self):
        """The estimator group's time to accuracy (make demo's schedule): steps, and a checkpoint
        evaluated on the whole test set every so many."""
        return (60, 20) if self.quick else (3000, 1000)

    def est_train_time_to_accuracy(self, kernels):
        """Seconds from est-train's launch (`kernels`, one thread) to the end of its first evaluation
        at TIME_TO_ACCURACY_TARGET or above, on accuracy_schedule."""
        steps, every = self.accuracy_schedule()
        model_dir = tempfile.mkdtemp(prefix="time_to_accuracy_")
        command = [os.path.join(self.bin, "est-train"), "--model", "fashion_mnist_cnn", "--model-dir", model_dir,
                   "--max-steps", str(steps), "--save-checkpoints-steps", str(every), "--batch-size", "64",
                   "--kernels", kernels]
        try:
            started = time.time()
            log = run_log(command, self.single_thread)
            ended = time.time()
        finally:
            shutil.rmtree(model_dir, ignore_errors=True)
        evaluations = []  # (step, accuracy, Unix time) of each evaluation, from its log line
        for line in log.splitlines():
            match = re.match(r"\[(\S+ \S+)\.(\d+)\] \[info\] Saving dict for global step (\d+): accuracy = ([\d.]+)", line)
            if match:
                at = time.mktime(time.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")) + int(match.group(2)) / 1000
                evaluations.append((int(match.group(3)), float(match.group(4)), at))
        return seconds_to_target(f"est-train --kernels {kernels}", evaluations, started, ended)

    def tf_time_to_accuracy(self, python):
        """The same for tf.estimator (tf_estimator_peer.py --evaluate-every)."""
        steps, every = self.accuracy_schedule()
        model_dir = tempfile.mkdtemp(prefix="tf_time_to_accuracy_")
        command = [python, os.path.join(os.path.dirname(__file__), "tf_estimator_peer.py"), "--model-dir", model_dir,
                   "--steps", str(steps), "--warmup", str(every // 2), "--threads", "1", "--evaluate-every", str(every)]
        try:
            started = time.time()
            evaluations = json_lines(run(command, self.single_thread))[-1]["evaluations"]
            ended = time.time()
        finally:
            shutil.rmtree(model_dir, ignore_errors=True)
        return seconds_to_target("tf.estimator", evaluations, started, ended)

    def estimator_op_times(self, kernels):
        """train_bench's Estimator loop on the CNN with --kernels `kernels` at one thread: each
        LibTorch op's own microseconds a step."""
        result = self.train_bench("estimator", "cnn", env=self.single_thread, extra=["--kernels", kernels, "--op-times"])
        return result["op_micros_per_step"]


# The per-op table of the estimator group: each row's LibTorch ops (ours) and TensorFlow op
# types (the peer's; oneDNN's "_Mkl" names included), by what they compute in the CNN's step.
OP_ROWS = (
    ("dense layers: matrix products (TF: with bias and relu)", ("aten::mm", "aten::addmm"),
     ("MatMul", "_MklMatMul", "_MklNativeMatMul", "_MklNativeFusedMatMul", "_FusedMatMul")),
    ("convolution, relu and max-pool forward (--kernels ops: one fused op; TF: conv with bias and relu)",
     ("est::conv_relu_max_pool2d", "aten::mkldnn_convolution", "aten::convolution", "aten::_convolution",
      "aten::max_pool2d_with_indices", "aten::max_pool2d", "aten::clamp_min", "aten::relu"),
     ("Conv2D", "_MklNativeConv2D", "_MklNativeFusedConv2D", "_FusedConv2D", "MaxPool", "_MklNativeMaxPool", "Relu")),
    ("their backward: filter and bias gradients, max-pool and relu backward",
     ("torch::autograd::CppNode<est::kernels::(anonymous namespace)::ConvReluMaxPoolFunction>",
      "aten::convolution_backward", "aten::max_pool2d_with_indices_backward", "est::kernels::MaxPool2dBackward",
      "aten::threshold_backward"),
     ("Conv2DBackpropFilter", "_MklNativeConv2DBackpropFilter", "BiasAddGrad", "MaxPoolGrad", "_MklNativeMaxPoolGrad",
      "ReluGrad")),
    ("zero fills", ("aten::fill_", "aten::zero_", "aten::zeros"), ("Fill",)),
    ("Adam (--kernels ops: fused, not a LibTorch op)",
     ("aten::add_", "aten::addcdiv_", "aten::addcmul_", "aten::mul_", "aten::sqrt", "aten::div", "aten::mul"),
     ("ResourceApplyAdam",)),
)


def print_op_table(kernels, ours, peer):
    """The estimator group's per-op table: ours (--kernels `kernels`) and the peer's microseconds a
    step, row by row."""
    print("estimator per-op, 1 thread, us a step (ours: est-train's CNN in train_bench's Estimator loop, "
          f"--kernels {kernels}, each op's own time; TF: its step stats):")
    print(f"  {'op':<58} {'ours':>8} {'TF':>8}")
    ours_left, peer_left = dict(ours), dict(peer)
    for label, ours_ops, peer_ops in OP_ROWS:
        ours_us = sum(ours_left.pop(op, 0.0) for op in ours_ops)
        peer_us = sum(peer_left.pop(op, 0.0) for op in peer_ops)
        print(f"  {label:<58} {ours_us:>8.0f} {peer_us:>8.0f}")
    print(f"  {'everything else':<58} {sum(ours_left.values()):>8.0f} {sum(peer_left.values()):>8.0f}")
    print(f"  {'total':<58} {sum(ours.values()):>8.0f} {sum(peer.values()):>8.0f}")


def cpu_description():
    """The CPU's model name and the vector ISA the kernels and oneDNN may use."""
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    isa = [name for name, flag in (("AVX-512", "avx512f"), ("AVX-512 BF16", "avx512_bf16"), ("AMX", "amx_tile"),
                                   ("AVX2", "avx2")) if flag in flags]
    return f"{model} ({', '.join(isa) or 'no AVX2'})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--tf-venv", help="the virtual environment with TensorFlow (default: BUILD_DIR/tf-venv)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repetition, the MLP alone across workers and hosts "
                        "(CI keeps the benchmarks working)")
    parser.add_argument("--only", default=",".join(GROUPS),
                        help=f"comma-separated groups to run, of {', '.join(GROUPS)} (default: all)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if not only <= set(GROUPS):
        parser.error(f"--only: unknown group(s) {', '.join(sorted(only - set(GROUPS)))}; expected some of {', '.join(GROUPS)}")
    repetitions = 1 if args.quick else args.repetitions
    runner = Runner(args.build, args.quick, args.tf_venv)

    samples = {}
    gpu_name, no_gpu = runner.gpu() if "gpu" in only else (None, None)
    input_threads = 2
    shard_dirs = runner.tfrecord_shards() if "input" in only else {}
    tf_python, no_tensorflow = runner.tensorflow_python() if only & {"input", "estimator", "canned"} else (None, None)
    ctr_dir = runner.ctr_data(tf_python) if "canned" in only and tf_python else None
    canned_auc = []  # (ours, TensorFlow's) wide & deep eval AUC, per repetition

    no_hosts = None
    if "hosts" in only:
        try:
            simulated_hosts.check_available()
        except simulated_hosts.Unavailable as why:
            no_hosts = str(why)

    # The models of the figures across workers and hosts. --quick runs the MLP alone: both run
    # the same programs and collectives, and the MLP's buckets give the all-reduce figures.
    distributed_models = ("mlp",) if args.quick else ("cnn", "mlp")
    trace = {}  # MLP bucket bytes -> (waited, all-reduce inside training, alone) in ms, per repetition
    serve_latency = {}  # serve figure -> (p50, p99) in ms, per repetition
    op_tables = []  # the estimator group's (--kernels, ours, peer) per-op microseconds, first repetition

    def record(figure, ours, peer, unit):
        """A repetition's figure; a peer of None has no peer (only ours is reported)."""
        samples.setdefault(figure, {"ours": [], "peer": [], "unit": unit})
        samples[figure]["ours"].append(ours)
        if peer is not None:
            samples[figure]["peer"].append(peer)

    for _ in range(repetitions):
        if "overhead" in only:
            # The loop's own cost: both step LibTorch's Adam (the Estimator's fused step left off).
            estimator = runner.train_bench("estimator", "cnn", fused=False)
            handwritten = runner.train_bench("handwritten", "cnn", env=runner.peer_env)
            untuned = runner.train_bench("handwritten", "cnn")
            same_allocator = runner.train_bench("handwritten", "cnn", env=runner.peer_env,
                                                extra=["--cpu-allocator", "caching"])
            record("overhead", estimator["examples_per_sec"], handwritten["examples_per_sec"], "examples/s")
            if runner.kernels_built:
                on_kernels = ["--kernels", "on"]
                record("overhead_kernels",
                       runner.train_bench("estimator", "cnn", fused=False, extra=on_kernels)["examples_per_sec"],
                       runner.train_bench("handwritten", "cnn", env=runner.peer_env, extra=on_kernels)["examples_per_sec"],
                       "examples/s")
                ops = ["--kernels", "ops"]
                record("overhead_ops", runner.train_bench("estimator", "cnn", extra=ops)["examples_per_sec"],
                       runner.train_bench("handwritten", "cnn", env=runner.peer_env, extra=ops)["examples_per_sec"],
                       "examples/s")
            record("overhead_same_allocator", estimator["examples_per_sec"], same_allocator["examples_per_sec"],
                   "examples/s")
            record("vs_glibc_malloc", estimator["examples_per_sec"], untuned["examples_per_sec"], "examples/s")
            record("memory", estimator["peak_rss_mb"], handwritten["peak_rss_mb"], "MB peak RSS")
            record("fused_adam_cnn", runner.train_bench("estimator", "cnn")["examples_per_sec"],
                   estimator["examples_per_sec"], "examples/s")
            record("fused_adam_mlp", runner.train_bench("estimator", "mlp")["examples_per_sec"],
                   runner.train_bench("estimator", "mlp", fused=False)["examples_per_sec"], "examples/s")
        if "estimator" in only and tf_python:
            trace_steps = 0 if op_tables else (5 if args.quick else 50)
            peer, peer_ops = runner.tf_estimator(tf_python, trace_steps)
            if peer_ops is not None:
                kernels = "ops" if runner.kernels_built else "off"
                op_tables.append((kernels, runner.estimator_op_times(kernels), peer_ops))
            if runner.kernels_built:
                record("estimator_vs_tf", runner.est_train_steps_per_sec("idx", {}, runner.single_thread, kernels="ops"),
                       peer, "steps/s")
            record("estimator_vs_tf_stock",
                   runner.est_train_steps_per_sec("idx", {}, runner.single_thread, kernels="off"), peer, "steps/s")
            if runner.kernels_built:
                record("estimator_vs_tf_kernels",
                       runner.est_train_steps_per_sec("idx", {}, runner.single_thread, kernels="model"), peer, "steps/s")
            all_cores_peer, _ = runner.tf_estimator(tf_python, threads=0)
            general = "ops" if runner.kernels_built else "off"
            record("estimator_vs_tf_all_cores", runner.est_train_steps_per_sec("idx", {}, runner.all_cores, kernels=general),
                   all_cores_peer, "steps/s")
            workers_peer = runner.tf_estimator_workers(tf_python)
            record("estimator_vs_tf_2_workers", runner.est_train_workers(general), workers_peer, "examples/s")
            accuracy_peer = runner.tf_time_to_accuracy(tf_python)
            record("estimator_vs_tf_time_to_088", runner.est_train_time_to_accuracy(general), accuracy_peer,
                   "s to 0.88 test accuracy, lower is better")
            if runner.kernels_built:
                record("estimator_vs_tf_2_workers_stock", runner.est_train_workers("off"), workers_peer, "examples/s")
                record("estimator_vs_tf_time_to_088_stock", runner.est_train_time_to_accuracy("off"), accuracy_peer,
                       "s to 0.88 test accuracy, lower is better")
        if "estimator" in only and runner.kernels_built:
            # The second model: what --kernels ops does to a network it was not measured on.
            record("resnet_ops_vs_off",
                   runner.train_bench("estimator", "resnet", batch=16, env=runner.single_thread,
                                      extra=["--kernels", "ops"])["examples_per_sec"],
                   runner.train_bench("estimator", "resnet", batch=16, env=runner.single_thread, fused=False,
                                      extra=["--kernels", "off"])["examples_per_sec"], "examples/s")
        for model in distributed_models if "scaling" in only else ():
            ours = runner.ours_workers(model, 2)
            peer = runner.ddp(model, 2)
            record(f"scaling_{model}", ours["examples_per_sec"], peer["examples_per_sec"], "examples/s")
            pinned = runner.ddp(model, 2, pin=True)
            record(f"scaling_{model}_pinned_ddp", ours["examples_per_sec"], pinned["examples_per_sec"], "examples/s")
            if model == "mlp" and ours["allreduce"].get("calls"):
                # Each bucket's all-reduce inside training against the same size alone: the
                # same bytes, bucket for bucket.
                stats = ours["allreduce"]
                alone = {"tcp": 0.0, "auto": 0.0}
                for bucket in stats["buckets"]:
                    calls = int(bucket["calls"])
                    for transport in alone:
                        raw = runner.raw_allreduce(bucket["bytes"], max(3, calls), transport)
                        alone[transport] += raw["seconds"] / raw["calls"] * calls
                        if transport == "auto":
                            trace.setdefault(bucket["bytes"], []).append(
                                (bucket["wait_ms"], bucket["allreduce_ms"], raw["seconds"] / raw["calls"] * 1e3))
                workers = 2
                bus_bytes = stats["bytes"] * 2 * (workers - 1) / workers / 1e9
                record("allreduce", stats["bus_gbytes_per_sec"], bus_bytes / alone["tcp"], "GB/s bus")
                record("allreduce_own", stats["bus_gbytes_per_sec"], bus_bytes / alone["auto"], "GB/s bus")
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

        if "serve" in only:
            for line in runner.serve_bench("cnn") + runner.serve_bench("mlp"):
                record(line["figure"], line["ours"], line["reference"], line["unit"])
                if "p99_ms" in line:
                    serve_latency.setdefault(line["figure"], []).append((line["p50_ms"], line["p99_ms"]))

        if "elastic" in only:
            call = runner.recorder_call()
            record("elastic_recorder_call", call["ns_per_call"], call["ns_per_call_while_recorded"], "ns")
            examples_per_sec, calls_per_step = runner.recorder_calls_per_step()
            step_ns = 64 / (examples_per_sec / 2) * 1e9  # each worker's batch of 64
            record("elastic_recorder_share", 100 * calls_per_step * call["ns_per_call"] / step_ns, None,
                   f"% of a step ({calls_per_step:.2g} calls a step)")
            seconds, timeout = runner.stop_to_error()
            record("elastic_stop_to_error", seconds, timeout, "s")
            peer_seconds, peer_lost, _ = runner.recovery("torchrun")
            for mode in ("shrink", "replace", "replace_wait", "restart"):
                seconds, lost, pause = runner.recovery(mode)
                record(f"elastic_recovery_{mode}", seconds, peer_seconds, "s, SIGKILL to the next step")
                record(f"elastic_steps_lost_{mode}", lost, peer_lost, "completed steps lost")
                if pause is not None:
                    record("elastic_regrow_pause", pause, None, "s the steps stop while the replacement joins")
            seconds, lost, _ = runner.recovery("silent")
            record("elastic_recovery_silent", seconds, 60, "s, SIGSTOP to the next step (vs the collective timeout)")
            record("elastic_steps_lost_silent", lost, peer_lost, "completed steps lost")

        if "lm" in only:
            ours, peer = runner.transformer_lm(), runner.lm_ddp()
            record("lm_examples", ours["examples_per_sec"], peer["examples_per_sec"], "windows/s")
            record("lm_validation_loss", ours["validation_loss"], peer["validation_loss"], "nats/byte, lower is better")

        if "input" in only:
            ours = runner.tfrecord_bench(shard_dirs, input_threads)
            peer = {}
            if tf_python:
                for name, compression in (("plain", "NONE"), ("gzip", "GZIP")):
                    peer[compression] = runner.tfdata(tf_python, shard_dirs[name], compression, input_threads)
            raw = ours[("raw", "NONE", 1, "warm")]["mb_per_sec"]
            parse = ours[("parse", "NONE", input_threads, "warm")]
            record("input_raw", raw, None, "MB/s")
            record("input_framing", ours[("framing", "NONE", 1, "warm")]["mb_per_sec"], raw, "MB/s")
            record("input_framing_unchecked", ours[("framing_unchecked", "NONE", 1, "warm")]["mb_per_sec"], raw,
                   "MB/s")
            if ("raw", "NONE", 1, "cold") in ours:  # where the page cache lets the files go
                raw_cold = ours[("raw", "NONE", 1, "cold")]["mb_per_sec"]
                record("input_raw_cold", raw_cold, None, "MB/s")
                record("input_framing_cold", ours[("framing", "NONE", 1, "cold")]["mb_per_sec"], raw_cold, "MB/s")
            record("input_parse_vs_raw", parse["mb_per_sec"], raw, "MB/s")
            record("input_parse_threads", parse["records_per_sec"],
                   ours[("parse", "NONE", 1, "warm")]["records_per_sec"], "records/s")
            if peer:
                record("input_parse", parse["records_per_sec"], peer["NONE"]["parse"]["records_per_sec"], "records/s")
                record("input_parse_single", parse["records_per_sec"],
                       peer["NONE"]["parse_single"]["records_per_sec"], "records/s")
                record("input_parse_gzip", ours[("parse", "GZIP", input_threads, "warm")]["records_per_sec"],
                       peer["GZIP"]["parse"]["records_per_sec"], "records/s")
            memory = ours["memory"]
            record("input_memory", memory["peak_rss_mib_at_100"], memory["peak_rss_mib_at_10"], "MiB peak RSS")
            samples["input_memory"].setdefault("growth", []).append(memory["growth_mib"])
            samples["input_memory"]["stream_mb"] = memory["stream_mb"]
            tfrecord_fed = runner.est_train_steps_per_sec("tfrecord", shard_dirs)
            idx_fed = runner.est_train_steps_per_sec("idx", shard_dirs)
            record("input_training", tfrecord_fed, idx_fed, "steps/s")

        if ctr_dir:
            # Interleaved: TensorFlow's run, then ours, per estimator; wide & deep also from tensors.
            for estimator in ("wide_deep", "linear", "dnn_regressor"):
                peer = runner.canned_peer(tf_python, ctr_dir, estimator)
                ours = runner.canned_ours(ctr_dir, estimator)
                record(f"canned_{estimator}_vs_tf", ours["examples_per_second"], peer["examples_per_second"],
                       "examples/s")
                if estimator == "wide_deep":
                    auc = (ours["metrics"]["auc"], peer["metrics"]["auc"])
                    canned_auc.append(auc)
                    record("canned_auc", auc[0], auc[1], f"eval AUC after {ours['steps']} steps")
                    record("canned_time_to_auc", canned_seconds_to_auc("canned_bench", ours["curve"]),
                           canned_seconds_to_auc("TensorFlow", peer["curve"]),
                           f"s of steps to eval AUC {CANNED_AUC_TARGET}, lower is better")
                    tensors = runner.canned_ours(ctr_dir, estimator, "tensors")
                    record("canned_input_tfrecord_vs_tensors", ours["examples_per_second"],
                           tensors["examples_per_second"], "examples/s")
                if estimator == "dnn_regressor":
                    record("canned_dnn_regressor_loss", ours["metrics"]["average_loss"],
                           peer["metrics"]["average_loss"], f"eval average loss after {ours['steps']} steps")
            record("canned_wide_deep_ps_vs_tf", runner.canned_cluster(ctr_dir),
                   runner.canned_cluster(ctr_dir, tf_python), "examples/s")

        # --quick runs the faster link only, every figure of the slower one included: both
        # rates run the same programs, and the faster moves the large models' bytes sooner.
        link_rates = HOST_LINK_RATES[-1:] if args.quick else HOST_LINK_RATES
        for rate in link_rates if "hosts" in only and not no_hosts else ():
            with simulated_hosts.SimulatedHosts(2, rate) as net:
                for model in distributed_models:
                    figure = f"hosts_{model}_{rate // 1000}g"
                    uncompressed = runner.on_hosts(net, model, "ours")
                    ours = uncompressed["examples_per_sec"]
                    record(figure, ours, runner.on_hosts(net, model, "ddp")["examples_per_sec"], "examples/s")
                    if model == "mlp" and uncompressed["allreduce"].get("calls"):
                        # The all-reduce inside training against bare Gloo all-reduces of the same
                        # bucket sizes over the same link, bucket for bucket.
                        stats, alone = uncompressed["allreduce"], 0.0
                        for bucket in stats["buckets"]:
                            calls = int(bucket["calls"])
                            raw = runner.on_hosts(net, model, "raw_allreduce", raw_bytes=bucket["bytes"],
                                                  raw_calls=max(3, calls))["allreduce"]
                            alone += raw["seconds"] / raw["calls"] * calls
                        # 2 ranks: the bus bytes are the bytes.
                        record(f"{figure}_allreduce", stats["bus_gbytes_per_sec"], stats["bytes"] / 1e9 / alone,
                               "GB/s bus")
                    compressed = runner.on_hosts(net, model, "ours", compression="fp16")["examples_per_sec"]
                    ddp_fp16 = runner.on_hosts(net, model, "ddp", compression="fp16")["examples_per_sec"]
                    record(f"{figure}_fp16", compressed, ddp_fp16, "examples/s")
                    record(f"{figure}_fp16_vs_fp32", compressed, ours, "examples/s")
                    # DDP's powerSGD_hook fails over Gloo in PyTorch 1.13 (docs/performance.md): its
                    # fp16 hook, the compression it runs here, is the peer.
                    low_rank = runner.on_hosts(net, model, "ours", compression="powersgd")["examples_per_sec"]
                    record(f"{figure}_powersgd", low_rank, ddp_fp16, "examples/s")
                    record(f"{figure}_powersgd_vs_fp32", low_rank, ours, "examples/s")
                    if rate == link_rates[0] and model == "mlp":
                        # Bucket caps on the slowest link measured, on ResNet-18's 62 tensors of 11 M parameters
                        # (the CNN's and the MLP's buckets are the same for any cap from 2 to 100 MiB).
                        by_cap = {cap: runner.on_hosts(net, "resnet", "ours", batch=32, bucket_cap_mb=cap)
                                  ["examples_per_sec"] for cap in BUCKET_CAPS_MB}
                        for cap in BUCKET_CAPS_MB:
                            if cap != 25:
                                record(f"hosts_resnet_{rate // 1000}g_bucket_{cap}mb", by_cap[cap], by_cap[25],
                                       "examples/s")
                    if rate == link_rates[0]:  # 2 hosts x 2 workers, on the slowest link measured
                        hierarchical = runner.on_hosts(net, model, "ours", per_host=2)["examples_per_sec"]
                        record(f"{figure}_2x2", hierarchical,
                               runner.on_hosts(net, model, "ddp", per_host=2)["examples_per_sec"], "examples/s")
                        record(f"{figure}_2x2_vs_flat", hierarchical,
                               runner.on_hosts(net, model, "ours", per_host=2, transport="tcp")["examples_per_sec"],
                               "examples/s")

    peers = {"overhead": "hand-written LibTorch loop", "memory": "hand-written LibTorch loop",
             "overhead_kernels": "hand-written LibTorch loop, both on the kernels",
             "overhead_ops": "hand-written LibTorch loop, both with --kernels ops",
             "overhead_same_allocator": "hand-written LibTorch loop on the Estimator's CachingCpuAllocator",
             "vs_glibc_malloc": "hand-written loop, glibc's default malloc thresholds",
             "fused_adam_cnn": "the Estimator stepping LibTorch's Adam (ours: the fused Adam step, the default)",
             "fused_adam_mlp": "the Estimator stepping LibTorch's Adam (ours: the fused Adam step, the default)",
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
             "ps_sync_accuracy": "MultiWorkerMirroredStrategy, 2 workers",
             "lm_examples": "PyTorch DDP (gloo), the same Transformer LM, data and recipe, 2 workers (ours: --kernels off)",
             "lm_validation_loss": "PyTorch DDP (gloo), the same Transformer LM, data and recipe, 2 workers",
             "input_raw": "none (the limit)", "input_framing": "raw read of the same files",
             "input_framing_unchecked": "raw read of the same files (ours: checksums not verified)",
             "input_raw_cold": "none (the limit: the disk)",
             "input_framing_cold": "raw read of the same files, both from disk (page cache dropped)",
             "input_parse_vs_raw": f"raw read of the same files (ours: {input_threads} threads)",
             "input_parse_threads": f"ours on 1 thread (TFRecordDataset; ours: InterleaveFiles, {input_threads} threads)",
             "input_parse": f"tf.data, batch then parse_example, {input_threads} threads",
             "input_parse_single": f"tf.data, parse_single_example then batch, {input_threads} threads",
             "input_parse_gzip": f"tf.data, batch then parse_example, {input_threads} threads, GZIP",
             "input_memory": "ours after 10% of the stream",
             "input_training": "est-train fed from the IDX files (in memory)",
             "canned_wide_deep_vs_tf": "TensorFlow 2.15's DNNLinearCombinedClassifier, same columns, rates, data, "
                                       "batch 256, 1 thread",
             "canned_wide_deep_ps_vs_tf": "TensorFlow 2.15's estimator on 2 workers + 1 ps (async, between-graph), "
                                          "the same model, data and batch, 1 thread a task",
             "canned_linear_vs_tf": "TensorFlow 2.15's LinearClassifier, the same",
             "canned_dnn_regressor_vs_tf": "TensorFlow 2.15's DNNRegressor, the same",
             "canned_auc": "TensorFlow 2.15's wide & deep after the same steps",
             "canned_dnn_regressor_loss": "TensorFlow 2.15's DNNRegressor after the same steps",
             "canned_time_to_auc": "TensorFlow 2.15's wide & deep, the same checkpoints and evaluations",
             "canned_input_tfrecord_vs_tensors": "ours fed from the same batches parsed before training, in memory",
             "estimator_vs_tf": "TensorFlow 2.15 tf.estimator, same CNN, data and batch, 1 thread (ours: est-train, "
                                "LibTorch's layers, --kernels ops)",
             "estimator_vs_tf_stock": "the same (ours: est-train --kernels off, LibTorch's own kernels)",
             "estimator_vs_tf_kernels": "the same (ours: est-train --kernels model, the kernels fitted to the CNN)",
             "estimator_vs_tf_all_cores": "the same on every core, each side's default thread pools (ours: est-train "
                                          "--kernels ops where built)",
             "estimator_vs_tf_2_workers": "tf.estimator, MultiWorkerMirroredStrategy, 2 workers bound to a CPU each, "
                                          "1 thread (ours: est-launch --workers 2, est-train --kernels ops where built)",
             "estimator_vs_tf_2_workers_stock": "the same (ours: est-train --kernels off)",
             "estimator_vs_tf_time_to_088": "tf.estimator train_and_evaluate, 1 thread, evaluating every 1000 steps as "
                                            "ours, start-up included (ours: est-train --kernels ops where built)",
             "estimator_vs_tf_time_to_088_stock": "the same (ours: est-train --kernels off)",
             "resnet_ops_vs_off": "the same with --kernels off and Adam::step (ours: ResNet-18 in the Estimator loop, "
                                  "batch 16, 1 thread, --kernels ops)"}
    for rate in HOST_LINK_RATES:
        for model in ("cnn", "mlp"):
            figure, link = f"hosts_{model}_{rate // 1000}g", f"2 hosts x 1 worker, {rate // 1000} Gbit/s links"
            peers[figure] = f"PyTorch DDP (gloo), {link}"
            peers[f"{figure}_fp16"] = f"PyTorch DDP with fp16_compress_hook, {link} (ours: fp16, error feedback)"
            peers[f"{figure}_fp16_vs_fp32"] = f"ours uncompressed, {link} (ours: fp16)"
            peers[f"{figure}_powersgd"] = (f"PyTorch DDP with fp16_compress_hook, {link} "
                                           f"(ours: PowerSGD, rank {POWERSGD_RANK})")
            peers[f"{figure}_powersgd_vs_fp32"] = f"ours uncompressed, {link} (ours: PowerSGD, rank {POWERSGD_RANK})"
            peers[f"{figure}_2x2"] = f"PyTorch DDP (gloo), 2 hosts x 2 workers, {rate // 1000} Gbit/s links"
            peers[f"{figure}_allreduce"] = (f"bare Gloo TCP all-reduces of the same bucket sizes, {link} "
                                            "(ours: inside training)")
            peers[f"{figure}_2x2_vs_flat"] = (f"ours with a flat Gloo TCP all-reduce, 2 hosts x 2 workers, "
                                              f"{rate // 1000} Gbit/s links (ours: hierarchical)")
        for cap in BUCKET_CAPS_MB:
            peers[f"hosts_resnet_{rate // 1000}g_bucket_{cap}mb"] = (
                f"ours with 25 MiB buckets (DDP's default), ResNet-18 at batch 32, 2 hosts x 1 worker, "
                f"{rate // 1000} Gbit/s links (ours: {cap} MiB)")
    for batch in (1, SERVE_BATCH):
        peers[f"serve_predictor_batch_{batch}"] = ("hand-written LibTorch: the same module and weights called directly "
                                                   "under InferenceMode, 1 thread")
    for clients in SERVE_CLIENTS:
        who = f"{clients} client{'s' if clients > 1 else ''}"
        peers[f"serve_grpc_unbatched_{clients}_clients"] = (
            f"Predictor::predict at batch 1 in process, examples/s (ours: est-serve over gRPC, {who}, no batching)")
        peers[f"serve_grpc_batched_{clients}_clients"] = (
            f"Predictor::predict at batch {SERVE_BATCH} in process, examples/s (ours: est-serve over gRPC, {who}, "
            f"batches of at most {SERVE_BATCH}, {SERVE_DELAY_US / 1000:g} ms queue delay)")
    most = max(SERVE_CLIENTS)
    for batch in (1, SERVE_BATCH):
        peers[f"serve_program_batch_{batch}"] = ("model_fn's own forward on the same export (a Predictor with model_fn), "
                                                 "1 thread (ours: the export's traced program)")
    peers[f"serve_vs_torchserve_{most}_clients"] = (
        f"TorchServe 0.12 serving the same model.pt (apps/bench/torchserve_handler.py, Debian's torch 1.13), batch "
        f"{SERVE_BATCH}, the same :predict body from {most} clients (ours: est-serve's TF :predict by the traced program)")
    peers["serve_json_decode_kserve_us"] = "none (ours: decoding one KServe v2 infer JSON body of one example)"
    peers["serve_json_decode_tf_us"] = "none (ours: decoding one TF Serving :predict row-format body of one example)"
    for api, what in (("kserve", "KServe v2 infer"), ("tf", "TF Serving :predict")):
        peers[f"serve_{api}_rest_batched_{most}_clients"] = (
            f"est-serve over gRPC (KServe v2 ModelInfer), {most} clients, batched (ours: {what} over REST, JSON)")
    peers[f"serve_batching_gain_{most}_clients"] = f"est-serve without batching, {most} clients (ours: with batching)"
    peers[f"serve_p99_bound_{most}_clients"] = (f"2 x the queue delay + the batch-{SERVE_BATCH} compute (ours: the "
                                                f"batched p99 latency, {most} clients)")
    peers[f"serve_grpc_batched_open_{most}_clients"] = (
        f"Predictor::predict at batch {SERVE_BATCH} in process, examples/s (ours: est-serve batched, {most} clients in "
        "open loop at half the closed loop's requests/s)")
    peers[f"serve_p99_bound_open_{most}_clients"] = (f"2 x the queue delay + the batch-{SERVE_BATCH} compute (ours: the "
                                                     f"batched p99 latency, {most} clients in open loop)")
    peers["serve_hot_reload_failed"] = (f"requests sent (ours: failed ones, {SERVE_RELOAD_CLIENTS} clients, while new "
                                        "versions were exported and reloaded)")
    peers["elastic_recorder_call"] = "the same while another thread takes records"
    peers["elastic_recorder_share"] = "none: recorded calls a step x elastic_recorder_call / step time, 2 workers, CNN"
    peers["elastic_stop_to_error"] = "the collective timeout (ours: SIGSTOP of worker 1 to worker 0's error)"
    peers["elastic_regrow_pause"] = "none (ours: the chief's step gap while the replacement joins)"
    for mode in ("shrink", "replace", "replace_wait", "restart"):
        peers[f"elastic_recovery_{mode}"] = "torchrun's elastic agent restarting DDP's 3 ranks from a checkpoint"
        peers[f"elastic_steps_lost_{mode}"] = "the same, torchrun"
    peers["elastic_recovery_silent"] = "the collective timeout, which a silent worker cost before it was cut off"
    peers["elastic_steps_lost_silent"] = "the same, torchrun (after a SIGKILL)"
    peers["serve_hot_reload_versions"] = "versions exported (ours: versions served by the reloads under load)"
    for figure in [name for name in peers if name.startswith("serve_")]:  # the same, for the MLP
        peers["serve_mlp_" + figure[len("serve_"):]] = peers[figure] + "; the 21 M-parameter MLP"
    print(f"TorchEstimator benchmarks on {platform.node()}: {cpu_description()}, {os.cpu_count()} cores, "
          f"{repetitions} repetition(s), medians{' (quick sizes: not a measurement)' if args.quick else ''}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min) at the end")
    if "hosts" in only and no_hosts:
        print(f"hosts figures skipped: simulated hosts cannot be made here ({no_hosts})")
    if "gpu" in only and not gpu_name:
        print(f"gpu figures skipped: no CUDA device for train_bench ({no_gpu})")
    if "input" in only and not tf_python:
        print(f"input_parse* figures skipped (the tf.data peer): {no_tensorflow}")
    if "estimator" in only and not tf_python:
        print(f"estimator_vs_tf skipped (the tf.estimator peer): {no_tensorflow}")
    if "canned" in only and not tf_python:
        print(f"canned figures skipped (ctr_data.py and the TensorFlow peer need TensorFlow): {no_tensorflow}")
    if canned_auc:
        differences = [ours - peer for ours, peer in canned_auc]
        print(f"canned_auc: ours - TensorFlow's, per repetition: {', '.join(f'{d:+.4f}' for d in differences)} "
              f"(within 0.005: {'yes' if all(abs(d) <= 0.005 for d in differences) else 'NO'})")
    print(f"{'figure':<27} {'ours':>12} {'peer':>12} {'ratio':>7}  unit / peer")
    lines = []
    for figure, data in samples.items():
        ours = statistics.median(data["ours"])
        peer = statistics.median(data["peer"]) if data["peer"] else None
        ratio = ours / peer if peer else None
        peer_text = f"{peer:>12.4g}" if peer is not None else f"{'-':>12}"
        ratio_text = f"{ratio:>7.3f}" if ratio is not None else f"{'-':>7}"
        details = {"gpu": gpu_name} if figure.startswith("gpu_") else {}
        if "growth" in data:
            details = {"growth_mib": statistics.median(data["growth"]), "stream_mb": data["stream_mb"]}
        note = f"; growth 10%->100% {details['growth_mib']:.1f} MiB" if "growth_mib" in details else ""
        # The repetitions are interleaved pairs: each pair's ratio, and their spread.
        pairs = [o / p for o, p in zip(data["ours"], data["peer"]) if p] if len(data["peer"]) == len(data["ours"]) else []
        if len(pairs) > 1:
            details["pair_ratios"] = pairs
            note += f"; pairs {min(pairs):.3f} to {max(pairs):.3f}"
        print(f"{figure:<27} {ours:>12.4g} {peer_text} {ratio_text}  {data['unit']} / {peers[figure]}{note}")
        grouped = figure.startswith(("input_", "hosts_", "serve_", "canned_"))
        lines.append({"bench": figure.split("_")[0] if grouped else "training",
                      "figure": figure,
                      "ours": ours, "peer": peer, "ratio": ratio, "unit": data["unit"], "peer_name": peers[figure],
                      "repetitions": repetitions, "quick": args.quick, **details})
    for size, rows in sorted(trace.items(), reverse=True):
        waited, inside, alone = (statistics.median(row[k] for row in rows) for k in range(3))
        print(f"allreduce trace, scaling_mlp bucket of {size / 1e6:.1f} MB: waited for the last rank {waited:.1f} ms, "
              f"then the all-reduce {inside:.1f} ms inside training, {alone:.1f} ms alone")
    for kernels, ours_ops, peer_ops in op_tables:
        print_op_table(kernels, ours_ops, peer_ops)
    for figure, latencies in serve_latency.items():
        p50, p99 = (statistics.median(latency[k] for latency in latencies) for k in range(2))
        print(f"serve latency, {figure}: p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    for extra in ("input_pipeline_bench", "checkpoint_bench") if "extras" in only else ():
        path = os.path.join(runner.bin, extra)
        if os.path.exists(path):
            output = run([path] + (["--quick"] if args.quick else []))
            print(output, end="")
    for line in lines:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
