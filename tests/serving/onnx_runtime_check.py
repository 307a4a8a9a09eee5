"""Runs exports' model.onnx in onnxruntime and compares the answers with Estimator::predict's.

Run by a Python with onnxruntime and onnx (build/triton-venv, `make serving-clients`), for
onnx_runtime_test.py and serving_example_test.py. INDEX_JSON lists the exports and their cases
as onnx_fixture.cc writes it:

  {"models": [{"name", "export", "opset", "cases": [{"batch", "inputs": {name: {"file", "dtype",
   "shape"}}, "expected": {name: {"file", "dtype", "shape"}}}]}]}

Each model.onnx must pass onnx.checker.check_model (with shape inference) and declare the opset
listed; float answers must be within TOLERANCE (default 1e-5) of the expected, others equal.

usage: onnx_runtime_check.py INDEX_JSON [TOLERANCE]
Exits 0 when every check passes, 1 naming each that failed.
"""

import json
import os
import sys

import numpy as np
import onnx
import onnxruntime


def read_array(entry):
    return np.fromfile(entry["file"], dtype=np.dtype(entry["dtype"])).reshape(entry["shape"])


def check_model(model, tolerance):
    """Returns (failures, the largest difference of a float answer)."""
    name = model["name"]
    path = os.path.join(model["export"], "model.onnx")
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    opsets = {entry.domain: entry.version for entry in proto.opset_import}
    if opsets.get("", opsets.get("ai.onnx")) != model["opset"]:
        return [f"{name}: model.onnx declares opsets {opsets}; expected {model['opset']}"], 0.0
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    output_names = [output.name for output in session.get_outputs()]
    failures = []
    largest = 0.0
    for case in model["cases"]:
        feeds = {input_name: read_array(entry) for input_name, entry in case["inputs"].items()}
        answers = dict(zip(output_names, session.run(None, feeds)))
        for output, entry in case["expected"].items():
            where = f"{name}, batch size {case['batch']}, output '{output}'"
            if output not in answers:
                failures.append(f"{where}: onnxruntime gave no such output (it gave {output_names})")
                continue
            got, want = answers[output], read_array(entry)
            if got.shape != want.shape or got.dtype != want.dtype:
                failures.append(f"{where}: onnxruntime gave {got.dtype} {list(got.shape)}; "
                                f"Estimator::predict {want.dtype} {list(want.shape)}")
            elif np.issubdtype(want.dtype, np.floating):
                difference = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0.0))
                largest = max(largest, difference)
                if not difference <= tolerance:
                    failures.append(f"{where}: differs from Estimator::predict's by {difference:.3g} "
                                    f"(tolerance {tolerance:g})")
            elif not np.array_equal(got, want):
                count = int(np.sum(got != want))
                failures.append(f"{where}: {count} of {want.size} values differ from Estimator::predict's")
    return failures, largest


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    tolerance = float(sys.argv[2]) if len(sys.argv) == 3 else 1e-5
    with open(sys.argv[1]) as file:
        index = json.load(file)
    all_failures = []
    for model in index["models"]:
        try:
            failures, largest = check_model(model, tolerance)
        except Exception as error:  # a checker's or onnxruntime's refusal names the model
            failures, largest = [f"{model['name']}: {type(error).__name__}: {error}"], 0.0
        batches = ", ".join(str(case["batch"]) for case in model["cases"])
        if failures:
            all_failures += failures
            for failure in failures:
                print(f"failed: {failure}")
        else:
            print(f"ok: {model['name']} (opset {model['opset']}): onnxruntime {onnxruntime.__version__} answers what "
                  f"Estimator::predict does at batch sizes {batches}; largest float difference {largest:.3g}")
    return 1 if all_failures else 0


if __name__ == "__main__":
    sys.exit(main())
