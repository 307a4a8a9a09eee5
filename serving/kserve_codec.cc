#include "serving/kserve_codec.h"

#include <ATen/ATen.h>

#include <set>
#include <utility>

#include "serving/predictor.h"
#include "serving/proto/kserve_v2.pb.h"
#include "serving/wire_tensor.h"

namespace est::serving {
namespace {

/// The datatypes est-serve takes, both ways.
const std::vector<std::pair<std::string, at::ScalarType>>& Datatypes() {
  static const std::vector<std::pair<std::string, at::ScalarType>> kDatatypes = {
      {"BOOL", at::kBool},   {"UINT8", at::kByte},  {"INT8", at::kChar},  {"INT16", at::kShort},
      {"INT32", at::kInt},   {"INT64", at::kLong},  {"FP16", at::kHalf},  {"FP32", at::kFloat},
      {"FP64", at::kDouble}, {"BF16", at::kBFloat16}};
  return kDatatypes;
}

std::string DatatypeNames() {
  std::string names;
  for (const auto& [name, dtype] : Datatypes()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

/// The tensor of an input given by its typed contents: the field of its datatype's family.
at::Tensor FromContents(const v2::ModelInferRequest::InferInputTensor& input, at::ScalarType dtype,
                        const std::vector<int64_t>& shape, int64_t max_bytes) {
  const v2::InferTensorContents& contents = input.contents();
  const std::string& name = input.name();
  switch (dtype) {
    case at::kBool:
      return TensorFromValues(name, dtype, shape, contents.bool_contents().data(), contents.bool_contents_size(),
                              max_bytes, false);
    case at::kChar:
    case at::kShort:
    case at::kInt:
      return TensorFromValues(name, dtype, shape, contents.int_contents().data(), contents.int_contents_size(),
                              max_bytes, false);
    case at::kByte: {
      // uint_contents are uint32: the same bits as int32 below 2^31, which UINT8 values are.
      std::vector<int32_t> values(contents.uint_contents().begin(), contents.uint_contents().end());
      return TensorFromValues(name, dtype, shape, values.data(), static_cast<int64_t>(values.size()), max_bytes, false);
    }
    case at::kLong:
      return TensorFromValues(name, dtype, shape, contents.int64_contents().data(), contents.int64_contents_size(),
                              max_bytes, false);
    case at::kFloat:
      return TensorFromValues(name, dtype, shape, contents.fp32_contents().data(), contents.fp32_contents_size(),
                              max_bytes, false);
    case at::kDouble:
      return TensorFromValues(name, dtype, shape, contents.fp64_contents().data(), contents.fp64_contents_size(),
                              max_bytes, false);
    default:
      throw RequestError("input '" + name + "' of datatype " + input.datatype() +
                         " must come in raw_input_contents: the datatype has no typed contents");
  }
}

}  // namespace

std::string V2Datatype(at::ScalarType dtype) {
  for (const auto& [name, type] : Datatypes())
    if (type == dtype) return name;
  EST_ASSERT(false, "no Open Inference Protocol datatype for ", c10::toString(dtype));
  return "";
}

std::optional<at::ScalarType> DtypeOfV2Datatype(const std::string& datatype) {
  for (const auto& [name, dtype] : Datatypes())
    if (name == datatype) return dtype;
  return std::nullopt;
}

WireInputs DecodeInferInputs(const v2::ModelInferRequest& request, int64_t max_bytes) {
  const int raw_count = request.raw_input_contents_size();
  EST_CHECK(raw_count == 0 || raw_count == request.inputs_size(), RequestError, "the request has ", raw_count,
            " raw_input_contents for ", request.inputs_size(), " inputs; expected one per input, or none");
  WireInputs inputs;
  for (int i = 0; i < request.inputs_size(); ++i) {
    const auto& input = request.inputs(i);
    const std::string& name = input.name();
    EST_CHECK(!inputs.has(name), RequestError, "input '", name, "' is given twice");
    EST_CHECK(input.parameters().count("shared_memory_region") == 0, RequestError, "input '", name,
              "' is in shared memory, which est-serve does not take; expected its contents in the request");
    const bool bytes = input.datatype() == kV2BytesDatatype;
    const std::optional<at::ScalarType> dtype = DtypeOfV2Datatype(input.datatype());
    EST_CHECK(bytes || dtype.has_value(), RequestError, "input '", name, "' has datatype '", input.datatype(),
              "'; expected one of ", DatatypeNames(), ", ", kV2BytesDatatype);
    const std::vector<int64_t> shape(input.shape().begin(), input.shape().end());
    const bool has_contents = input.has_contents() && input.contents().ByteSizeLong() > 0;
    if (raw_count > 0) {
      EST_CHECK(!has_contents, RequestError, "input '", name,
                "' has both typed contents and raw_input_contents; expected one of them");
      const std::string& raw = request.raw_input_contents(i);
      if (bytes)
        inputs.strings[name] = ByteStringsFromRaw(name, shape, raw, max_bytes);
      else
        inputs.tensors[name] = TensorFromBytes(name, *dtype, shape, raw, max_bytes);
    } else if (bytes) {
      const auto& values = input.contents().bytes_contents();
      inputs.strings[name] =
          ByteStringsFromValues(name, shape, std::vector<std::string>(values.begin(), values.end()), max_bytes, false);
    } else {
      inputs.tensors[name] = FromContents(input, *dtype, shape, max_bytes);
    }
  }
  return inputs;
}

std::vector<std::string> RequestedInferOutputs(const v2::ModelInferRequest& request,
                                               const std::vector<TensorSpec>& outputs) {
  std::vector<std::string> names;
  if (request.outputs_size() == 0) {
    for (const TensorSpec& output : outputs) names.push_back(output.name);
    return names;
  }
  std::set<std::string> seen;
  for (const auto& requested : request.outputs()) {
    bool known = false;
    for (const TensorSpec& output : outputs) known = known || output.name == requested.name();
    EST_CHECK(known, RequestError, "the request asks for output '", requested.name(),
              "', which the model does not have; it has ", QuotedNames(outputs));
    EST_CHECK(seen.insert(requested.name()).second, RequestError, "output '", requested.name(), "' is asked for twice");
    EST_CHECK(requested.parameters().empty(), RequestError, "output '", requested.name(),
              "' has parameters (such as 'classification'), which est-serve does not take");
    names.push_back(requested.name());
  }
  return names;
}

void EncodeInferOutputs(const TensorMap& predictions, const std::vector<std::string>& names,
                        v2::ModelInferResponse& response) {
  for (const std::string& name : names) {
    const at::Tensor& tensor = predictions.at(name);
    auto* output = response.add_outputs();
    output->set_name(name);
    output->set_datatype(V2Datatype(tensor.scalar_type()));
    for (int64_t size : tensor.sizes()) output->add_shape(size);
    response.add_raw_output_contents(TensorBytes(tensor));
  }
}

}  // namespace est::serving
