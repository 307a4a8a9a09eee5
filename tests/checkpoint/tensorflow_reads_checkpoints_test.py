"""TensorFlow reads our checkpoints: checkpoint_fixture writes one of every dtype, shape and some
blobs; est-train trains its CNN a few steps and saves one, and its canned wide & deep
(examples/canned/wide_deep.json on records of tests/estimator/canned/ctr_data.py), whose
variables must carry TensorFlow's names. TensorFlow's own readers (tf.train.list_variables,
tf.train.load_checkpoint, tf.compat.v1.train.NewCheckpointReader) must list every tensor with its
dtype and shape and return the very bytes we stored: the values checkpoint_fixture wrote, and for
est-train's checkpoints what our CheckpointReader reads (checkpoint_fixture dump). Blobs are the
DT_STRING scalars `_est_blobs/<name>`.

The driver runs under /usr/bin/python3 and runs the checks with TensorFlow's Python (`make
tensorflow` makes build/tf-venv): where that is missing or cannot import tensorflow, the test
fails, naming it. Exits 0 when every check passed, 1 otherwise.

usage: tensorflow_reads_checkpoints_test.py CHECKPOINT_FIXTURE EST_TRAIN TENSORFLOW_PYTHON
       TENSORFLOW_PYTHON tensorflow_reads_checkpoints_test.py check PREFIX EXPECTED_JSON
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

BLOB_PREFIX = "_est_blobs/"
TIMEOUT_S = 600


def check(prefix, expected_path):
    """Under TensorFlow's Python: every tensor and blob of `expected_path` as TensorFlow reads it."""
    import numpy as np
    import tensorflow as tf

    with open(expected_path) as f:
        expected = json.load(f)
    failures = []
    variables = dict(tf.train.list_variables(prefix))
    wanted = dict((name, value["shape"]) for name, value in expected["tensors"].items())
    wanted.update((BLOB_PREFIX + name, []) for name in expected["blobs"])
    if {k: list(v) for k, v in variables.items()} != wanted:
        failures.append(f"tf.train.list_variables gives {sorted(variables.items())}, "
                        f"expected {sorted(wanted.items())}")
    loaded = tf.train.load_checkpoint(prefix)
    legacy = tf.compat.v1.train.NewCheckpointReader(prefix)
    dtypes = loaded.get_variable_to_dtype_map()
    for name, value in expected["tensors"].items():
        if dtypes.get(name) != tf.as_dtype(value["dtype"]):
            failures.append(f"{name}: TensorFlow's dtype {dtypes.get(name)}, expected {value['dtype']}")
            continue
        for reader_name, reader in (("load_checkpoint", loaded), ("NewCheckpointReader", legacy)):
            array = np.asarray(reader.get_tensor(name))
            stored = bytes.fromhex(value["hex"])
            if list(array.shape) != value["shape"] or array.tobytes() != stored:
                failures.append(f"{name}: {reader_name} reads shape {list(array.shape)}, "
                                f"{len(array.tobytes())} bytes that differ from the {len(stored)} stored")
    for name, hex_bytes in expected["blobs"].items():
        value = loaded.get_tensor(BLOB_PREFIX + name)
        if dtypes.get(BLOB_PREFIX + name) != tf.string or value != bytes.fromhex(hex_bytes):
            failures.append(f"blob {name}: TensorFlow reads {value[:40]!r}..., not the stored bytes")
    if "global_step" in expected["tensors"]:
        step = int(loaded.get_tensor("global_step"))
        if step != expected["global_step"]:
            failures.append(f"global_step: TensorFlow reads {step}, expected {expected['global_step']}")
    for failure in failures:
        print(f"FAILED {prefix}: {failure}")
    print(f"{prefix}: {len(expected['tensors'])} tensors and {len(expected['blobs'])} blobs checked, "
          f"{len(failures)} failures")
    return 0 if not failures else 1


