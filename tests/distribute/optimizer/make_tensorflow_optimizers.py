"""Writes tensorflow_optimizer_values.inc: what TensorFlow's own optimizers leave in a variable
and its slots, step after step, for tests/distribute/optimizer/ftrl_test.cc and
adagrad_tensorflow_test.cc.

The optimizers are the ones TensorFlow 2.15's canned estimators build
(tensorflow_estimator/python/estimator/canned/optimizers.py, get_optimizer_instance_v2):
tf.keras.optimizers.legacy.Ftrl (LinearClassifier, the linear part of
DNNLinearCombinedClassifier) and tf.keras.optimizers.legacy.Adagrad (DNNClassifier, the DNN
part). Run once, by hand, with TensorFlow 2.15 (tensorflow-cpu 2.15.1 was used; CI does not
run it):

    build/tf-venv/bin/python tests/distribute/optimizer/make_tensorflow_optimizers.py

Every input is exact in float32: the variable starts at ((7 i + 3 j) mod 11 - 5) / 8 and the
gradient of step s is ((5 s + 3 i + 7 j + k) mod 13 - 6) / 16 (row i, column j, k the row's
position in the step's indices, 0 for a dense gradient), so the C++ test builds the same
tensors. A dense case applies that gradient to every row; a sparse one applies a
tf.IndexedSlices of the rows SPARSE_ROWS lists (a row listed twice is summed, as TensorFlow
sums duplicate indices), and the "zero_row" cases list rows whose gradient is all zeros
(ZERO_ROWS_INDICES). The output is an X-macro file:
    EST_TF_CASE(name, optimizer, dtype, gradient, lr, learning_rate_power,
                initial_accumulator_value, l1, l2, l2_shrinkage, beta, epsilon)
    EST_TF_VALUES(name, step, slot, values...)
with the slots after each step (step 1 is after the first). Rerunning it rewrites an
identical file.
"""

import os

import numpy as np
import tensorflow as tf

ROWS, COLS, STEPS = 6, 4, 5
# The rows each step of a sparse case updates; step 3 names row 1 twice.
SPARSE_ROWS = [[0, 3], [1, 3, 5], [3], [1, 1, 4], [0, 5]]
# The "zero_row" cases: rows looked up with an all-zero gradient (row 2 at steps 0 and 1, row 4
# at step 1), where TensorFlow's sparse apply still recomputes the row.
ZERO_ROWS_INDICES = [[0, 2], [2, 4], [2, 4], [0, 4], [2]]
ZERO_ROWS = {(0, 2), (1, 2), (1, 4)}

FTRL_DEFAULTS = dict(learning_rate=0.2, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                     l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                     l2_shrinkage_regularization_strength=0.0, beta=0.0)
FTRL_ALL = dict(learning_rate=0.1, learning_rate_power=-0.3, initial_accumulator_value=0.2,
                l1_regularization_strength=0.05, l2_regularization_strength=0.1,
                l2_shrinkage_regularization_strength=0.1, beta=0.3)


def ftrl(**changes):
    return ("Ftrl", dict(FTRL_DEFAULTS, **changes))


def adagrad(**options):
    return ("Adagrad", dict(dict(learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7), **options))


# name: (optimizer, options, dtypes, gradients)
CASES = {
    "ftrl_defaults": ftrl() + (["float32", "float64"], ["dense", "sparse", "zero_row"]),
    "ftrl_l1": ftrl(l1_regularization_strength=0.3) + (["float32"], ["dense", "sparse"]),
    "ftrl_l2": ftrl(l2_regularization_strength=0.5) + (["float32"], ["dense"]),
    "ftrl_l1_l2": ftrl(l1_regularization_strength=0.1, l2_regularization_strength=0.2)
                  + (["float32", "float64"], ["dense", "sparse"]),
    "ftrl_shrinkage": ftrl(l2_shrinkage_regularization_strength=0.25) + (["float32", "float64"], ["dense", "sparse"]),
    "ftrl_shrinkage_l1_l2": ftrl(l2_shrinkage_regularization_strength=0.25, l1_regularization_strength=0.1,
                                 l2_regularization_strength=0.2) + (["float32"], ["dense"]),
    "ftrl_power_03": ftrl(learning_rate_power=-0.3) + (["float32", "float64"], ["dense", "sparse"]),
    "ftrl_power_0": ftrl(learning_rate_power=0.0) + (["float32"], ["dense"]),
    "ftrl_power_1": ftrl(learning_rate_power=-1.0) + (["float32"], ["dense"]),
    "ftrl_beta": ftrl(beta=0.5) + (["float32", "float64"], ["dense"]),
    "ftrl_accumulator_0": ftrl(initial_accumulator_value=0.0) + (["float32"], ["dense"]),
    "ftrl_all": ("Ftrl", FTRL_ALL) + (["float32", "float64"], ["dense", "sparse", "zero_row"]),
    "ftrl_shrinkage_zero_row": ftrl(l2_shrinkage_regularization_strength=0.25) + (["float32"], ["zero_row"]),
    "adagrad_defaults": adagrad() + (["float32", "float64"], ["dense", "sparse"]),
    "adagrad_lr": adagrad(learning_rate=0.05) + (["float32", "float64"], ["dense", "sparse"]),
    "adagrad_accumulator_0": adagrad(learning_rate=0.05, initial_accumulator_value=0.0) + (["float32"], ["dense"]),
}


