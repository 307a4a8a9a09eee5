"""Our canned estimators train as TensorFlow 2.15's do: on ctr_data.py's click-through data
(100k training rows, 20k held out, seed 73), TensorFlow's own DNNLinearCombinedClassifier,
LinearClassifier and DNNRegressor (tensorflow_canned.py: its columns, Ftrl 0.1 / Adagrad 0.05,
batch 256, file order) train STEPS steps, and ours (apps/bench/canned_bench, the same columns and
rates) train as many from TensorFlow's initial checkpoint (model.ckpt-0, --warm-start-from), so
that random initial values, which LibTorch and TensorFlow draw differently, leave nothing to
chance. The held-out AUCs of the classifiers must agree within 0.005 and the regressor's average
losses within 1%; what differs is then the arithmetic of the columns, heads, optimizers and input.

TensorFlow runs from its virtual environment (`make tensorflow` makes build/tf-venv): where that
is missing or cannot import tensorflow, the test fails, naming it. Exits 0 when every check
passed, 1 otherwise.

usage: tensorflow_canned_auc_test.py CANNED_BENCH TENSORFLOW_PYTHON
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 1000
RATES = ["--linear-learning-rate", "0.1", "--dnn-learning-rate", "0.05"]
TIMEOUT_S = 600
# (estimator, metric compared, bound, whether the bound is relative)
CHECKS = [("wide_deep", "auc", 0.005, False), ("linear", "auc", 0.005, False),
          ("dnn_regressor", "average_loss", 0.01, True)]


def run(command):
    """The command's stdout; exits naming it and its output when it fails."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)} exited with {done.returncode}:\n{done.stdout[-3000:]}"
                 f"\n{done.stderr[-3000:]}")
    return done.stdout


def last_json(output, key=None):
    """The last line of `output` that is a JSON object (with `key`, when given)."""
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            value = json.loads(line)
            if key is None or key in value:
                return value
    sys.exit(f"FAILED: no JSON line in:\n{output[-3000:]}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bench, python = sys.argv[1:]
    probe = subprocess.run([python, "-c", "import tensorflow"], capture_output=True, text=True) \
        if os.path.exists(python) else None
    if probe is None or probe.returncode != 0:
        why = "is missing" if probe is None else f"cannot import tensorflow: {probe.stderr.strip()[-300:]}"
        sys.exit(f"FAILED: {python} {why} (`make tensorflow` makes it)")
    work = tempfile.mkdtemp(prefix="tensorflow_canned_auc_")
    data = os.path.join(work, "ctr")
    run([python, os.path.join(HERE, "ctr_data.py"), data, "--train-rows", "100000", "--eval-rows", "20000",
         "--seed", "73"])
    failures = []
    for estimator, metric, bound, relative in CHECKS:
        theirs = last_json(run([python, os.path.join(HERE, "tensorflow_canned.py"), "--data-dir", data,
                                "--estimator", estimator, "--steps", str(STEPS), "--model-dir",
                                os.path.join(work, "tensorflow")] + RATES))["metrics"][metric]
        initial = os.path.join(work, "tensorflow", estimator, "model.ckpt-0")
        ours = last_json(run([bench, "--data-dir", data, "--estimator", estimator, "--steps", str(STEPS),
                              "--eval-every", "0", "--threads", "1", "--warm-start-from", initial] + RATES),
                         "bench")["metrics"][metric]
        difference = abs(ours - theirs) / (abs(theirs) if relative else 1.0)
        verdict = "ok" if difference <= bound else "FAILED"
        print(f"{verdict}: {estimator} {metric} after {STEPS} steps: ours {ours:.6f}, TensorFlow's {theirs:.6f} "
              f"(difference {difference:.2e}{' relative' if relative else ''}, bound {bound})")
        if verdict != "ok":
            failures.append(estimator)
    if failures:
        print(f"kept {work} for a look")
        return 1
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
