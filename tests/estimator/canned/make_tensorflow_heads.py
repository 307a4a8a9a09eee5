"""Writes tensorflow_head_values.inc: what TensorFlow 2.15's own heads (tf.estimator.BinaryClassHead,
MultiClassHead, MultiLabelHead, RegressionHead) compute from fixed logits, labels and weights,
for tests/estimator/canned/heads_test.cc.

Run once, by hand, with TensorFlow 2.15 (tensorflow-cpu 2.15.1 was used; CI does not run it):

    build/tf-venv/bin/python tests/estimator/canned/make_tensorflow_heads.py

Each case is a few eval batches of logits, labels and per-example weights (float32, generated
here from a fixed seed and written out in full), with each batch's training loss under
SUM_OVER_BATCH_SIZE and SUM, and every eval metric of the head after all batches (its `loss`
being the mean of the batches' SUM_OVER_BATCH_SIZE losses, as Estimator.evaluate reports it).
Rerunning it rewrites an identical file.
"""

import os

import numpy as np
import tensorflow as tf

R = tf.losses.Reduction


def batches(rng, sizes, logits_dim, labels_fn, weighted):
    out = []
    for size in sizes:
        logits = rng.normal(scale=2.0, size=(size, logits_dim)).astype(np.float32)
        labels = labels_fn(rng, size)
        weights = (rng.uniform(0.5, 2.0, size=(size, 1)) if weighted else np.ones((size, 1))).astype(np.float32)
        out.append((logits, labels, weights))
    return out


def binary_labels(rng, size):
    return rng.integers(0, 2, size=(size, 1)).astype(np.float32)


def class_labels(n):
    return lambda rng, size: rng.integers(0, n, size=(size, 1)).astype(np.int64)


def multi_hot(n):
    return lambda rng, size: rng.integers(0, 2, size=(size, n)).astype(np.int64)


def real_labels(dim):
    return lambda rng, size: rng.normal(size=(size, dim)).astype(np.float32)


def make_cases():
    rng = np.random.default_rng(73)
    cases = []
    # TensorFlow's own doc example of BinaryClassHead.
    cases.append(("binary_doc", tf.estimator.BinaryClassHead,
                  {}, [(np.array([[45.0], [-41.0]], np.float32), np.array([[1.0], [1.0]], np.float32),
                        np.ones((2, 1), np.float32))]))
    cases.append(("binary", tf.estimator.BinaryClassHead, {"thresholds": [0.3, 0.7]},
                  batches(rng, [8, 5, 11], 1, binary_labels, True)))
    # A constant model: every logit 0.
    constant = batches(rng, [6, 6], 1, binary_labels, False)
    cases.append(("binary_constant", tf.estimator.BinaryClassHead, {},
                  [(np.zeros_like(l), y, w) for (l, y, w) in constant]))
    cases.append(("multi_class", tf.estimator.MultiClassHead, {"n_classes": 3},
                  batches(rng, [7, 9], 3, class_labels(3), True)))
    cases.append(("multi_label", tf.estimator.MultiLabelHead,
                  {"n_classes": 3, "thresholds": [0.5], "classes_for_class_based_metrics": [0, 2]},
                  batches(rng, [6, 10], 3, multi_hot(3), True)))
    cases.append(("regression", tf.estimator.RegressionHead, {"label_dimension": 2},
                  batches(rng, [5, 8], 2, real_labels(2), True)))
    return cases


def run_case(head_class, kwargs, data):
    batch_losses = {}
    for reduction, key in ((R.SUM_OVER_BATCH_SIZE, "sum_over_batch_size"), (R.SUM, "sum")):
        head = head_class(weight_column="w", loss_reduction=reduction, **kwargs)
        batch_losses[key] = [float(head.loss(labels, logits, features={"w": weights}).numpy())
                             for (logits, labels, weights) in data]
    head = head_class(weight_column="w", **kwargs)
    metrics = head.metrics()
    for (logits, labels, weights) in data:
        metrics = head.update_metrics(metrics, {"w": weights}, logits, labels)
    results = {name: float(metric.result().numpy()) for name, metric in metrics.items()}
    results["loss"] = float(np.mean(batch_losses["sum_over_batch_size"]))
    return batch_losses, results


def floats(values):
    return "{" + ", ".join(repr(float(v)) for v in np.asarray(values).reshape(-1)) + "}"


def main():
    lines = [
        "// Written by make_tensorflow_heads.py with TensorFlow %s; do not edit." % tf.__version__,
        "// {case, {batches: {logits, logits shape, labels, labels shape, weights, loss (sum over batch size),",
        "//   loss (sum)}}, {{metric, TensorFlow's value}}}",
    ]
    for name, head_class, kwargs, data in make_cases():
        batch_losses, results = run_case(head_class, kwargs, data)
        lines.append('{"%s", {' % name)
        for i, (logits, labels, weights) in enumerate(data):
            lines.append("  {%s, {%d, %d}, %s, {%d, %d}, %s, %r, %r}," % (
                floats(logits), logits.shape[0], logits.shape[1], floats(labels), labels.shape[0],
                labels.shape[1], floats(weights), batch_losses["sum_over_batch_size"][i],
                batch_losses["sum"][i]))
        lines.append("}, {")
        for metric in sorted(results):
            lines.append('  {"%s", %r},' % (metric, results[metric]))
        lines.append("}},")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorflow_head_values.inc")
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
