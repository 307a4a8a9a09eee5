"""Exports' ONNX files in onnxruntime: onnx_fixture trains and exports est-train's three models
and the serving tests' regression models with ExportOptions().onnx(opset), writing requests of
1, 7 and 64 examples and Estimator::predict's answers; onnx_runtime_check.py, run by PYTHON (a
Python with onnxruntime and onnx: build/triton-venv, `make serving-clients`), runs each model.onnx
in onnxruntime and compares (floats within 1e-5). Python's torch.jit.load (Debian's python3-torch,
where installed) runs each export's model.pt to the same answers.

usage: onnx_runtime_test.py ONNX_FIXTURE PYTHON
Exits 0 when every check passes, 1 naming the first that failed; a PYTHON without onnxruntime
fails the test, naming `make serving-clients`.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-5


def fail(message):
    print(f"failed: {message}")
    sys.exit(1)


def check_runtime(python):
    if not os.path.exists(python):
        fail(f"{python} is missing: `make serving-clients` (part of `make test`) creates it with onnxruntime and onnx")
    probe = subprocess.run([python, "-c", "import onnxruntime, onnx"], capture_output=True, text=True)
    if probe.returncode != 0:
        fail(f"{python} cannot import onnxruntime and onnx ({probe.stderr.strip().splitlines()[-1]}): "
             "`make serving-clients` (part of `make test`) installs them")


def check_torch_jit_load(index):
    """Runs each export's model.pt in Python's torch.jit.load on the same requests."""
    try:
        import numpy as np
        import torch
    except ImportError as error:
        print(f"skipped: torch.jit.load of the programs ({error}; Debian's python3-torch provides it)")
        return
    for model in index["models"]:
        program = torch.jit.load(os.path.join(model["export"], "model.pt"))
        largest = 0.0
        for case in model["cases"]:
            arrays = [np.fromfile(entry["file"], dtype=np.dtype(entry["dtype"])).reshape(entry["shape"])
                      for entry in case["inputs"].values()]
            with torch.no_grad():
                answers = program(*[torch.from_numpy(array) for array in arrays])
            for output, entry in case["expected"].items():
                want = np.fromfile(entry["file"], dtype=np.dtype(entry["dtype"])).reshape(entry["shape"])
                got = answers[output].numpy()
                where = f"torch.jit.load of {model['name']}'s model.pt, batch size {case['batch']}, output '{output}'"
                if got.shape != want.shape:
                    fail(f"{where}: shape {list(got.shape)}; Estimator::predict's {list(want.shape)}")
                if np.issubdtype(want.dtype, np.floating):
                    difference = float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0))
                    largest = max(largest, difference)
                    if not difference <= TOLERANCE:
                        fail(f"{where}: differs from Estimator::predict's by {difference:.3g}")
                elif not np.array_equal(got, want):
                    fail(f"{where}: differs from Estimator::predict's")
        print(f"ok: torch.jit.load of {model['name']}'s model.pt answers what Estimator::predict does; "
              f"largest float difference {largest:.3g}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    fixture, python = sys.argv[1:]
    check_runtime(python)
    work = tempfile.mkdtemp(prefix="onnx_runtime_")
    exported = subprocess.run([fixture, work], capture_output=True, text=True, timeout=900)
    print(exported.stdout.strip())
    if exported.returncode != 0:
        fail(f"onnx_fixture exited with status {exported.returncode}:\n{exported.stderr[-3000:]}")
    index_path = os.path.join(work, "index.json")
    checked = subprocess.run([python, os.path.join(HERE, "onnx_runtime_check.py"), index_path, str(TOLERANCE)],
                             capture_output=True, text=True, timeout=900)
    print(checked.stdout.strip())
    if checked.returncode != 0:
        fail(f"onnxruntime's answers differ, or a model.onnx was refused:\n{checked.stderr[-3000:]}")
    with open(index_path) as file:
        check_torch_jit_load(json.load(file))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
