"""The canned group's TensorFlow peer: trains TensorFlow 2.15's own canned estimator (wide_deep,
linear or dnn_regressor) with the columns, input and rates of
tests/estimator/canned/tensorflow_canned.py, on one intra-op and one inter-op thread, as
canned_bench trains ours, and prints one JSON line:

    {"estimator": NAME, "steps": ..., "examples_per_second": ..., "step_seconds": ...,
     "train_seconds": ..., "metrics": {...}, "curve": [[step, seconds, auc or average_loss], ...]}

examples_per_second is steps * batch / (start of the first step .. end of the last), as
tensorflow_canned.py measures it. A checkpoint is saved every --eval-every steps (all kept) and
each is evaluated after training on all of eval.tfrecord; `seconds` in the curve is the time of the
steps up to that checkpoint, so the curve gives the time to an AUC.

In a TF_CONFIG cluster with a ps job (as run_benchmarks.py starts it, and canned_bench beside it),
each process is one task of the estimator's asynchronous parameter-server training (between-graph
replication, variables placed on the ps tasks): a ps task serves until it is killed; the chief and
the workers meet in --barrier-dir before their first step, train until the global step reaches
--steps, and print {"task": "worker 0", "steps": local steps, "first": ..., "last": ...}, the
start of the first step and the end of the last in CLOCK_MONOTONIC seconds.

usage: canned_tf_peer.py --data-dir DIR --estimator wide_deep [--steps 2000] [--batch-size 256]
                         [--linear-learning-rate 0.1] [--dnn-learning-rate 0.05] [--eval-every 250]
                         [--model-dir DIR --barrier-dir DIR]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "estimator", "canned"))

import tensorflow as tf  # noqa: E402

import tensorflow_canned  # noqa: E402  (tests/estimator/canned/)


class CurveTimer(tf.estimator.SessionRunHook):
    """Times the steps from the start of the first to the end of the last, and the end of every
    step whose global step is a multiple of `every`."""

    def __init__(self, every):
        self.every = every
        self.first = None
        self.last = None
        self.steps = 0
        self.marks = []

    def begin(self):
        self.global_step = tf.compat.v1.train.get_global_step()

    def before_run(self, run_context):
        if self.first is None:
            self.first = time.monotonic()
        return tf.estimator.SessionRunArgs(self.global_step)

    def after_run(self, run_context, run_values):
        self.last = time.monotonic()
        self.steps += 1
        step = int(run_values.results) + 1  # the global step before this step ran, plus it
        if self.every and step % self.every == 0:
            self.marks.append((step, self.last - self.first))


class StartBarrier(tf.estimator.SessionRunHook):
    """Holds the first step until every training task has reached it: each writes a file into
    `directory` and waits for `tasks` of them (at most 10 minutes)."""

    def __init__(self, directory, task, tasks):
        self.directory, self.task, self.tasks, self.passed = directory, task, tasks, False

    def before_run(self, run_context):
        if self.passed:
            return
        os.makedirs(self.directory, exist_ok=True)
        with open(os.path.join(self.directory, "ready-tf-" + self.task), "w") as ready:
            ready.write("\n")
        deadline = time.monotonic() + 600
        while len(os.listdir(self.directory)) < self.tasks:
            if time.monotonic() > deadline:
                sys.exit(f"canned_tf_peer: {self.task} waited 10 minutes for {self.tasks} training tasks")
            time.sleep(0.005)
        self.passed = True


def run_cluster_task(args, session):
    """One task of the TF_CONFIG cluster: a ps task serves forever; a training task trains until the
    global step reaches --steps and prints its JSON line."""
    name = args.estimator
    linear, dnn = tensorflow_canned.feature_columns(**tensorflow_canned.FULL_SIZES)
    columns = {"wide_deep": linear + dnn, "linear": linear, "dnn_regressor": dnn}[name]
    label = "spend" if name == "dnn_regressor" else "clicked"
    probe = tf.estimator.RunConfig()
    task_type, task_id = probe.task_type, probe.task_id
    # The devices a task talks to, as the estimator's default session config filters them.
    session.device_filters.extend(["/job:ps", f"/job:{task_type}/task:{task_id}"])
    server = tf.distribute.Server(probe.cluster_spec, job_name=task_type, task_index=task_id, config=session)
    if task_type == "ps":
        server.join()
    config = tf.estimator.RunConfig(model_dir=args.model_dir, tf_random_seed=args.seed, session_config=session,
                                    save_checkpoints_steps=args.steps, keep_checkpoint_max=None)
    estimator = tensorflow_canned.make_estimator(name, linear, dnn, config, args)
    train = tensorflow_canned.input_fn(os.path.join(args.data_dir, "train.tfrecord"), columns, label,
                                       args.batch_size, True)
    timer = CurveTimer(0)
    barrier = StartBarrier(args.barrier_dir, f"{task_type}-{task_id}", probe.num_worker_replicas)
    estimator.train(train, max_steps=args.steps, hooks=[barrier, timer])
    print(json.dumps({"estimator": name, "task": f"{task_type} {task_id}", "steps": timer.steps,
                      "batch_size": args.batch_size, "first": timer.first, "last": timer.last}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--estimator", choices=["wide_deep", "linear", "dnn_regressor"], default="wide_deep")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=73)
    parser.add_argument("--linear-learning-rate", type=float, default=0.1)
    parser.add_argument("--dnn-learning-rate", type=float, default=0.05)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--threads", type=int, default=1, help="intra-op and inter-op threads of the session")
    parser.add_argument("--model-dir", help="in a TF_CONFIG cluster: the job's model_dir")
    parser.add_argument("--barrier-dir", help="in a TF_CONFIG cluster: where the training tasks meet")
    args = parser.parse_args()
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    if "TF_CONFIG" in os.environ:
        if not args.model_dir or not args.barrier_dir:
            sys.exit("canned_tf_peer: a cluster task needs --model-dir and --barrier-dir")
        # Soft placement, as the estimator's default session config has it: the DNN's zero_fraction
        # summaries read ps variables inside a cond, which hard placement cannot colocate.
        run_cluster_task(args, tf.compat.v1.ConfigProto(intra_op_parallelism_threads=args.threads,
                                                        inter_op_parallelism_threads=args.threads,
                                                        allow_soft_placement=True))
        return

    name = args.estimator
    linear, dnn = tensorflow_canned.feature_columns(**tensorflow_canned.FULL_SIZES)
    columns = {"wide_deep": linear + dnn, "linear": linear, "dnn_regressor": dnn}[name]
    label = "spend" if name == "dnn_regressor" else "clicked"
    model_dir = tempfile.mkdtemp(prefix=f"canned_tf_peer_{name}_")
    try:
        session = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=args.threads,
                                           inter_op_parallelism_threads=args.threads)
        config = tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=args.seed, session_config=session,
                                        save_checkpoints_steps=args.eval_every or args.steps,
                                        keep_checkpoint_max=None)
        estimator = tensorflow_canned.make_estimator(name, linear, dnn, config, args)
        timer = CurveTimer(args.eval_every)
        train = tensorflow_canned.input_fn(os.path.join(args.data_dir, "train.tfrecord"), columns, label,
                                           args.batch_size, True)
        evaluate = tensorflow_canned.input_fn(os.path.join(args.data_dir, "eval.tfrecord"), columns, label,
                                              args.batch_size, False)
        begin = time.monotonic()
        estimator.train(train, steps=args.steps, hooks=[timer])
        train_seconds = time.monotonic() - begin
        key = "auc" if label == "clicked" else "average_loss"
        curve = []
        for step, seconds in timer.marks:
            if step < args.steps:
                metrics = estimator.evaluate(evaluate, checkpoint_path=os.path.join(model_dir, f"model.ckpt-{step}"))
                curve.append([step, round(seconds, 3), metrics[key].item()])
        metrics = {k: v.item() for k, v in sorted(estimator.evaluate(evaluate).items())}
        step_seconds = timer.last - timer.first
        curve.append([timer.steps, round(step_seconds, 3), metrics[key]])
        print(json.dumps({
            "estimator": name, "steps": timer.steps, "batch_size": args.batch_size, "threads": args.threads,
            "linear_learning_rate": args.linear_learning_rate, "dnn_learning_rate": args.dnn_learning_rate,
            "metrics": metrics, "train_seconds": round(train_seconds, 3), "step_seconds": round(step_seconds, 3),
            "examples_per_second": round(timer.steps * args.batch_size / step_seconds, 1), "curve": curve,
        }), flush=True)
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
