"""Trains TensorFlow 2.15's own canned estimators (tf.estimator.DNNLinearCombinedClassifier,
LinearClassifier, DNNRegressor) on the click-through data of ctr_data.py and prints, per
estimator, one JSON object: every eval metric, the training time and speed, and the variables of
the final checkpoint. It is the TensorFlow reference for the canned estimators of
estimator/canned/ (metrics, speed, checkpoint layout); TENSORFLOW_CANNED_FACTS.md records what it gave.

Run by hand with TensorFlow 2.15 (tensorflow-cpu 2.15.1 was used; CI does not run it):

    build/tf-venv/bin/python tests/estimator/canned/ctr_data.py build/ctr_data
    build/tf-venv/bin/python tests/estimator/canned/tensorflow_canned.py --data-dir build/ctr_data \
        --estimator wide_deep --estimator linear --estimator dnn_regressor --steps 2000

Each printed line is
    {"estimator": NAME, "steps": ..., "batch_size": ..., "linear_learning_rate": ..., "dnn_learning_rate": ...,
     "metrics": {every metric of evaluate()},
     "train_seconds": ..., "step_seconds": ..., "examples_per_second": ...,
     "variables": [[name, shape], ...]}
where train_seconds is the wall time of the whole train() call (graph building, session start,
the step-0 and final checkpoints included), step_seconds the time from the start of the first
step to the end of the last one (input pipeline, summaries every 100 steps and step logging
included), and examples_per_second = steps * batch_size / step_seconds.

Training reads train.tfrecord in file order (no shuffle), repeated, in batches of --batch-size
parsed by tf.io.parse_example with tf.feature_column.make_parse_example_spec; evaluation reads
all of eval.tfrecord once in batches of the same size. RunConfig(tf_random_seed=--seed) fixes
the initial values. Each estimator has TensorFlow's default optimizers (the learning rates in the
JSON are then null) unless --linear-learning-rate or --dnn-learning-rate gives tf.keras.optimizers
.legacy.Ftrl or Adagrad that learning rate, their other arguments left at their defaults.
Without --model-dir each estimator trains in a fresh temporary directory;
with it, in --model-dir/NAME, continuing from a checkpoint already there, as TensorFlow does.
"""

import argparse
import functools
import json
import os
import tempfile
import time

import tensorflow as tf

import ctr_data

FC = tf.feature_column
AGE_BOUNDARIES = [18.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0, 55.0, 60.0, 65.0]
FULL_SIZES = {"user_buckets": 10000, "cross_buckets": 1000, "user_dim": 8, "tags_dim": 4}


def normalize_age(x):
    return (x - 40.0) / 15.0


def normalize_price(x):
    return (x - 3.0) / 2.0


def feature_columns(user_buckets, cross_buckets, user_dim, tags_dim):
    """Returns the (linear, dnn) feature columns of the canned estimators. The dnn part scales age
    and price with normalize_age and normalize_price (float32 arithmetic); the linear part reads
    them raw."""
    user = FC.categorical_column_with_hash_bucket("user", user_buckets)
    category = FC.categorical_column_with_vocabulary_list("category", ctr_data.CATEGORIES, num_oov_buckets=2)
    device = FC.categorical_column_with_vocabulary_list("device", ctr_data.DEVICES)
    hour = FC.categorical_column_with_identity("hour", 24)
    age = FC.numeric_column("age")
    price = FC.numeric_column("price")
    tags = FC.categorical_column_with_vocabulary_list("tags", ctr_data.TAGS)
    linear = [user, category, device, FC.crossed_column(["category", "device"], cross_buckets), hour,
              FC.bucketized_column(age, AGE_BOUNDARIES), price, tags]
    dnn = [FC.embedding_column(user, user_dim), FC.indicator_column(category), FC.indicator_column(device),
           FC.indicator_column(hour), FC.numeric_column("age", normalizer_fn=normalize_age),
           FC.numeric_column("price", normalizer_fn=normalize_price),
           FC.embedding_column(tags, tags_dim, combiner="mean")]
    return linear, dnn


