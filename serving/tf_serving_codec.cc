#include "serving/tf_serving_codec.h"

#include <ATen/ATen.h>

#include <optional>
#include <utility>

#include "estimator/export/export_manifest.h"
#include "serving/predictor.h"
#include "serving/proto/tf_serving.pb.h"
#include "serving/wire_tensor.h"

namespace est::serving {
namespace {

/// The DataTypes est-serve takes, both ways.
const std::vector<std::pair<tf::DataType, at::ScalarType>>& DataTypes() {
  static const std::vector<std::pair<tf::DataType, at::ScalarType>> kTypes = {
      {tf::DT_FLOAT, at::kFloat}, {tf::DT_DOUBLE, at::kDouble}, {tf::DT_INT32, at::kInt},
      {tf::DT_UINT8, at::kByte},  {tf::DT_INT16, at::kShort},   {tf::DT_INT8, at::kChar},
      {tf::DT_INT64, at::kLong},  {tf::DT_BOOL, at::kBool},     {tf::DT_HALF, at::kHalf},
      {tf::DT_BFLOAT16, at::kBFloat16}};
  return kTypes;
}

std::optional<at::ScalarType> DtypeOf(tf::DataType type) {
  for (const auto& [tf_type, dtype] : DataTypes())
    if (tf_type == type) return dtype;
  return std::nullopt;
}

tf::DataType TfDataType(at::ScalarType dtype) {
  for (const auto& [tf_type, type] : DataTypes())
    if (type == dtype) return tf_type;
  EST_ASSERT(false, "no TensorFlow DataType for ", c10::toString(dtype));
  return tf::DT_INVALID;
}

void ShapeToProto(const std::vector<int64_t>& shape, tf::TensorShapeProto& proto) {
  for (int64_t size : shape) proto.add_dim()->set_size(size);
}

/// The shape `proto` declares; RequestError naming `input` for an unknown rank.
std::vector<int64_t> ShapeOf(const std::string& input, const tf::TensorProto& proto) {
  EST_CHECK(!proto.tensor_shape().unknown_rank(), RequestError, "input '", input,
            "' has an unknown rank; expected its shape");
  std::vector<int64_t> shape;
  for (const auto& dim : proto.tensor_shape().dim()) shape.push_back(dim.size());
  return shape;
}

/// A half_val input: 16-bit patterns in int32s.
at::Tensor FromHalfValues(const std::string& input, at::ScalarType dtype, const std::vector<int64_t>& shape,
                          const tf::TensorProto& proto, int64_t max_bytes) {
  std::vector<int32_t> bits(proto.half_val().begin(), proto.half_val().end());
  at::Tensor wide = TensorFromValues(input, at::kInt, shape, bits.data(), static_cast<int64_t>(bits.size()),
                                     max_bytes, true);
  return wide.to(at::kShort).view(dtype);
}

}  // namespace

at::Tensor TensorFromProto(const std::string& input, const tf::TensorProto& proto, int64_t max_bytes) {
  const std::optional<at::ScalarType> dtype = DtypeOf(proto.dtype());
  EST_CHECK(dtype.has_value(), RequestError, "input '", input, "' has DataType ", tf::DataType_Name(proto.dtype()),
            " (", static_cast<int>(proto.dtype()), "); expected one of DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, ",
            "DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_BOOL");
  const std::vector<int64_t> shape = ShapeOf(input, proto);
  if (!proto.tensor_content().empty()) return TensorFromBytes(input, *dtype, shape, proto.tensor_content(), max_bytes);
  switch (*dtype) {
    case at::kFloat:
      return TensorFromValues(input, *dtype, shape, proto.float_val().data(), proto.float_val_size(), max_bytes, true);
    case at::kDouble:
      return TensorFromValues(input, *dtype, shape, proto.double_val().data(), proto.double_val_size(), max_bytes,
                              true);
    case at::kInt:
    case at::kShort:
    case at::kChar:
    case at::kByte:
      return TensorFromValues(input, *dtype, shape, proto.int_val().data(), proto.int_val_size(), max_bytes, true);
    case at::kLong:
      return TensorFromValues(input, *dtype, shape, proto.int64_val().data(), proto.int64_val_size(), max_bytes, true);
    case at::kBool:
      return TensorFromValues(input, *dtype, shape, proto.bool_val().data(), proto.bool_val_size(), max_bytes, true);
    default:
      return FromHalfValues(input, *dtype, shape, proto, max_bytes);
  }
}

void TensorToProto(const at::Tensor& tensor, tf::TensorProto& proto) {
  proto.set_dtype(TfDataType(tensor.scalar_type()));
  ShapeToProto(tensor.sizes().vec(), *proto.mutable_tensor_shape());
  proto.set_tensor_content(TensorBytes(tensor));
}

WireInputs DecodePredictInputs(const tf::PredictRequest& request, int64_t max_bytes) {
  WireInputs inputs;
  for (const auto& [name, proto] : request.inputs()) {
    if (proto.dtype() != tf::DT_STRING) {
      inputs.tensors[name] = TensorFromProto(name, proto, max_bytes);
      continue;
    }
    EST_CHECK(proto.tensor_content().empty(), RequestError, "input '", name,
              "' is DT_STRING in tensor_content; expected its strings in string_val");
    inputs.strings[name] =
        ByteStringsFromValues(name, ShapeOf(name, proto),
                              std::vector<std::string>(proto.string_val().begin(), proto.string_val().end()), max_bytes,
                              true);
  }
  return inputs;
}

void SignatureDefMapOf(const ExportManifest& manifest, tf::SignatureDefMap& map) {
  tf::SignatureDef& signature = (*map.mutable_signature_def())[kDefaultSignature];
  signature.set_method_name("tensorflow/serving/predict");
  auto add = [](const std::vector<TensorSpec>& specs, const std::string& prefix,
                google::protobuf::Map<std::string, tf::TensorInfo>& infos) {
    for (const TensorSpec& spec : specs) {
      tf::TensorInfo& info = infos[spec.name];
      info.set_name(prefix + spec.name + ":0");
      info.set_dtype(TfDataType(spec.dtype));
      ShapeToProto(spec.shape, *info.mutable_tensor_shape());
    }
  };
  if (manifest.records_input.empty()) {
    add(manifest.inputs, "serving_default_", *signature.mutable_inputs());
  } else {
    tf::TensorInfo& info = (*signature.mutable_inputs())[manifest.records_input];
    info.set_name("serving_default_" + manifest.records_input + ":0");
    info.set_dtype(tf::DT_STRING);
    ShapeToProto({-1}, *info.mutable_tensor_shape());
  }
  add(manifest.outputs, "StatefulPartitionedCall_", *signature.mutable_outputs());
}

}  // namespace est::serving
