"""Checks est-serve's KServe v2 HTTP/JSON API with Triton's own Python client,
tritonclient.http: health, model readiness and metadata, inference of a batch and of single rows
against what Estimator::predict answered, with the binary tensor data extension (the client's
default) and with JSON tensors both ways, a subset of outputs, the errors of bad requests (their
HTTP status and message), and, where the server has them, its token and TLS; or, with --records,
inference of tf.train.Example records in a BYTES input. Run by real_clients_test.py in a virtual
environment with tritonclient[http]; exits 0 when every check passes, 1 naming the first that
failed.

usage: triton_http_client_check.py --url HOST:PORT --model NAME --version V --expected FILE
                                   [--token T] [--ca FILE] [--records]
"""

import sys

import numpy as np
import tritonclient.http as triton
from tritonclient.utils import InferenceServerException

from client_check_common import (CALL_TIMEOUT_S, Y_TOLERANCE, Versioned, check, check_message,
                                 load_expected, parse_arguments, refusal, run_checks)


def check_refusal(call, status, words, what):
    """`call` fails with HTTP status `status` (e.g. "400") and a message with each of `words`."""
    error = refusal(call, InferenceServerException)
    check(error.status() == status, f"{what}: status {error.status()}, expected {status} ({error.message()})")
    check_message(error.message(), words, what)


def input_of(name, values, datatype="FP32", binary=True):
    tensor = triton.InferInput(name, list(values.shape), datatype)
    tensor.set_data_from_numpy(values, binary_data=binary)
    return tensor


