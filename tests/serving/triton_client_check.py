"""Checks est-serve's Open Inference Protocol (KServe v2) service with Triton's own Python
client, tritonclient.grpc: health (and gRPC's grpc.health.v1.Health through grpcio's health
stub, as grpc_health_probe calls it, without the token), model readiness and metadata, inference of a batch and of
single rows against what Estimator::predict answered, a subset of outputs, the errors of bad
requests, and, where the server has them, its token and TLS; or, with --records, inference of
tf.train.Example records in a BYTES input (tritonclient's own BYTES encoding). Run by
real_clients_test.py in a
virtual environment with tritonclient[grpc] and grpcio-health-checking; exits 0 when every check passes, 1 naming the
first that failed.

usage: triton_client_check.py --url HOST:PORT --model NAME --version V --expected FILE
                              [--token T] [--ca FILE] [--records]
"""

import sys

import grpc
import numpy as np
import tritonclient.grpc as triton
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.utils import InferenceServerException

from client_check_common import (CALL_TIMEOUT_S, Y_TOLERANCE, Versioned, check, check_message,
                                 load_expected, parse_arguments, refusal, run_checks)


def check_refusal(call, status, words, what):
    """`call` fails with gRPC status `status` (e.g. "INVALID_ARGUMENT") and a message with
    each of `words`."""
    error = refusal(call, InferenceServerException)
    check(error.status() == "StatusCode." + status,
          f"{what}: status {error.status()}, expected {status} ({error.message()})")
    check_message(error.message(), words, what)


def input_of(name, values, datatype="FP32"):
    tensor = triton.InferInput(name, list(values.shape), datatype)
    tensor.set_data_from_numpy(values)
    return tensor


