"""Checks est-serve's TensorFlow Serving REST API with requests, sending the requests as
TensorFlow Serving's REST API documentation writes them: model status (by name and by version),
metadata (the SignatureDefMap), :predict in the row format ("instances": a list, or a list of
objects naming the inputs) and the columnar format ("inputs") against what Estimator::predict
answered, the errors of bad requests ({"error": ...} and the HTTP status), and, where the server
has them, its token and TLS; or, with --records, :predict of tf.train.Example records as
{"b64": ...} values. Run by real_clients_test.py in the virtual environment of TensorFlow (which
has requests); exits 0 when every check passes, 1 naming the first that failed.

usage: tf_serving_rest_check.py --url HOST:PORT --model NAME --version V --expected FILE
                                [--token T] [--ca FILE] [--records]
"""

import base64
import json
import sys

import numpy as np
import requests

from client_check_common import (CALL_TIMEOUT_S, Y_TOLERANCE, Versioned, check, check_message,
                                 load_expected, parse_arguments, run_checks)


class Checks:
    """The checks, against one server."""

    def __init__(self, args):
        self.model = args.model
        self.version = args.version
        self.base = ("https://" if args.ca else "http://") + args.url
        self.session = requests.Session()
        if args.token:
            self.session.headers["Authorization"] = "Bearer " + args.token
        self.verify = args.ca or True
        self.x, self.y, self.positive, records = load_expected(args.expected)
        self.records = records
        self.versioned = Versioned(args.expected)

    def get(self, path, session=None):
        return (session or self.session).get(self.base + path, timeout=CALL_TIMEOUT_S, verify=self.verify)

    def post(self, path, body, session=None):
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return (session or self.session).post(self.base + path, data=data, timeout=CALL_TIMEOUT_S,
                                              verify=self.verify)

    def predict(self, body, path=None):
        response = self.post(path or f"/v1/models/{self.model}:predict", body)
        check(response.status_code == 200, f"predict: HTTP {response.status_code}: {response.text}")
        return response.json()

    def refused(self, response, status, words, what):
        check(response.status_code == status, f"{what}: HTTP {response.status_code}, expected {status} "
              f"({response.text})")
        body = response.json()
        check(set(body) == {"error"}, f"{what}: the body is not {{\"error\": ...}}: {body}")
        check_message(body["error"], words, what)

    def check_rows(self, y, positive, rows, what):
        y = np.array(y, dtype=np.float32)
        check(y.shape == (len(rows),), f"{what}: y has shape {y.shape}")
        difference = np.abs(y - self.y[rows]).max()
        check(difference <= Y_TOLERANCE, f"{what}: y differs from Estimator::predict's by {difference}")
        check(list(positive) == list(self.positive[rows]), f"{what}: positive {positive}, expected "
              f"{self.positive[rows]}")

    def status(self):
        for path in (f"/v1/models/{self.model}", f"/v1/models/{self.model}/versions/{self.version}"):
            response = self.get(path)
            check(response.status_code == 200, f"GET {path}: HTTP {response.status_code}: {response.text}")
            status = response.json()["model_version_status"]
            check(len(status) == 1 and status[0]["version"] == self.version and status[0]["state"] == "AVAILABLE"
                  and status[0]["status"]["error_code"] == "OK", f"GET {path}: {status}")

    def metadata(self):
        response = self.get(f"/v1/models/{self.model}/metadata")
        check(response.status_code == 200, f"metadata: HTTP {response.status_code}: {response.text}")
        body = response.json()
        check(body["model_spec"]["name"] == self.model and body["model_spec"]["version"] == self.version,
              f"metadata's model_spec {body['model_spec']}")
        signature = body["metadata"]["signature_def"]["signature_def"]["serving_default"]
        check(signature["method_name"] == "tensorflow/serving/predict", f"method {signature['method_name']}")
        x = signature["inputs"]["x"]
        check(x["dtype"] == "DT_FLOAT" and [d["size"] for d in x["tensor_shape"]["dim"]] == ["-1", "3"],
              f"input x {x}")
        check(sorted(signature["outputs"]) == ["positive", "y"], f"outputs {sorted(signature['outputs'])}")

    def prediction(self):
        rows = list(range(len(self.x)))
        # The row format: a list of instances, each the one input's value.
        predictions = self.predict({"instances": self.x.tolist()})["predictions"]
        check(len(predictions) == len(rows), f"{len(predictions)} predictions for {len(rows)} instances")
        self.check_rows([p["y"] for p in predictions], [p["positive"] for p in predictions], rows, "instances")
        # The row format with named inputs, and the signature by name.
        named = self.predict({"signature_name": "serving_default",
                              "instances": [{"x": row} for row in self.x.tolist()]})["predictions"]
        self.check_rows([p["y"] for p in named], [p["positive"] for p in named], rows, "named instances")
        # The columnar format, with the version in the path.
        outputs = self.predict({"inputs": {"x": self.x.tolist()}},
                               path=f"/v1/models/{self.model}/versions/{self.version}:predict")["outputs"]
        self.check_rows(outputs["y"], outputs["positive"], rows, "columnar inputs")
        single = self.predict({"inputs": self.x[:1].tolist()})["outputs"]
        self.check_rows(single["y"], single["positive"], [0], "one unnamed columnar input")

    def versions(self):
        """A second model, of two versions with the labels "stable" and "canary", as TF Serving's
        REST API names them in the path: /labels/L and /versions/V; GET lists both versions."""
        versioned = self.versioned
        response = self.get(f"/v1/models/{versioned.name}")
        check(response.status_code == 200, f"GET {versioned.name}: HTTP {response.status_code}: {response.text}")
        versions = [status["version"] for status in response.json()["model_version_status"]]
        check(versions == [versioned.first, versioned.newest], f"GET {versioned.name}: versions {versions}")
        base = f"/v1/models/{versioned.name}"
        for path, y in ((f"{base}/labels/stable", self.y), (f"{base}/labels/canary", versioned.y),
                        (f"{base}/versions/{versioned.first}", self.y), (base, versioned.y)):
            predictions = self.predict({"instances": self.x.tolist()}, path=path + ":predict")["predictions"]
            versioned.check_y([p["y"] for p in predictions], y, path)
        self.refused(self.post(f"{base}/labels/beta:predict", {"instances": self.x.tolist()}), 400, ["beta"],
                     "an unknown label")

    def regress(self):
        """:regress of examples written as JSON objects, as TF Serving's REST API documentation
        writes them, answers y; with a context; :classify of a model without class scores is
        400 naming the outputs it needs."""
        path = f"/v1/models/{self.model}:regress"
        response = self.post(path, {"examples": [{"x": row} for row in self.x.tolist()]})
        check(response.status_code == 200, f":regress: HTTP {response.status_code}: {response.text}")
        self.check_y(response.json()["results"], "regress")
        response = self.post(path, {"signature_name": "serving_default", "context": {"x": self.x[0].tolist()},
                                    "examples": [{}, {}]})
        check(response.status_code == 200, f":regress with a context: HTTP {response.status_code}: {response.text}")
        results = response.json()["results"]
        check(len(results) == 2 and all(abs(r - float(self.y[0])) <= Y_TOLERANCE for r in results),
              f":regress with a context: {results}, expected {self.y[0]} twice")
        self.refused(self.post(f"/v1/models/{self.model}:classify", {"examples": [{"x": self.x[0].tolist()}]}), 400,
                     ["'scores'", "'probabilities'"], ":classify of a regression model")
        self.refused(self.post(path, {"instances": [[1.0, 2.0, 3.0]]}), 400, ["examples"], ":regress without examples")
        self.refused(self.post(path, {"examples": [{"x": [1, 2, 3]}]}), 400, ["'x'"], "int64 values for floats")

    def check_y(self, y, what):
        y = np.array(y, dtype=np.float32)
        check(y.shape == self.y.shape, f"{what}: y has shape {y.shape}")
        difference = np.abs(y - self.y).max()
        check(difference <= Y_TOLERANCE, f"{what}: y differs from Estimator::predict's by {difference}")

    def bad_requests(self):
        path = f"/v1/models/{self.model}:predict"
        self.refused(self.post(path, '{"instances": [[1, 2, 3]'), 400, ["JSON"], "JSON cut short")
        self.refused(self.post(path, {"instances": [[1.0, 2.0]]}), 400, ["'x'"], "a wrong shape")
        self.refused(self.post(path, {"instances": [[1.0, 2.0, 3.0], [1.0]]}), 400, ["'x'", "ragged"],
                     "ragged instances")
        self.refused(self.post(path, {"instances": [["a", "b", "c"]]}), 400, ["'x'"], "strings for floats")
        self.refused(self.post(path, {"inputs": {"z": [[1.0, 2.0, 3.0]]}}), 400, ["'z'"], "an unknown input")
        self.refused(self.post(path, {"instances": [], "inputs": []}), 400, ["instances", "inputs"],
                     "both formats")
        self.refused(self.post("/v1/models/no_such_model:predict", {"instances": [[1.0, 2.0, 3.0]]}), 404,
                     ["no_such_model"], "an unknown model")
        self.refused(self.get(f"/v1/models/{self.model}/versions/{self.version}0"), 404, [self.version + "0"],
                     "an unknown version's status")
        self.refused(self.post(f"/v1/models/{self.model}:explain", {"instances": []}), 404, ["explain"],
                     "an unknown method")

    def records_prediction(self):
        """The records as {"b64": ...} instances of the one DT_STRING input."""
        instances = [{"b64": base64.b64encode(record).decode()} for record in self.records]
        predictions = self.predict({"instances": instances})["predictions"]
        rows = list(range(len(self.records)))
        self.check_rows([p["y"] for p in predictions], [p["positive"] for p in predictions], rows, "b64 records")

    def token(self):
        """Without the token, or with another one, calls are refused with 401."""
        bare = requests.Session()
        self.refused(self.get(f"/v1/models/{self.model}", session=bare), 401, ["token"], "no token")
        bare.headers["Authorization"] = "Bearer not-the-token"
        self.refused(self.post(f"/v1/models/{self.model}:predict", {"instances": self.x.tolist()}, session=bare),
                     401, ["token"], "a wrong token")

    def tls(self):
        """A plain HTTP client of a TLS server gets no answer."""
        try:
            requests.get(self.base.replace("https://", "http://") + f"/v1/models/{self.model}", timeout=10)
        except requests.RequestException:
            return
        raise AssertionError("a plain HTTP request to a TLS server was answered")


def main():
    args = parse_arguments(__doc__)
    checks = Checks(args)
    steps = [checks.status, checks.metadata, checks.prediction, checks.versions, checks.regress, checks.bad_requests]
    if args.records:
        steps = [checks.status, checks.records_prediction, checks.regress]
    if args.token:
        steps.append(checks.token)
    if args.ca:
        steps.append(checks.tls)

    def describe(error):
        return str(error) if isinstance(error, (requests.RequestException, AssertionError, KeyError)) else None

    return run_checks("tf serving REST (requests)", args, steps, describe, checks.session.close)


if __name__ == "__main__":
    sys.exit(main())
