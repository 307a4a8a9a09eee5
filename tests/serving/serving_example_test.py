"""A model of the user's own, end to end (examples/serving/): est-serving-example trains and
exports a model_fn est-serve was not built with; the stock est-serve serves the export by its
traced program (no --model), over TensorFlow Serving's REST API and KServe v2's, and its answers
are Estimator::predict's (the example's requests.json); Python's torch.jit.load (Debian's
python3-torch) runs the same model.pt to the same answers, and onnxruntime, run by ONNX_PYTHON
(build/triton-venv, `make serving-clients`), the export's model.onnx (onnx_runtime_check.py).

usage: serving_example_test.py EST_SERVING_EXAMPLE EST_SERVE ONNX_PYTHON
Exits 0 when every check passes, 1 naming the first that failed; an ONNX_PYTHON without
onnxruntime fails the test, naming `make serving-clients`.
"""

import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "blobs_classifier"
TOLERANCE = 1e-6
START_TIMEOUT_S = 60


def fail(message):
    print(f"failed: {message}")
    sys.exit(1)


def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def check_answers(what, classes, probabilities, expected):
    if list(classes) != expected["class"]:
        fail(f"{what}: classes {list(classes)}, Estimator::predict's {expected['class']}")
    for row, (got, want) in enumerate(zip(probabilities, expected["probabilities"])):
        difference = max(abs(a - b) for a, b in zip(got, want))
        if difference > TOLERANCE:
            fail(f"{what}: row {row}'s probabilities differ from Estimator::predict's by {difference}")
    print(f"ok: {what} answers what Estimator::predict does")


def serve_and_check(serve, base, expected, work):
    rest_port_file = os.path.join(work, "rest_port")
    log = open(os.path.join(work, "serve.log"), "w")
    server = subprocess.Popen([serve, "--model_base_path", base, "--port", "0", "--rest_api_port", "0",
                               "--rest-port-file", rest_port_file], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not os.path.exists(rest_port_file):
            if server.poll() is not None or time.monotonic() > deadline:
                fail(f"est-serve did not start:\n{open(log.name).read()}")
            time.sleep(0.05)
        port = int(open(rest_port_file).read())
        rows = expected["features"]
        predictions = post(port, f"/v1/models/{MODEL}:predict", {"instances": rows})["predictions"]
        check_answers("est-serve's TF Serving REST :predict", [p["class"] for p in predictions],
                      [p["probabilities"] for p in predictions], expected)
        # :classify of the rows as tf.train.Examples: each class's probability, labelled by its index.
        results = post(port, f"/v1/models/{MODEL}:classify",
                       {"examples": [{"features": [float(v) for v in row]} for row in rows]})["results"]
        for row, pairs in enumerate(results):
            if [label for label, _ in pairs] != [str(i) for i in range(len(pairs))]:
                fail(f":classify row {row}: labels {[label for label, _ in pairs]}, expected the class indices")
        check_answers("est-serve's TF Serving REST :classify",
                      [max(range(len(pairs)), key=lambda i: pairs[i][1]) for pairs in results],
                      [[score for _, score in pairs] for pairs in results], expected)
        answer = post(port, f"/v2/models/{MODEL}/infer", {"inputs": [
            {"name": "features", "shape": [len(rows), len(rows[0])], "datatype": "FP32", "data": rows}]})
        outputs = {output["name"]: output for output in answer["outputs"]}
        probabilities = outputs["probabilities"]["data"]
        width = outputs["probabilities"]["shape"][1]
        check_answers("est-serve's KServe v2 infer", outputs["class"]["data"],
                      [probabilities[i:i + width] for i in range(0, len(probabilities), width)], expected)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    if "running its traced program" not in open(log.name).read():
        fail("est-serve did not say it runs the export's traced program")


def check_torch_jit_load(program, expected):
    script = ("import json, sys, torch\n"
              "program = torch.jit.load(sys.argv[1])\n"
              "with torch.no_grad():\n"
              "    out = program(torch.tensor(json.loads(sys.argv[2]), dtype=torch.float32))\n"
              "print(json.dumps({'class': out['class'].tolist(), 'probabilities': out['probabilities'].tolist()}))\n")
    result = subprocess.run(["/usr/bin/python3", "-c", script, program, json.dumps(expected["features"])],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        fail(f"torch.jit.load: {result.stderr.strip()}")
    answer = json.loads(result.stdout)
    check_answers("Python's torch.jit.load of model.pt", answer["class"], answer["probabilities"], expected)


def check_onnxruntime(python, export, expected, work):
    """Runs the export's model.onnx in onnxruntime on the first 1, 7 and 8 rows of the requests."""
    if not os.path.exists(python) or subprocess.run([python, "-c", "import onnxruntime, onnx"],
                                                    capture_output=True).returncode != 0:
        fail(f"{python} cannot run onnxruntime: `make serving-clients` (part of `make test`) installs it")

    def array(name, values, dtype, shape):
        path = os.path.join(work, f"{name}.bin")
        with open(path, "wb") as file:
            file.write(struct.pack(f"<{len(values)}{dtype}", *values))
        return {"file": path, "dtype": {"f": "float32", "q": "int64"}[dtype], "shape": shape}

    rows = expected["features"]
    cases = []
    for batch in (1, 7, len(rows)):
        flat = [value for row in rows[:batch] for value in row]
        probabilities = [value for row in expected["probabilities"][:batch] for value in row]
        cases.append({"batch": batch,
                      "inputs": {"features": array(f"features_{batch}", flat, "f", [batch, len(rows[0])])},
                      "expected": {"class": array(f"class_{batch}", expected["class"][:batch], "q", [batch]),
                                   "probabilities": array(f"probabilities_{batch}", probabilities, "f",
                                                          [batch, len(expected["probabilities"][0])])}})
    index = os.path.join(work, "onnx_index.json")
    with open(index, "w") as file:
        json.dump({"models": [{"name": MODEL, "export": export, "opset": 17, "cases": cases}]}, file)
    checked = subprocess.run([python, os.path.join(HERE, "onnx_runtime_check.py"), index, "1e-5"],
                             capture_output=True, text=True, timeout=300)
    print(checked.stdout.strip())
    if checked.returncode != 0:
        fail(f"onnxruntime on the example's model.onnx:\n{checked.stdout[-3000:]}{checked.stderr[-3000:]}")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    example, serve, onnx_python = sys.argv[1:]
    work = tempfile.mkdtemp(prefix="serving_example_")
    model_dir = os.path.join(work, "model")
    trained = subprocess.run([example, model_dir], capture_output=True, text=True, timeout=600)
    print(trained.stdout.strip())
    if trained.returncode != 0:
        fail(f"est-serving-example exited with status {trained.returncode}:\n{trained.stderr[-3000:]}")
    with open(os.path.join(model_dir, "requests.json")) as file:
        expected = json.load(file)
    programs = glob.glob(os.path.join(model_dir, "export", "final", "*", "model.pt"))
    if len(programs) != 1:
        fail(f"expected one exported model.pt, found {programs}")
    serve_and_check(serve, os.path.join(model_dir, "export", "final"), expected, work)
    check_torch_jit_load(programs[0], expected)
    check_onnxruntime(onnx_python, os.path.dirname(programs[0]), expected, work)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
