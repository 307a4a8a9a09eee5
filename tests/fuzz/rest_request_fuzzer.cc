/// libFuzzer harness for est-serve's REST request decoding (JSON from outside): the first byte
/// picks the API. Byte 0 % 4 == 0: a KServe v2 infer body; == 2: the same with the next two
/// bytes as its Inference-Header-Content-Length (the JSON part's length, binary data after it);
/// odd: a TensorFlow Serving :predict body (row or columnar), for a model of a float32 [-1, 3]
/// and an int64 [-1, 2] input (1, but 5 % 8: a :classify or :regress body of tf.train.Examples
/// instead, each of which must then parse as one) or of serialized records (3). A RequestError is the expected
/// answer to a bad body; anything else (a crash, another exception, an allocation beyond the
/// byte limit) is a bug. What decodes must then decode as the gRPC requests it became, as the
/// server decodes them, to tensors of the declared shapes.

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "data/example/example.pb.h"
#include "estimator/export/export_manifest.h"
#include "serving/example_json.h"
#include "serving/kserve_codec.h"
#include "serving/kserve_rest.h"
#include "serving/predictor.h"
#include "serving/tf_serving_codec.h"
#include "serving/tf_serving_rest.h"

namespace {

/// The most bytes one input may decode to here: small, so that a shape that asks for more
/// is refused, never allocated.
constexpr int64_t kMaxBytes = 1 << 16;

void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "rest_request_fuzzer: %s\n", what);
  std::abort();
}

est::ExportManifest TensorsManifest() {
  est::ExportManifest manifest;
  manifest.inputs = {{"x", at::kFloat, {-1, 3}}, {"ids", at::kLong, {-1, 2}}};
  manifest.outputs = {{"y", at::kFloat, {-1}}};
  return manifest;
}

est::ExportManifest RecordsManifest() {
  est::ExportManifest manifest = TensorsManifest();
  manifest.records_input = "examples";
  return manifest;
}

void DecodeKServe(const std::string& body, const std::string& json_length) {
  est::serving::KServeJsonRequest decoded;
  try {
    decoded = est::serving::DecodeKServeJsonRequest(body, json_length, kMaxBytes);
  } catch (const est::serving::RequestError&) {
    return;
  }
  const auto& request = decoded.request;
  Require(request.raw_input_contents_size() == request.inputs_size(), "an input without its bytes");
  est::serving::WireInputs inputs;
  try {
    inputs = est::serving::DecodeInferInputs(request, kMaxBytes);
  } catch (const est::serving::RequestError&) {
    return;  // e.g. bytes that do not fill the shape, found where gRPC requests are checked
  }
  for (const auto& input : request.inputs()) {
    const std::vector<int64_t> shape(input.shape().begin(), input.shape().end());
    auto tensor = inputs.tensors.find(input.name());
    if (tensor != inputs.tensors.end()) Require(tensor->second.sizes().vec() == shape, "a tensor of another shape");
  }
}

void DecodeTf(const std::string& body, const est::ExportManifest& manifest) {
  est::serving::tf::PredictRequest request;
  try {
    est::serving::DecodePredictJson(body, manifest, kMaxBytes, request);
  } catch (const est::serving::RequestError&) {
    return;
  }
  est::serving::WireInputs inputs;
  try {
    inputs = est::serving::DecodePredictInputs(request, kMaxBytes);
  } catch (const est::serving::RequestError&) {
    return;
  }
  for (const auto& [name, tensor] : inputs.tensors)
    Require(tensor.nbytes() <= static_cast<size_t>(kMaxBytes), "a tensor beyond the byte limit");
}

void DecodeExamples(const std::string& body) {
  est::serving::tf::ModelSpec spec;
  est::serving::tf::Input input;
  try {
    input = est::serving::DecodeExamplesJson(body, kMaxBytes, spec);
  } catch (const est::serving::RequestError&) {
    return;
  }
  const auto& examples = input.has_example_list() ? input.example_list().examples()
                                                  : input.example_list_with_context().examples();
  for (const std::string& bytes : examples) {
    est::tfexample::Example example;
    Require(example.ParseFromString(bytes), "an example that does not parse");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  static const est::ExportManifest tensors = TensorsManifest();
  static const est::ExportManifest records = RecordsManifest();
  const std::string body(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  switch (bytes[0] % 4) {
    case 0:
      DecodeKServe(body, "");
      break;
    case 2:
      if (body.size() >= 2)
        DecodeKServe(body.substr(2), std::to_string(static_cast<uint8_t>(body[0]) | static_cast<uint8_t>(body[1]) << 8));
      break;
    case 1:
      if (bytes[0] % 8 == 5)
        DecodeExamples(body);
      else
        DecodeTf(body, tensors);
      break;
    default:
      DecodeTf(body, records);
  }
  return 0;
}