def initial(dtype):
    i, j = np.meshgrid(np.arange(ROWS), np.arange(COLS), indexing="ij")
    return (((7 * i + 3 * j) % 11 - 5) / 8.0).astype(dtype)


def gradient_row(step, row, k, dtype):
    j = np.arange(COLS)
    return (((5 * step + 3 * row + 7 * j + k) % 13 - 6) / 16.0).astype(dtype)


def gradient(step, kind, dtype):
    if kind == "dense":
        return tf.constant(np.stack([gradient_row(step, i, 0, dtype) for i in range(ROWS)]))
    indices = (SPARSE_ROWS if kind == "sparse" else ZERO_ROWS_INDICES)[step]
    values = []
    for k, row in enumerate(indices):
        zero = kind == "zero_row" and (step, row) in ZERO_ROWS
        values.append(np.zeros(COLS, dtype) if zero else gradient_row(step, row, k, dtype))
    return tf.IndexedSlices(tf.constant(np.stack(values)), tf.constant(indices, tf.int64),
                            tf.constant([ROWS, COLS], tf.int64))


def make(optimizer, options):
    if optimizer == "Ftrl":
        return tf.keras.optimizers.legacy.Ftrl(**options)
    return tf.keras.optimizers.legacy.Adagrad(**options)


def number(value):
    return repr(float(value))


def main():
    lines = [
        "// Written by make_tensorflow_optimizers.py with TensorFlow %s; do not edit." % tf.__version__,
        "// EST_TF_CASE(name, optimizer, dtype, gradient, lr, learning_rate_power,",
        "//             initial_accumulator_value, l1, l2, l2_shrinkage, beta, epsilon)",
        "// EST_TF_VALUES(name, step, slot, values...): the slot after `step` steps, row-major 6x4",
    ]
    for base, (optimizer, options, dtypes, kinds) in CASES.items():
        for dtype in dtypes:
            for kind in kinds:
                name = "%s/%s/%s" % (base, dtype, kind)
                o = options
                lines.append('EST_TF_CASE("%s", "%s", "%s", "%s", %s, %s, %s, %s, %s, %s, %s, %s)' % (
                    name, optimizer, dtype, kind, number(o["learning_rate"]),
                    number(o.get("learning_rate_power", 0.0)), number(o["initial_accumulator_value"]),
                    number(o.get("l1_regularization_strength", 0.0)),
                    number(o.get("l2_regularization_strength", 0.0)),
                    number(o.get("l2_shrinkage_regularization_strength", 0.0)), number(o.get("beta", 0.0)),
                    number(o.get("epsilon", 0.0))))
                var = tf.Variable(initial(dtype))
                opt = make(optimizer, options)
                slots = ["accumulator", "linear"] if optimizer == "Ftrl" else ["accumulator"]
                for step in range(STEPS):
                    opt.apply_gradients([(gradient(step, kind, dtype), var)])
                    for slot, tensor in [("var", var)] + [(s, opt.get_slot(var, s)) for s in slots]:
                        values = tensor.numpy()
                        assert values.dtype == np.dtype(dtype), (name, slot, values.dtype)
                        lines.append('EST_TF_VALUES("%s", %d, "%s", %s)' % (
                            name, step + 1, slot, ", ".join(number(v) for v in values.reshape(-1))))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorflow_optimizer_values.inc")
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
