/// libFuzzer harness for est-serve's request decoding, both protocols: the first byte picks
/// the message (even: a KServe v2 ModelInferRequest, odd: a TensorFlow Serving
/// PredictRequest), the rest is its wire bytes. A RequestError is the expected answer to a bad
/// request; anything else (a crash, another exception, an allocation beyond the request's
/// byte limit) is a bug. A tensor decoded must have the shape the request declares, and raw
/// bytes must come back as they were sent; byte strings (BYTES, DT_STRING) must be as many as
/// the shape holds.

#include <torch/torch.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "serving/kserve_codec.h"
#include "serving/predictor.h"
#include "serving/proto/kserve_v2.pb.h"
#include "serving/proto/tf_serving.pb.h"
#include "serving/tf_serving_codec.h"
#include "serving/wire_inputs.h"

namespace {

/// The most bytes one input may decode to here: small, so that a shape that asks for more
/// is refused, never allocated.
constexpr int64_t kMaxBytes = 1 << 16;

void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "serving_request_fuzzer: %s\n", what);
  std::abort();
}

/// Checks byte strings decoded: as many as the shape holds, within the byte limit.
void CheckStrings(const est::serving::ByteStrings& strings, const std::vector<int64_t>& shape) {
  Require(strings.shape == shape, "byte strings of another shape than the request declares");
  // A shape with a 0 holds none, however large its other sizes; others must not overflow.
  int64_t count = std::count(shape.begin(), shape.end(), 0) > 0 ? 0 : 1;
  for (int64_t size : shape)
    Require(count == 0 || !__builtin_mul_overflow(count, size, &count), "byte strings of a shape that overflows");
  Require(static_cast<int64_t>(strings.values.size()) == count, "another number of byte strings than the shape holds");
  size_t total = 0;
  for (const std::string& value : strings.values) total += value.size();
  Require(total <= static_cast<size_t>(kMaxBytes), "byte strings beyond the byte limit");
}

/// Checks a tensor decoded: the shape the request declares, within the byte limit.
void CheckTensor(const at::Tensor& tensor, const std::vector<int64_t>& shape) {
  Require(tensor.sizes().vec() == shape, "a tensor of another shape than the request declares");
  Require(tensor.nbytes() <= static_cast<size_t>(kMaxBytes), "a tensor beyond the byte limit");
}

void DecodeInfer(const est::serving::v2::ModelInferRequest& request) {
  static const std::vector<est::TensorSpec> outputs = {{"y", at::kFloat, {-1}}, {"positive", at::kBool, {-1}}};
  try {
    est::serving::RequestedInferOutputs(request, outputs);
  } catch (const est::serving::RequestError&) {
  }
  est::serving::WireInputs inputs;
  try {
    inputs = est::serving::DecodeInferInputs(request, kMaxBytes);
  } catch (const est::serving::RequestError&) {
    return;
  }
  for (int i = 0; i < request.inputs_size(); ++i) {
    const auto& input = request.inputs(i);
    const std::vector<int64_t> shape(input.shape().begin(), input.shape().end());
    auto strings = inputs.strings.find(input.name());
    if (strings != inputs.strings.end()) {
      CheckStrings(strings->second, shape);
      continue;
    }
    const at::Tensor& tensor = inputs.tensors.at(input.name());
    CheckTensor(tensor, shape);
    if (request.raw_input_contents_size() > 0) {
      const std::string& raw = request.raw_input_contents(i);
      Require(raw.size() == tensor.nbytes() && (raw.empty() || std::memcmp(raw.data(), tensor.data_ptr(), raw.size()) == 0),
              "raw bytes that do not come back as sent");
    }
  }
}

void DecodePredict(const est::serving::tf::PredictRequest& request) {
  est::serving::WireInputs inputs;
  try {
    inputs = est::serving::DecodePredictInputs(request, kMaxBytes);
  } catch (const est::serving::RequestError&) {
    return;
  }
  for (const auto& [name, proto] : request.inputs()) {
    std::vector<int64_t> shape;
    for (const auto& dim : proto.tensor_shape().dim()) shape.push_back(dim.size());
    auto strings = inputs.strings.find(name);
    if (strings != inputs.strings.end()) {
      CheckStrings(strings->second, shape);
      continue;
    }
    const at::Tensor& tensor = inputs.tensors.at(name);
    CheckTensor(tensor, shape);
    if (!proto.tensor_content().empty())
      Require(std::memcmp(proto.tensor_content().data(), tensor.data_ptr(), tensor.nbytes()) == 0,
              "tensor_content that does not come back as sent");
    // An answer is encoded from what was decoded, as the server does.
    est::serving::tf::TensorProto back;
    est::serving::TensorToProto(tensor, back);
    Require(back.tensor_content().size() == tensor.nbytes(), "an answer of another size");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  const void* message = bytes + 1;
  const int length = static_cast<int>(size - 1);
  if (bytes[0] % 2 == 0) {
    est::serving::v2::ModelInferRequest request;
    if (request.ParseFromArray(message, length)) DecodeInfer(request);
  } else {
    est::serving::tf::PredictRequest request;
    if (request.ParseFromArray(message, length)) DecodePredict(request);
  }
  return 0;
}
