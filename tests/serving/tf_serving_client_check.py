"""Checks est-serve's TensorFlow Serving PredictionService with TensorFlow Serving's own Python
API (tensorflow-serving-api's stubs, TensorFlow's make_tensor_proto and make_ndarray):
Predict of a batch and of single rows, in every form TensorFlow writes a TensorProto in,
against what Estimator::predict answered, output_filter, the version served, GetModelMetadata's
signature, ModelService's GetModelStatus, the errors of bad requests, and, where the server has them, its token and TLS; or,
with --records, Predict of tf.train.Example records TensorFlow serializes, in DT_STRING. Run
by real_clients_test.py in a virtual environment with tensorflow-cpu and
tensorflow-serving-api; exits 0 when every check passes, 1 naming the first that failed.

usage: tf_serving_client_check.py --url HOST:PORT --model NAME --version V --expected FILE
                                  [--token T] [--ca FILE] [--records]
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up lines

import grpc  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2  # noqa: E402
from tensorflow_serving.apis import get_model_metadata_pb2  # noqa: E402
from tensorflow_serving.apis import classification_pb2  # noqa: E402
from tensorflow_serving.apis import get_model_status_pb2  # noqa: E402
from tensorflow_serving.apis import model_management_pb2  # noqa: E402
from tensorflow_serving.apis import predict_pb2  # noqa: E402
from tensorflow_serving.apis import regression_pb2  # noqa: E402
from tensorflow_serving.apis import prediction_service_pb2_grpc  # noqa: E402

from client_check_common import (CALL_TIMEOUT_S, Y_TOLERANCE, Versioned, check, check_message,  # noqa: E402
                                 load_expected, parse_arguments, refusal, run_checks)


def check_refusal(call, status, words, what):
    """`call` fails with gRPC status `status` and a message with each of `words`."""
    error = refusal(call, grpc.RpcError)
    check(error.code() == status,
          f"{what}: status {error.code()}, expected {status} ({error.details()})")
    check_message(error.details(), words, what)


def float_val_proto(values):
    """A DT_FLOAT TensorProto of `values` (a 2-D array) in float_val, as TensorFlow writes one of
    a single element and other clients write any."""
    proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT)
    for size in values.shape:
        proto.tensor_shape.dim.append(tensor_shape_pb2.TensorShapeProto.Dim(size=size))
    proto.float_val.extend(values.reshape(-1).tolist())
    return proto


class Checks:
    """The checks, against one server."""

    def __init__(self, args):
        self.model = args.model
        self.version = int(args.version)
        self.metadata = [("authorization", "Bearer " + args.token)] if args.token else None
        self.url = args.url
        if args.ca:
            with open(args.ca, "rb") as file:
                credentials = grpc.ssl_channel_credentials(root_certificates=file.read())
            self.channel = grpc.secure_channel(args.url, credentials)
        else:
            self.channel = grpc.insecure_channel(args.url)
        self.stub = prediction_service_pb2_grpc.PredictionServiceStub(self.channel)
        self.x, self.y, self.positive, records = load_expected(args.expected)
        self.fixture_records = records
        self.versioned = Versioned(args.expected)
        # ModelService.GetModelStatus with tensorflow-serving-api's messages (its
        # model_service_pb2 module does not import under protobuf 4, so the method is called by
        # its path).
        self.get_status = self.channel.unary_unary(
            "/tensorflow.serving.ModelService/GetModelStatus",
            request_serializer=get_model_status_pb2.GetModelStatusRequest.SerializeToString,
            response_deserializer=get_model_status_pb2.GetModelStatusResponse.FromString)
        self.handle_reload = self.channel.unary_unary(
            "/tensorflow.serving.ModelService/HandleReloadConfigRequest",
            request_serializer=model_management_pb2.ReloadConfigRequest.SerializeToString,
            response_deserializer=model_management_pb2.ReloadConfigResponse.FromString)
        with open(args.expected) as file:
            self.base_paths = json.load(file)["base_paths"]

    def request(self, inputs, model=None, signature_name="", output_filter=()):
        request = predict_pb2.PredictRequest()
        request.model_spec.name = model or self.model
        if signature_name:
            request.model_spec.signature_name = signature_name
        for name, proto in inputs.items():
            request.inputs[name].CopyFrom(proto)
        request.output_filter.extend(output_filter)
        return request

    def predict(self, inputs, metadata="ours", **options):
        return self.stub.Predict(self.request(inputs, **options), timeout=CALL_TIMEOUT_S,
                                 metadata=self.metadata if metadata == "ours" else metadata)

    def check_answer(self, response, rows, what, model=None):
        check(set(response.outputs) == {"y", "positive"},
              f"{what}: outputs {list(response.outputs)}")
        y = tf.make_ndarray(response.outputs["y"])
        positive = tf.make_ndarray(response.outputs["positive"])
        check(y.dtype == np.float32 and y.shape == (len(rows),),
              f"{what}: y is {y.dtype} {y.shape}")
        check(positive.dtype == bool and positive.shape == (len(rows),),
              f"{what}: positive is {positive.dtype} {positive.shape}")
        difference = np.abs(y - self.y[rows]).max()
        check(difference <= Y_TOLERANCE,
              f"{what}: y differs from Estimator::predict's by {difference}")
        check(np.array_equal(positive, self.positive[rows]),
              f"{what}: positive {positive}, expected {self.positive[rows]}")
        spec = response.model_spec
        check(spec.name == (model or self.model) and spec.version.value == self.version,
              f"{what}: answered by {spec.name} version {spec.version.value}, "
              f"expected {self.version}")
        check(spec.signature_name == "serving_default",
              f"{what}: signature {spec.signature_name!r}")

    def prediction(self):
        rows = list(range(len(self.x)))
        batch = tf.make_tensor_proto(self.x)
        check(len(batch.tensor_content) == self.x.nbytes,
              "make_tensor_proto wrote no tensor_content")
        self.check_answer(self.predict({"x": batch}), rows, "all rows in one request")
        for row in rows:
            one = tf.make_tensor_proto(self.x[row:row + 1])
            self.check_answer(self.predict({"x": one}), [row], f"row {row}")
        # A row from a Python list, and rows in float_val.
        listed = tf.make_tensor_proto(self.x[:1].tolist(), dtype=tf.float32, shape=[1, 3])
        self.check_answer(self.predict({"x": listed}), [0], "row 0 from a list")
        self.check_answer(self.predict({"x": float_val_proto(self.x[:3])}), [0, 1, 2],
                          "rows 0 to 2 in float_val")
        # One value for every element (TensorFlow's fill), as the same values written out.
        filled = tf.make_tensor_proto(0.5, dtype=tf.float32, shape=[2, 3])
        check(list(filled.float_val) == [0.5], f"make_tensor_proto filled {filled}")
        y_filled = tf.make_ndarray(self.predict({"x": filled}).outputs["y"])
        y_full = tf.make_ndarray(self.predict({"x": tf.make_tensor_proto(
            np.full((2, 3), 0.5, np.float32))}).outputs["y"])
        check(np.abs(y_filled - y_full).max() <= Y_TOLERANCE,
              f"filled {y_filled}, written {y_full}")
        # output_filter, and the default signature by its name.
        response = self.predict({"x": batch}, output_filter=["positive"],
                                signature_name="serving_default")
        check(list(response.outputs) == ["positive"],
              f"asked for positive, got {list(response.outputs)}")
        check(np.array_equal(tf.make_ndarray(response.outputs["positive"]), self.positive),
              "the filtered positive")

    def model_metadata(self):
        request = get_model_metadata_pb2.GetModelMetadataRequest()
        request.model_spec.name = self.model
        request.metadata_field.append("signature_def")
        response = self.stub.GetModelMetadata(request, timeout=CALL_TIMEOUT_S,
                                              metadata=self.metadata)
        spec = response.model_spec
        check(spec.name == self.model and spec.version.value == self.version,
              f"metadata of {spec}")
        signatures = get_model_metadata_pb2.SignatureDefMap()
        check(response.metadata["signature_def"].Unpack(signatures),
              f"signature_def is a {response.metadata['signature_def'].type_url}")
        check(list(signatures.signature_def) == ["serving_default"],
              f"signatures {list(signatures.signature_def)}")
        signature = signatures.signature_def["serving_default"]
        check(signature.method_name == "tensorflow/serving/predict",
              f"method {signature.method_name}")

        def described(infos):
            return sorted((name, info.dtype, [d.size for d in info.tensor_shape.dim])
                          for name, info in infos.items())
        inputs = described(signature.inputs)
        check(inputs == [("x", types_pb2.DT_FLOAT, [-1, 3])], f"signature inputs {inputs}")
        outputs = described(signature.outputs)
        check(outputs == [("positive", types_pb2.DT_BOOL, [-1]), ("y", types_pb2.DT_FLOAT, [-1])],
              f"signature outputs {outputs}")

    def bad_requests(self):
        rows = tf.make_tensor_proto(self.x[:2])
        wide = tf.make_tensor_proto(np.zeros((2, 4), np.float32))
        doubles = tf.make_tensor_proto(self.x[:2].astype(np.float64))
        check_refusal(lambda: self.predict({"x": rows, "z": rows}),
                      grpc.StatusCode.INVALID_ARGUMENT, ["'z'"], "an unknown input")
        check_refusal(lambda: self.predict({"x": wide}), grpc.StatusCode.INVALID_ARGUMENT, ["'x'"],
                      "a wrong shape")
        check_refusal(lambda: self.predict({"x": doubles}), grpc.StatusCode.INVALID_ARGUMENT,
                      ["'x'"], "a wrong dtype")
        check_refusal(lambda: self.predict({"x": rows}, signature_name="classify"),
                      grpc.StatusCode.FAILED_PRECONDITION, ["classify"], "an unknown signature")
        check_refusal(lambda: self.predict({"x": rows}, output_filter=["score"]),
                      grpc.StatusCode.INVALID_ARGUMENT, ["'score'"], "an unknown output")
        check_refusal(lambda: self.predict({"x": rows}, model="no_such_model"),
                      grpc.StatusCode.NOT_FOUND, ["no_such_model"], "an unknown model")
        request = self.request({"x": rows})
        request.model_spec.version.value = self.version + 1
        check_refusal(lambda: self.stub.Predict(request, timeout=CALL_TIMEOUT_S,
                                                metadata=self.metadata),
                      grpc.StatusCode.NOT_FOUND, [str(self.version + 1)], "an unknown version")

    def token(self):
        """Without the token, or with another one, calls are refused; with it they pass (every
        other check sends it)."""
        rows = {"x": tf.make_tensor_proto(self.x[:2])}
        check_refusal(lambda: self.predict(rows, metadata=None), grpc.StatusCode.UNAUTHENTICATED,
                      ["token"], "a call without the token")
        wrong = [("authorization", "Bearer not-the-token")]
        check_refusal(lambda: self.predict(rows, metadata=wrong), grpc.StatusCode.UNAUTHENTICATED,
                      ["token"], "a call with a wrong token")

    def model_status(self):
        """ModelService.GetModelStatus: the version served is AVAILABLE; another version is
        NOT_FOUND."""
        get_status = self.get_status
        request = get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = self.model
        response = get_status(request, timeout=CALL_TIMEOUT_S, metadata=self.metadata)
        statuses = [(s.version, s.state, s.status.error_code) for s in response.model_version_status]
        check(statuses == [(self.version, get_model_status_pb2.ModelVersionStatus.AVAILABLE, 0)],
              f"GetModelStatus: {statuses}")
        request.model_spec.version.value = self.version
        check(len(get_status(request, timeout=CALL_TIMEOUT_S, metadata=self.metadata).model_version_status) == 1,
              "GetModelStatus of the version served")
        request.model_spec.version.value = self.version + 1
        check_refusal(lambda: get_status(request, timeout=CALL_TIMEOUT_S, metadata=self.metadata),
                      grpc.StatusCode.NOT_FOUND, [str(self.version + 1)], "GetModelStatus of another version")

    def versions(self):
        """A second model, of two versions with the labels "stable" and "canary": a label or a
        number names the version that answers; an unknown label is INVALID_ARGUMENT naming it;
        GetModelStatus lists both versions."""
        versioned = self.versioned
        for label, number, version, y in (("stable", None, versioned.first, self.y),
                                          ("canary", None, versioned.newest, versioned.y),
                                          (None, int(versioned.first), versioned.first, self.y),
                                          (None, None, versioned.newest, versioned.y)):
            request = self.request({"x": tf.make_tensor_proto(self.x)}, model=versioned.name)
            if label:
                request.model_spec.version_label = label
            if number is not None:
                request.model_spec.version.value = number
            response = self.stub.Predict(request, timeout=CALL_TIMEOUT_S, metadata=self.metadata)
            check(response.model_spec.name == versioned.name and response.model_spec.version.value == int(version),
                  f"asked for {request.model_spec}: answered by {response.model_spec.name} version "
                  f"{response.model_spec.version.value}, expected {version}")
            versioned.check_y(tf.make_ndarray(response.outputs["y"]), y, f"{versioned.name} version {version}")
        request = self.request({"x": tf.make_tensor_proto(self.x)}, model=versioned.name)
        request.model_spec.version_label = "beta"
        check_refusal(lambda: self.stub.Predict(request, timeout=CALL_TIMEOUT_S, metadata=self.metadata),
                      grpc.StatusCode.INVALID_ARGUMENT, ["beta", "stable"], "an unknown label")
        status_request = get_model_status_pb2.GetModelStatusRequest()
        status_request.model_spec.name = versioned.name
        response = self.get_status(status_request, timeout=CALL_TIMEOUT_S, metadata=self.metadata)
        versions = [str(status.version) for status in response.model_version_status]
        check(versions == [versioned.first, versioned.newest], f"GetModelStatus of {versioned.name}: {versions}")

    def examples(self, request, records, context=None):
        """Fills a Classify or Regress request's input with the fixture's rows as tf.train.Example
        messages (its records, parsed by TensorFlow's own Example), and a context where given."""
        request.model_spec.name = self.model
        examples = [tf.train.Example.FromString(record) for record in records]
        if context is None:
            request.input.example_list.examples.extend(examples)
        else:
            request.input.example_list_with_context.examples.extend(examples)
            request.input.example_list_with_context.context.CopyFrom(context)
        return request

    def classify_regress(self):
        """Regress of tf.train.Example messages answers the model's one float output of a value
        per example (y); with the examples' feature in a context they share, too; Classify of a
        model without class scores is FAILED_PRECONDITION naming the outputs it needs; no
        example is INVALID_ARGUMENT."""
        response = self.stub.Regress(self.examples(regression_pb2.RegressionRequest(), self.fixture_records),
                                     timeout=CALL_TIMEOUT_S, metadata=self.metadata)
        values = np.array([r.value for r in response.result.regressions], dtype=np.float32)
        check(values.shape == self.y.shape and np.abs(values - self.y).max() <= Y_TOLERANCE,
              f"Regress: {values}, Estimator::predict's y {self.y}")
        check(response.model_spec.name == self.model and response.model_spec.version.value == self.version,
              f"Regress answered by {response.model_spec}")
        # The first row's x in a context every example shares: each answers the first row's y.
        context = tf.train.Example.FromString(self.fixture_records[0])
        empty = [tf.train.Example().SerializeToString()] * 3
        response = self.stub.Regress(self.examples(regression_pb2.RegressionRequest(), empty, context),
                                     timeout=CALL_TIMEOUT_S, metadata=self.metadata)
        values = [r.value for r in response.result.regressions]
        check(len(values) == 3 and all(abs(v - self.y[0]) <= Y_TOLERANCE for v in values),
              f"Regress with a context: {values}, expected {self.y[0]} thrice")
        request = self.examples(classification_pb2.ClassificationRequest(), self.fixture_records[:2])
        check_refusal(lambda: self.stub.Classify(request, timeout=CALL_TIMEOUT_S, metadata=self.metadata),
                      grpc.StatusCode.FAILED_PRECONDITION, ["'scores'", "'probabilities'", "'y'"],
                      "Classify of a regression model")
        check_refusal(lambda: self.stub.Regress(self.examples(regression_pb2.RegressionRequest(), []),
                                                timeout=CALL_TIMEOUT_S, metadata=self.metadata),
                      grpc.StatusCode.INVALID_ARGUMENT, ["Input is empty"], "Regress of no example")

    def reload(self, extra=None):
        """HandleReloadConfigRequest of the fixture's two models (and `extra`, a name and base
        path): the response."""
        request = model_management_pb2.ReloadConfigRequest()
        served = request.config.model_config_list.config.add(name=self.model, base_path=self.base_paths[self.model])
        served.model_platform = "tensorflow"
        versioned = request.config.model_config_list.config.add(name=self.versioned.name,
                                                                base_path=self.base_paths[self.versioned.name])
        versioned.model_version_policy.all.SetInParent()
        versioned.version_labels["stable"] = int(self.versioned.first)
        versioned.version_labels["canary"] = int(self.versioned.newest)
        if extra:
            request.config.model_config_list.config.add(name=extra[0], base_path=extra[1])
        return self.handle_reload(request, timeout=CALL_TIMEOUT_S, metadata=self.metadata)

    def reload_config(self):
        """ModelService.HandleReloadConfigRequest adds a model and removes it again without a
        restart; a model that does not load is FAILED_PRECONDITION naming it, and what is served
        stays."""
        response = self.reload(("reloaded", self.base_paths[self.model]))
        check(response.status.error_code == 0, f"reload adding a model: {response.status}")
        self.check_answer(self.predict({"x": tf.make_tensor_proto(self.x)}, model="reloaded"),
                          list(range(len(self.x))), "the model a reload added", model="reloaded")
        error = refusal(lambda: self.reload(("missing", self.base_paths[self.model] + "/missing")), grpc.RpcError)
        check(error.code() == grpc.StatusCode.FAILED_PRECONDITION and "model 'missing'" in error.details(),
              f"reload of a model that does not load: {error.code()} {error.details()}")
        check(self.predict({"x": tf.make_tensor_proto(self.x)}, model="reloaded").outputs,
              "the served models changed after a reload that failed")
        check(self.reload().status.error_code == 0, "reload back to the fixture's models")
        check_refusal(lambda: self.predict({"x": tf.make_tensor_proto(self.x)}, model="reloaded"),
                      grpc.StatusCode.NOT_FOUND, ["reloaded"], "a model a reload removed")

    def tls(self):
        """A client without TLS cannot call a server that serves TLS."""
        with grpc.insecure_channel(self.url) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            request = self.request({"x": tf.make_tensor_proto(self.x[:2])})
            error = refusal(lambda: stub.Predict(request, timeout=10, metadata=self.metadata),
                            grpc.RpcError)
            check(error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED),
                  f"a plain client of a TLS server: {error.code()} ({error.details()})")


    def records(self):
        """tf.train.Example records of the rows, serialized by TensorFlow, in one DT_STRING
        input: the answers are Estimator::predict's; the signature says so; a record that does
        not parse is refused naming it."""
        serialized = [tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))})).SerializeToString()
            for row in self.x.tolist()]
        # The fixture's records (sent by the Triton client) are what TensorFlow reads back.
        for row, record in enumerate(self.fixture_records):
            parsed = tf.train.Example.FromString(record).features.feature["x"].float_list.value
            check(np.array_equal(np.array(parsed, np.float32), self.x[row]),
                  f"the fixture's record {row} holds {list(parsed)}")
        rows = list(range(len(self.x)))
        batch = tf.make_tensor_proto(serialized)
        check(batch.dtype == types_pb2.DT_STRING and len(batch.string_val) == len(rows),
              f"make_tensor_proto of records wrote {batch.dtype}")
        self.check_answer(self.predict({"examples": batch}), rows, "all records in one request")
        for row in rows[:4]:
            self.check_answer(self.predict({"examples": tf.make_tensor_proto(serialized[row:row + 1])}),
                              [row], f"record {row}")
        request = get_model_metadata_pb2.GetModelMetadataRequest()
        request.model_spec.name = self.model
        request.metadata_field.append("signature_def")
        response = self.stub.GetModelMetadata(request, timeout=CALL_TIMEOUT_S,
                                              metadata=self.metadata)
        signatures = get_model_metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(signatures)
        inputs = {name: (info.dtype, [d.size for d in info.tensor_shape.dim])
                  for name, info in signatures.signature_def["serving_default"].inputs.items()}
        check(inputs == {"examples": (types_pb2.DT_STRING, [-1])}, f"signature inputs {inputs}")
        short = tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 2.0]))}))
        check_refusal(lambda: self.predict({"examples": tf.make_tensor_proto(
                          [serialized[0], short.SerializeToString()])}),
                      grpc.StatusCode.INVALID_ARGUMENT, ["record 1", "'examples'", "'x'"],
                      "a record with 2 values of 'x'")
        check_refusal(lambda: self.predict({"x": tf.make_tensor_proto(self.x[:2])}),
                      grpc.StatusCode.INVALID_ARGUMENT, ["'x'", "'examples'"],
                      "tensors for a model of records")


def main():
    args = parse_arguments(__doc__)
    checks = Checks(args)
    steps = [checks.prediction, checks.model_metadata, checks.model_status, checks.versions, checks.classify_regress,
             checks.reload_config, checks.bad_requests]
    if args.records:
        steps = [checks.records, checks.classify_regress]
    if args.token:
        steps.append(checks.token)
    if args.ca:
        steps.append(checks.tls)

    def describe(error):
        if isinstance(error, grpc.RpcError):
            return f"a call failed: {error.code()}: {error.details()}"
        return None

    return run_checks("tf serving client", args, steps, describe, checks.channel.close)


if __name__ == "__main__":
    sys.exit(main())