class Checks:
    """The checks, against one server."""

    def __init__(self, args):
        self.model = args.model
        self.version = args.version
        self.headers = {"authorization": "Bearer " + args.token} if args.token else None
        self.url = args.url
        self.client = triton.InferenceServerClient(
            args.url, ssl=bool(args.ca), ssl_options={"ca_certs": args.ca} if args.ca else None,
            network_timeout=CALL_TIMEOUT_S, connection_timeout=CALL_TIMEOUT_S)
        self.x, self.y, self.positive, records = load_expected(args.expected)
        self.records = np.array(records, dtype=np.object_)
        self.versioned = Versioned(args.expected)

    def infer(self, inputs, model=None, outputs=None, version=""):
        # A copy of the headers each call: tritonclient adds Inference-Header-Content-Length to
        # the dictionary it is given, which a later call would send again.
        return self.client.infer(model or self.model, inputs, model_version=version, outputs=outputs,
                                 headers=dict(self.headers) if self.headers else None)

    def health(self):
        check(self.client.is_server_live(headers=self.headers), "the server is not live")
        check(self.client.is_server_ready(headers=self.headers), "the server is not ready")
        check(self.client.is_model_ready(self.model, headers=self.headers), f"model {self.model} is not ready")
        check(self.client.is_model_ready(self.model, self.version, headers=self.headers),
              f"model {self.model} version {self.version} is not ready")
        check(not self.client.is_model_ready("no_such_model", headers=self.headers), "an unknown model is ready")
        check(not self.client.is_model_ready(self.model, self.version + "0", headers=self.headers),
              "an unknown version is ready")
        metadata = self.client.get_server_metadata(headers=self.headers)
        check(metadata["name"] == "est-serve", f"server metadata {metadata}")

    def metadata(self):
        metadata = self.client.get_model_metadata(self.model, headers=self.headers)
        check(metadata["name"] == self.model, f"metadata names model {metadata['name']}")
        check(metadata["versions"] == [self.version], f"metadata versions {metadata['versions']}")
        inputs = [(t["name"], t["datatype"], t["shape"]) for t in metadata["inputs"]]
        check(inputs == [("x", "FP32", [-1, 3])], f"metadata inputs {inputs}")
        outputs = sorted((t["name"], t["datatype"], t["shape"]) for t in metadata["outputs"])
        check(outputs == [("positive", "BOOL", [-1]), ("y", "FP32", [-1])], f"metadata outputs {outputs}")
        versioned = self.client.get_model_metadata(self.model, self.version, headers=self.headers)
        check(versioned["versions"] == [self.version], f"metadata of version {self.version}: {versioned}")

    def check_answer(self, result, rows, what):
        y = result.as_numpy("y")
        positive = result.as_numpy("positive")
        for name, values, dtype in (("y", y, np.float32), ("positive", positive, bool)):
            check(values is not None and values.dtype == dtype and values.shape == (len(rows),),
                  f"{what}: {name} is {None if values is None else (values.dtype, values.shape)}")
        difference = np.abs(y - self.y[rows]).max()
        check(difference <= Y_TOLERANCE, f"{what}: y differs from Estimator::predict's by {difference}")
        check(np.array_equal(positive, self.positive[rows]), f"{what}: positive {positive}, expected "
              f"{self.positive[rows]}")
        response = result.get_response()
        check(response["model_name"] == self.model and response["model_version"] == self.version,
              f"{what}: answered by {response['model_name']} version {response['model_version']}")

    def inference(self):
        rows = list(range(len(self.x)))
        self.check_answer(self.infer([input_of("x", self.x)]), rows, "all rows, binary")
        for row in rows:
            self.check_answer(self.infer([input_of("x", self.x[row:row + 1])]), [row], f"row {row}")
        # JSON tensors both ways: the request's "data", the answer's "data".
        json_outputs = [triton.InferRequestedOutput("y", binary_data=False),
                        triton.InferRequestedOutput("positive", binary_data=False)]
        result = self.infer([input_of("x", self.x, binary=False)], outputs=json_outputs)
        self.check_answer(result, rows, "all rows, JSON")
        for output in result.get_response()["outputs"]:
            check("data" in output, f"asked for JSON, {output['name']} came without data: {output}")
        self.check_answer(self.infer([input_of("x", self.x)], version=self.version), rows, "the version named")
        # Only the outputs asked for.
        result = self.infer([input_of("x", self.x)], outputs=[triton.InferRequestedOutput("positive")])
        names = [output["name"] for output in result.get_response()["outputs"]]
        check(names == ["positive"], f"asked for positive only, got {names}")
        check(np.array_equal(result.as_numpy("positive"), self.positive), "the subset's positive")

    def versions(self):
        """A second model, of two versions: each answers when named, the newest when none is;
        the metadata lists both; a version not served is 404 naming those that are."""
        versioned = self.versioned
        metadata = self.client.get_model_metadata(versioned.name, headers=self.headers)
        check(metadata["versions"] == [versioned.first, versioned.newest],
              f"metadata versions of {versioned.name}: {metadata['versions']}")
        check(self.client.is_model_ready(versioned.name, versioned.first, headers=self.headers),
              f"{versioned.name} version {versioned.first} is not ready")
        for version, y in (("", versioned.y), (versioned.first, self.y), (versioned.newest, versioned.y)):
            result = self.infer([input_of("x", self.x)], model=versioned.name, version=version)
            response = result.get_response()
            answered = version or versioned.newest
            check(response["model_name"] == versioned.name and response["model_version"] == answered,
                  f"version {answered!r}: answered by {response['model_name']} version {response['model_version']}")
            versioned.check_y(result.as_numpy("y"), y, f"{versioned.name} version {answered}")
        check_refusal(lambda: self.infer([input_of("x", self.x)], model=versioned.name, version="1"), "404",
                      ["versions served", versioned.first], "a version not served")

    def bad_requests(self):
        rows = self.x[:2]
        check_refusal(lambda: self.infer([input_of("x", rows), input_of("z", rows)]), "400", ["'z'"],
                      "an unknown input")
        check_refusal(lambda: self.infer([input_of("x", np.zeros((2, 4), np.float32))]), "400", ["'x'"],
                      "a wrong shape")
        check_refusal(lambda: self.infer([input_of("x", rows.astype(np.float64), "FP64")]), "400", ["'x'"],
                      "a wrong datatype")
        check_refusal(lambda: self.infer([input_of("x", rows)], model="no_such_model"), "404",
                      ["Request for unknown model", "no_such_model"], "an unknown model")
        check_refusal(lambda: self.infer([input_of("x", rows)], version=self.version + "0"), "404",
                      [self.version + "0"], "an unknown version")
        check_refusal(lambda: self.client.get_model_metadata("no_such_model", headers=self.headers), "404",
                      ["Request for unknown model"], "metadata of an unknown model")
        check_refusal(lambda: self.infer([input_of("x", rows)], outputs=[triton.InferRequestedOutput("score")]),
                      "400", ["'score'"], "an unknown output")

    def records_inference(self):
        """The rows as tf.train.Example records in one BYTES input, binary as tritonclient sends
        byte strings, and as JSON strings."""
        metadata = self.client.get_model_metadata(self.model, headers=self.headers)
        inputs = [(t["name"], t["datatype"], t["shape"]) for t in metadata["inputs"]]
        check(inputs == [("examples", "BYTES", [-1])], f"metadata inputs {inputs}")
        rows = list(range(len(self.records)))
        self.check_answer(self.infer([input_of("examples", self.records, "BYTES")]), rows,
                          "all records in one request")
        broken = np.array([self.records[0], b"\xff\xff"], dtype=np.object_)
        check_refusal(lambda: self.infer([input_of("examples", broken, "BYTES")]), "400",
                      ["record 1", "'examples'"], "a record that does not parse")

    def token(self):
        """Without the token, or with another one, calls are refused with 401; the health probes
        answer without it."""
        check(self.client.is_server_live(), "the liveness probe needs the token")
        check_refusal(lambda: self.client.get_model_metadata(self.model), "401", ["token"],
                      "a call without the token")
        wrong = {"authorization": "Bearer not-the-token"}
        check_refusal(lambda: self.client.infer(self.model, [input_of("x", self.x)], headers=wrong), "401",
                      ["token"], "an inference with a wrong token")

    def tls(self):
        """A client without TLS cannot call a server that serves TLS."""
        plain = triton.InferenceServerClient(self.url, network_timeout=10, connection_timeout=10)
        try:
            plain.is_server_live(headers=self.headers)
        except Exception:  # noqa: BLE001 (the connection fails: any of the transport's errors)
            return
        finally:
            plain.close()
        raise AssertionError("a plain HTTP client of a TLS server was answered")


def main():
    args = parse_arguments(__doc__)
    checks = Checks(args)
    steps = [checks.health, checks.metadata, checks.inference, checks.versions, checks.bad_requests]
    if args.records:
        steps = [checks.health, checks.records_inference]
    if args.token:
        steps.append(checks.token)
    if args.ca:
        steps.append(checks.tls)

    def describe(error):
        return str(error) if isinstance(error, (InferenceServerException, AssertionError)) else None

    return run_checks("triton http client", args, steps, describe, checks.client.close)


if __name__ == "__main__":
    sys.exit(main())
