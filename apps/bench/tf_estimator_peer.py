"""The tf.estimator peer of est-train (make bench, group estimator): TensorFlow 2.15's
tf.estimator training est-train's model, the TensorFlow tutorial's Fashion-MNIST CNN (conv
32x3x3 + ReLU, max-pool 2, dense 64 + ReLU, dense 10; Adam 0.001), on the same data (the IDX
files, scaled to [0, 1], shuffled with a buffer of 10000, batches of 64, prefetch 2), with
the threads given (inter-op, intra-op and tf.data's), checkpoints at the end only and summaries every
100 steps as est-train writes them. Prints one JSON line: steps/s after --warmup steps. With
--trace-steps N, the N steps after the timed ones run traced (TensorFlow's step stats), and a
second line gives the microseconds each op type took per step, summed over its kernels.

With --evaluate-every N, tf.estimator.train_and_evaluate checkpoints every N steps and evaluates
each checkpoint on the whole test set, as est-train does; the JSON line also lists each
evaluation as [global step, accuracy, Unix time at its end]. With --multi-worker, the workers
of TF_CONFIG train together under MultiWorkerMirroredStrategy (batches of 64 on each worker, each
reading the whole shuffled set: a figure of throughput; train_and_evaluate, the only way
tf.estimator trains there); each worker prints its line.

usage: tf_estimator_peer.py --model-dir DIR [--steps 1200] [--warmup 200] [--threads 1]
                            [--trace-steps 0] [--evaluate-every 0] [--multi-worker]
"""

import argparse
import gzip
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402  (after the log level)

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """An IDX file (gzip) as a uint8 array of its items, the header dropped."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    return np.frombuffer(data[4 + 4 * data[3]:], dtype=np.uint8)


def input_fn(threads, split="train"):
    """The training set shuffled and repeated, or the test set ("t10k") once, in batches of 64."""
    images = read_idx(f"{FASHION_MNIST}/{split}-images-idx3-ubyte.gz").reshape(-1, 28, 28, 1)
    labels = read_idx(f"{FASHION_MNIST}/{split}-labels-idx1-ubyte.gz").astype(np.int64)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    dataset = dataset.map(lambda image, label: ({"image": tf.cast(image, tf.float32) / 255.0}, label))
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    if split == "train":
        dataset = dataset.cache().shuffle(10000, seed=42).repeat()
    return dataset.batch(64).prefetch(2).with_options(options)


def model_fn(features, labels, mode):
    layers = tf.compat.v1.layers
    x = layers.conv2d(features["image"], 32, 3, activation=tf.nn.relu)
    x = layers.max_pooling2d(x, 2, 2)
    x = layers.dense(layers.flatten(x), 64, activation=tf.nn.relu)
    logits = layers.dense(x, 10)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        accuracy = tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    train_op = tf.compat.v1.train.AdamOptimizer(0.001).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class EvaluationTimes(tf.estimator.Exporter):
    """Called by train_and_evaluate after each evaluation: keeps its step, accuracy and end time."""

    def __init__(self):
        self.evaluations = []

    @property
    def name(self):
        return "evaluation_times"

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        self.evaluations.append([int(eval_result["global_step"]), float(eval_result["accuracy"]), time.time()])


class StepTimer(tf.estimator.SessionRunHook):
    """The wall time at the end of step `warmup` and of step `last`."""

    def __init__(self, warmup, last):
        self.warmup = warmup
        self.last = last
        self.steps = 0
        self.started = self.ended = None

    def after_run(self, run_context, run_values):
        self.steps += 1
        if self.steps == self.warmup:
            self.started = time.perf_counter()
        if self.steps <= self.last:
            self.ended = time.perf_counter()


class OpTimes(tf.estimator.SessionRunHook):
    """Traces the steps after `first` and sums each op type's time (end - start of each kernel's
    execution, as TensorFlow's step stats record it) over them."""

    def __init__(self, first):
        self.first = first
        self.steps = 0
        self.traced = 0
        self.micros = {}

    def before_run(self, run_context):
        self.steps += 1
        if self.steps <= self.first:
            return None
        options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        return tf.estimator.SessionRunArgs(fetches=None, options=options)

    def after_run(self, run_context, run_values):
        if self.steps <= self.first:
            return
        self.traced += 1
        for device in run_values.run_metadata.step_stats.dev_stats:
            for node in device.node_stats:
                op = node.timeline_label.split("= ")[-1].split("(")[0] if node.timeline_label else node.node_name
                self.micros[op] = self.micros.get(op, 0) + node.op_end_rel_micros - node.op_start_rel_micros


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--trace-steps", type=int, default=0)
    parser.add_argument("--evaluate-every", type=int, default=0)
    parser.add_argument("--multi-worker", action="store_true")
    args = parser.parse_args()
    if not 0 < args.warmup < args.steps:
        raise SystemExit(f"tf_estimator_peer: need 0 < --warmup ({args.warmup}) < --steps ({args.steps})")
    if args.evaluate_every < 0:
        raise SystemExit(f"tf_estimator_peer: --evaluate-every must be >= 0, got {args.evaluate_every}")
    if args.multi_worker and "TF_CONFIG" not in os.environ:
        raise SystemExit("tf_estimator_peer: --multi-worker needs TF_CONFIG naming the workers")
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    session = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=args.threads,
                                       inter_op_parallelism_threads=args.threads)
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy() if args.multi_worker else None
    last = args.steps + args.trace_steps
    config = tf.estimator.RunConfig(model_dir=args.model_dir, tf_random_seed=42, session_config=session,
                                    save_checkpoints_steps=args.evaluate_every or args.steps, save_summary_steps=100,
                                    log_step_count_steps=100, train_distribute=strategy)
    timer = StepTimer(args.warmup, args.steps)
    op_times = OpTimes(args.steps)
    evaluations = EvaluationTimes()
    estimator = tf.estimator.Estimator(model_fn, config=config)

    def train():
        return input_fn(args.threads)

    if args.evaluate_every or args.multi_worker:
        tf.estimator.train_and_evaluate(
            estimator, tf.estimator.TrainSpec(train, max_steps=last, hooks=[timer, op_times]),
            tf.estimator.EvalSpec(lambda: input_fn(args.threads, "t10k"), steps=None, exporters=[evaluations],
                                  start_delay_secs=0, throttle_secs=0))
    else:
        estimator.train(train, max_steps=last, hooks=[timer, op_times])
    timed = args.steps - args.warmup
    print(json.dumps({"loop": "tf.estimator", "tensorflow": tf.__version__, "steps": timed,
                      "steps_per_sec": timed / (timer.ended - timer.started),
                      "evaluations": evaluations.evaluations}))
    if op_times.traced:
        per_step = {op: micros / op_times.traced for op, micros in op_times.micros.items()}
        print(json.dumps({"traced_steps": op_times.traced,
                          "op_micros_per_step": dict(sorted(per_step.items(), key=lambda item: -item[1]))}))


if __name__ == "__main__":
    main()
