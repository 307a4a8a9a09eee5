"""Writes tensorflow_schedule_values.inc, the learning rates that TensorFlow's own schedules
give, for tests/estimator/schedules/learning_rate_schedule_test.cc.

Run once, by hand, with TensorFlow 2.15 (tensorflow-cpu 2.15.1 was used; CI does not run it):

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu==2.15.1
    /tmp/tfvenv/bin/python tests/estimator/schedules/make_tensorflow_schedules.py

Every schedule is computed in float64: the initial learning rate and every other real
parameter are float64 values (TensorFlow casts a Python float parameter such as m_mul through
a float32 tensor first, which rounds it), so the C++ test compares to within rounding. Each line of the output is
    {"CASE", STEP, VALUE},
where CASE names a schedule of CASES below and the C++ test builds the same schedule under
the same name. Rerunning it rewrites an identical file.
"""

import os

import numpy as np
import tensorflow as tf

S = tf.keras.optimizers.schedules
F = np.float64

CASES = {
    "piecewise": (S.PiecewiseConstantDecay([100, 200], [F(1.0), F(0.5), F(0.1)]),
                  [0, 1, 99, 100, 101, 199, 200, 201, 1000]),
    "exponential": (S.ExponentialDecay(F(0.1), 100, F(0.96)), [0, 1, 50, 99, 100, 150, 1000]),
    "exponential_staircase": (S.ExponentialDecay(F(0.1), 100, F(0.96), staircase=True),
                              [0, 1, 50, 99, 100, 150, 1000]),
    "polynomial": (S.PolynomialDecay(F(0.1), 100, F(0.001), power=F(2.0)), [0, 1, 50, 99, 100, 101, 1000]),
    "polynomial_cycle": (S.PolynomialDecay(F(0.1), 100, F(0.001), power=F(0.5), cycle=True),
                         [0, 1, 50, 99, 100, 101, 150, 250, 1000]),
    "inverse_time": (S.InverseTimeDecay(F(0.1), 10, F(0.5)), [0, 1, 9, 10, 15, 1000]),
    "inverse_time_staircase": (S.InverseTimeDecay(F(0.1), 10, F(0.5), staircase=True), [0, 1, 9, 10, 15, 1000]),
    "cosine": (S.CosineDecay(F(0.1), 100, alpha=F(0.1)), [0, 1, 25, 50, 99, 100, 150]),
    "cosine_restarts": (S.CosineDecayRestarts(F(0.1), 10, t_mul=F(2.0), m_mul=F(0.9), alpha=F(0.05)),
                        [0, 1, 5, 9, 10, 11, 29, 30, 31, 69, 70, 100, 1000]),
    "cosine_restarts_even": (S.CosineDecayRestarts(F(0.1), 10, t_mul=F(1.0), m_mul=F(0.5)),
                             [0, 1, 5, 9, 10, 11, 29, 30, 31, 100]),
    # Keras's own warmup: from 0.01 to 0.1 over 20 steps, then CosineDecay(0.1, 100, alpha=0.1).
    "warmup_cosine": (S.CosineDecay(F(0.01), 100, alpha=F(0.1), warmup_target=F(0.1), warmup_steps=20),
                      [0, 1, 10, 19, 20, 21, 70, 119, 120, 121, 500]),
}


def main():
    lines = [
        "// Written by make_tensorflow_schedules.py with TensorFlow %s; do not edit." % tf.__version__,
        "// {case, global step, TensorFlow's learning rate (float64)}",
    ]
    for name, (schedule, steps) in CASES.items():
        for step in steps:
            value = schedule(tf.constant(step, tf.int64))
            assert value.dtype == tf.float64, (name, value.dtype)
            lines.append('{"%s", %d, %s},' % (name, step, repr(float(value.numpy()))))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorflow_schedule_values.inc")
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