def input_fn(path, columns, label, batch_size, repeat):
    """Returns an input_fn reading the tf.train.Example records of `path` in file order, giving
    (features, labels) or, where `label` is None, the features alone."""
    spec = FC.make_parse_example_spec(columns)
    if label:
        spec[label] = tf.io.FixedLenFeature([1], tf.int64 if label == "clicked" else tf.float32)

    def parse(serialized):
        features = tf.io.parse_example(serialized, spec)
        return (features, features.pop(label)) if label else features

    def fn():
        dataset = tf.data.TFRecordDataset(path)
        if repeat:
            dataset = dataset.repeat()
        return dataset.batch(batch_size).map(parse).prefetch(tf.data.AUTOTUNE)

    return fn


class StepTimer(tf.estimator.SessionRunHook):
    """Times the training steps: from before the first to after the last."""

    def __init__(self):
        self.first = None
        self.last = None
        self.steps = 0

    def before_run(self, run_context):
        if self.first is None:
            self.first = time.perf_counter()

    def after_run(self, run_context, run_values):
        self.last = time.perf_counter()
        self.steps += 1


def make_estimator(name, linear, dnn, config, args):
    """Returns the estimator NAME with TensorFlow's default optimizers, or legacy Keras Ftrl and
    Adagrad with the learning rates that `args` gives."""
    ftrl = "Ftrl"
    if args.linear_learning_rate:
        ftrl = functools.partial(tf.keras.optimizers.legacy.Ftrl, learning_rate=args.linear_learning_rate)
    adagrad = "Adagrad"
    if args.dnn_learning_rate:
        adagrad = functools.partial(tf.keras.optimizers.legacy.Adagrad, learning_rate=args.dnn_learning_rate)
    if name == "wide_deep":
        return tf.estimator.DNNLinearCombinedClassifier(
            linear_feature_columns=linear, linear_optimizer=ftrl, dnn_feature_columns=dnn, dnn_optimizer=adagrad,
            dnn_hidden_units=[64, 32], config=config)
    if name == "linear":
        return tf.estimator.LinearClassifier(feature_columns=linear, optimizer=ftrl, config=config)
    return tf.estimator.DNNRegressor(hidden_units=[64, 32], feature_columns=dnn, optimizer=adagrad, config=config)


def run(name, args):
    linear, dnn = feature_columns(**FULL_SIZES)
    columns = {"wide_deep": linear + dnn, "linear": linear, "dnn_regressor": dnn}[name]
    label = "spend" if name == "dnn_regressor" else "clicked"
    model_dir = os.path.join(args.model_dir, name) if args.model_dir else tempfile.mkdtemp(prefix=name + "_")
    config = tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=args.seed)
    estimator = make_estimator(name, linear, dnn, config, args)
    timer = StepTimer()
    begin = time.perf_counter()
    estimator.train(input_fn(os.path.join(args.data_dir, "train.tfrecord"), columns, label, args.batch_size, True),
                    steps=args.steps, hooks=[timer])
    train_seconds = time.perf_counter() - begin
    metrics = estimator.evaluate(
        input_fn(os.path.join(args.data_dir, "eval.tfrecord"), columns, label, args.batch_size, False))
    step_seconds = timer.last - timer.first
    return {
        "estimator": name,
        "steps": timer.steps,
        "batch_size": args.batch_size,
        "linear_learning_rate": args.linear_learning_rate,
        "dnn_learning_rate": args.dnn_learning_rate,
        "metrics": {key: value.item() for key, value in sorted(metrics.items())},
        "train_seconds": round(train_seconds, 3),
        "step_seconds": round(step_seconds, 3),
        "examples_per_second": round(timer.steps * args.batch_size / step_seconds, 1),
        "variables": [[var, shape] for var, shape in tf.train.list_variables(model_dir)],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="directory of ctr_data.py's train/eval.tfrecord")
    parser.add_argument("--estimator", action="append", choices=["wide_deep", "linear", "dnn_regressor"],
                        help="repeat for several; all three when absent")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=73, help="RunConfig.tf_random_seed")
    parser.add_argument("--model-dir", help="parent of one model_dir per estimator; temporary when absent")
    parser.add_argument("--linear-learning-rate", type=float,
                        help="Ftrl's learning rate; TensorFlow's default optimizer when absent")
    parser.add_argument("--dnn-learning-rate", type=float,
                        help="Adagrad's learning rate; TensorFlow's default optimizer when absent")
    args = parser.parse_args()
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    for name in args.estimator or ["wide_deep", "linear", "dnn_regressor"]:
        print(json.dumps(run(name, args)), flush=True)


if __name__ == "__main__":
    main()