class Checks:
    """The checks, against one server."""

    def __init__(self, args):
        self.model = args.model
        self.version = args.version
        self.headers = {"authorization": "Bearer " + args.token} if args.token else None
        self.client = triton.InferenceServerClient(args.url, ssl=bool(args.ca),
                                                   root_certificates=args.ca or None)
        self.url = args.url
        self.ca = args.ca
        self.x, self.y, self.positive, records = load_expected(args.expected)
        self.records = np.array(records, dtype=np.object_)
        self.versioned = Versioned(args.expected)

    def infer(self, inputs, model=None, outputs=None, version=""):
        return self.client.infer(model or self.model, inputs, model_version=version, outputs=outputs,
                                 headers=self.headers, client_timeout=CALL_TIMEOUT_S)

    def health(self):
        check(self.client.is_server_live(headers=self.headers), "the server is not live")
        check(self.client.is_server_ready(headers=self.headers), "the server is not ready")
        check(self.client.is_model_ready(self.model, headers=self.headers),
              f"model {self.model} is not ready")
        check(self.client.is_model_ready(self.model, self.version, headers=self.headers),
              f"model {self.model} version {self.version} is not ready")
        check(not self.client.is_model_ready("no_such_model", headers=self.headers),
              "an unknown model is ready")
        check(not self.client.is_model_ready(self.model, self.version + "0", headers=self.headers),
              "an unknown version is ready")

    def grpc_health(self):
        """grpc.health.v1.Health: SERVING for the server, its services and the model, without
        the token; NOT_FOUND for an unknown service."""
        if self.ca:
            with open(self.ca, "rb") as file:
                channel = grpc.secure_channel(self.url, grpc.ssl_channel_credentials(root_certificates=file.read()))
        else:
            channel = grpc.insecure_channel(self.url)
        with channel:
            stub = health_pb2_grpc.HealthStub(channel)
            for service in ("", "inference.GRPCInferenceService", "tensorflow.serving.PredictionService",
                            self.model):
                response = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=CALL_TIMEOUT_S)
                check(response.status == health_pb2.HealthCheckResponse.SERVING,
                      f"grpc health of {service!r}: {response.status}")
            error = refusal(lambda: stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"),
                                               timeout=CALL_TIMEOUT_S), grpc.RpcError)
            check(error.code() == grpc.StatusCode.NOT_FOUND, f"grpc health of an unknown service: {error.code()}")

    def metadata(self):
        metadata = self.client.get_model_metadata(self.model, headers=self.headers)
        check(metadata.name == self.model, f"metadata names model {metadata.name}")
        check(list(metadata.versions) == [self.version], f"metadata versions {metadata.versions}")
        inputs = [(t.name, t.datatype, list(t.shape)) for t in metadata.inputs]
        check(inputs == [("x", "FP32", [-1, 3])], f"metadata inputs {inputs}")
        outputs = sorted((t.name, t.datatype, list(t.shape)) for t in metadata.outputs)
        check(outputs == [("positive", "BOOL", [-1]), ("y", "FP32", [-1])],
              f"metadata outputs {outputs}")

    def check_answer(self, result, rows, what):
        y = result.as_numpy("y")
        positive = result.as_numpy("positive")
        for name, values, dtype in (("y", y, np.float32), ("positive", positive, bool)):
            check(values is not None and values.dtype == dtype and values.shape == (len(rows),),
                  f"{what}: {name} is {None if values is None else (values.dtype, values.shape)}")
        difference = np.abs(y - self.y[rows]).max()
        check(difference <= Y_TOLERANCE,
              f"{what}: y differs from Estimator::predict's by {difference}")
        check(np.array_equal(positive, self.positive[rows]),
              f"{what}: positive {positive}, expected {self.positive[rows]}")
        response = result.get_response()
        check(response.model_name == self.model and response.model_version == self.version,
              f"{what}: answered by {response.model_name} version {response.model_version}")

    def inference(self):
        rows = list(range(len(self.x)))
        self.check_answer(self.infer([input_of("x", self.x)]), rows, "all rows in one request")
        for row in rows:
            self.check_answer(self.infer([input_of("x", self.x[row:row + 1])]), [row], f"row {row}")
        # Only the outputs asked for.
        result = self.infer([input_of("x", self.x)],
                            outputs=[triton.InferRequestedOutput("positive")])
        names = [output.name for output in result.get_response().outputs]
        check(names == ["positive"], f"asked for positive only, got {names}")
        check(np.array_equal(result.as_numpy("positive"), self.positive), "the subset's positive")
        check(result.as_numpy("y") is None, "asked for positive only, y came too")

    def versions(self):
        """A second model, of two versions: each answers when named, the newest when none is;
        the metadata lists both; a version not served is NOT_FOUND naming those that are."""
        versioned = self.versioned
        metadata = self.client.get_model_metadata(versioned.name, headers=self.headers)
        check(list(metadata.versions) == [versioned.first, versioned.newest],
              f"metadata versions of {versioned.name}: {metadata.versions}")
        check(self.client.is_model_ready(versioned.name, versioned.first, headers=self.headers),
              f"{versioned.name} version {versioned.first} is not ready")
        for version, y in (("", versioned.y), (versioned.first, self.y), (versioned.newest, versioned.y)):
            result = self.infer([input_of("x", self.x)], model=versioned.name, version=version)
            response = result.get_response()
            answered = version or versioned.newest
            check(response.model_name == versioned.name and response.model_version == answered,
                  f"version {answered!r}: answered by {response.model_name} version {response.model_version}")
            versioned.check_y(result.as_numpy("y"), y, f"{versioned.name} version {answered}")
        check_refusal(lambda: self.infer([input_of("x", self.x)], model=versioned.name, version="1"), "NOT_FOUND",
                      ["versions served", versioned.first], "a version not served")

    def bad_requests(self):
        rows = self.x[:2]
        check_refusal(lambda: self.infer([input_of("x", rows), input_of("z", rows)]),
                      "INVALID_ARGUMENT", ["'z'"], "an unknown input")
        check_refusal(lambda: self.infer([input_of("x", np.zeros((2, 4), np.float32))]),
                      "INVALID_ARGUMENT", ["'x'"], "a wrong shape")
        check_refusal(lambda: self.infer([input_of("x", rows.astype(np.float64), "FP64")]),
                      "INVALID_ARGUMENT", ["'x'"], "a wrong datatype")
        check_refusal(lambda: self.infer([input_of("x", rows)], model="no_such_model"),
                      "NOT_FOUND", ["Request for unknown model", "no_such_model"],
                      "an unknown model")
        check_refusal(lambda: self.client.get_model_metadata("no_such_model", headers=self.headers),
                      "NOT_FOUND", ["Request for unknown model"], "metadata of an unknown model")
        check_refusal(lambda: self.infer([input_of("x", rows)],
                                         outputs=[triton.InferRequestedOutput("score")]),
                      "INVALID_ARGUMENT", ["'score'"], "an unknown output")

    def records_inference(self):
        """The rows as tf.train.Example records in one BYTES input, as tritonclient encodes
        byte strings: the metadata says so, the answers are Estimator::predict's, and a request
        of tensors or a record that does not parse is refused naming what is wrong."""
        metadata = self.client.get_model_metadata(self.model, headers=self.headers)
        inputs = [(t.name, t.datatype, list(t.shape)) for t in metadata.inputs]
        check(inputs == [("examples", "BYTES", [-1])], f"metadata inputs {inputs}")
        rows = list(range(len(self.records)))
        self.check_answer(self.infer([input_of("examples", self.records, "BYTES")]), rows,
                          "all records in one request")
        for row in rows[:4]:
            self.check_answer(self.infer([input_of("examples", self.records[row:row + 1], "BYTES")]),
                              [row], f"record {row}")
        broken = np.array([self.records[0], b"\xff\xff"], dtype=np.object_)
        check_refusal(lambda: self.infer([input_of("examples", broken, "BYTES")]),
                      "INVALID_ARGUMENT", ["record 1", "'examples'"], "a record that does not parse")
        check_refusal(lambda: self.infer([input_of("x", self.x[:2])]), "INVALID_ARGUMENT",
                      ["'x'", "'examples'"], "tensors for a model of records")

    def token(self):
        """Without the token, or with another one, calls are refused; with it they pass (every
        other check sends it)."""
        check_refusal(lambda: self.client.is_server_live(), "UNAUTHENTICATED", ["token"],
                      "a call without the token")
        wrong = {"authorization": "Bearer not-the-token"}
        check_refusal(lambda: self.client.infer(self.model, [input_of("x", self.x)], headers=wrong),
                      "UNAUTHENTICATED", ["token"], "an inference with a wrong token")

    def tls(self, url):
        """A client without TLS cannot call a server that serves TLS."""
        plain = triton.InferenceServerClient(url)
        error = refusal(lambda: plain.is_server_live(headers=self.headers, client_timeout=10),
                        InferenceServerException)
        check(error.status() in ("StatusCode.UNAVAILABLE", "StatusCode.DEADLINE_EXCEEDED"),
              f"a plain client of a TLS server: {error.status()} ({error.message()})")
        plain.close()


def main():
    args = parse_arguments(__doc__)
    checks = Checks(args)
    steps = [checks.health, checks.grpc_health, checks.metadata, checks.inference, checks.versions,
             checks.bad_requests]
    if args.records:
        steps = [checks.health, checks.records_inference]
    if args.token:
        steps.append(checks.token)
    if args.ca:
        steps.append(lambda: checks.tls(args.url))

    def describe(error):
        return str(error) if isinstance(error, (InferenceServerException, grpc.RpcError)) else None

    return run_checks("triton client", args, steps, describe, checks.client.close)


if __name__ == "__main__":
    sys.exit(main())