def unusable(python):
    """Why `python` cannot run the checks; None when it can."""
    if not os.path.exists(python):
        return f"{python} is missing (`make tensorflow` creates it)"
    probe = subprocess.run([python, "-c", "import tensorflow"], capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    if probe.returncode != 0:
        lines = probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"]
        return f"{python} cannot import tensorflow (`make tensorflow` installs it): {lines[-1]}"
    return None


def run(command, **kwargs):
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, timeout=TIMEOUT_S, **kwargs).returncode


# Variables of est-train's canned wide & deep under TensorFlow's names (TENSORFLOW_CANNED_FACTS.md).
CANNED_NAMES = ["dnn/hiddenlayer_0/kernel", "dnn/logits/bias", "linear/linear_model/bias_weights",
                "linear/linear_model/category_X_device/weights",
                "dnn/input_from_feature_columns/input_layer/user_embedding/embedding_weights"]


def check_canned(fixture, est_train, python, work, env):
    """est-train --model canned trains examples/canned/wide_deep.json on ctr_data.py's records for a
    few steps; TensorFlow reads its checkpoint, whose variables carry TensorFlow's names."""
    source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    canned = os.path.join(work, "canned")
    os.makedirs(os.path.join(canned, "data"))
    shutil.copy(os.path.join(source, "examples", "canned", "wide_deep.json"), canned)
    status = run([python, os.path.join(source, "tests", "estimator", "canned", "ctr_data.py"),
                  os.path.join(canned, "data"), "--train-rows", "2000", "--eval-rows", "256", "--seed", "73"],
                 env=env)
    model_dir = os.path.join(canned, "model")
    status |= run([est_train, "--model", "canned", "--spec", os.path.join(canned, "wide_deep.json"),
                   "--model-dir", model_dir, "--max-steps", "5", "--save-checkpoints-steps", "5",
                   "--eval-steps", "1", "--log-step-count-steps", "5"])
    prefix = os.path.join(model_dir, "model.ckpt-5")
    dump = os.path.join(work, "canned.json")
    status |= run([fixture, "dump", prefix, dump])
    if status != 0:
        return status
    with open(dump) as f:
        names = json.load(f)["tensors"]
    missing = [name for name in CANNED_NAMES if name not in names]
    if missing:
        print(f"FAILED {prefix}: no {missing} among {sorted(names)}")
        return 1
    return run([python, os.path.abspath(__file__), "check", prefix, dump], env=env)


def main(argv):
    if len(argv) == 4 and argv[1] == "check":
        return check(argv[2], argv[3])
    if len(argv) != 4:
        print(__doc__)
        return 2
    fixture, est_train, python = argv[1:]
    why = unusable(python)
    if why:
        print(f"FAILED: TensorFlow's readers cannot run: {why}")
        return 1
    work = tempfile.mkdtemp(prefix="est_tensorflow_reads_")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    ours = os.path.join(work, "fixture", "model.ckpt-938")
    os.makedirs(os.path.dirname(ours))
    model_dir = os.path.join(work, "cnn")
    status = 0
    status |= run([fixture, "write", ours, os.path.join(work, "fixture.json")])
    status |= run([python, os.path.abspath(__file__), "check", ours, os.path.join(work, "fixture.json")],
                  env=env)
    status |= run([est_train, "--model", "fashion_mnist_cnn", "--model-dir", model_dir, "--max-steps", "5",
                   "--save-checkpoints-steps", "5", "--eval-steps", "1", "--log-step-count-steps", "5"])
    cnn = os.path.join(model_dir, "model.ckpt-5")
    status |= run([fixture, "dump", cnn, os.path.join(work, "cnn.json")])
    status |= run([python, os.path.abspath(__file__), "check", cnn, os.path.join(work, "cnn.json")], env=env)
    status |= check_canned(fixture, est_train, python, work, env)
    if status == 0:
        shutil.rmtree(work)
    else:
        print(f"FAILED: the files are kept in {work}")
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
