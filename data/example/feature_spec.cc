// FeatureSpec: how one feature of an Example is parsed.

#include <utility>

#include "common/error.h"
#include "data/example.h"

namespace est::data {
std::string FeatureTypeName(FeatureType type) {
  switch (type) {
    case FeatureType::kFloat32:
      return "float32";
    case FeatureType::kInt64:
      return "int64";
    case FeatureType::kBytes:
      break;
  }
  return "bytes";
}

FeatureSpec::FeatureSpec(FeatureType type, bool fixed_length, std::vector<int64_t> shape)
    : type_(type), fixed_length_(fixed_length), shape_(std::move(shape)) {
  if (type_ == FeatureType::kBytes) decoder_ = BytesAsUint8;
}

FeatureSpec FeatureSpec::FixedLen(FeatureType type, std::vector<int64_t> shape) {
  for (int64_t size : shape) {
    EST_CHECK(size >= 0, ConfigError, "FeatureSpec::FixedLen: a shape with size ", size,
              "; FixedLen shapes are fully known (sizes >= 0)");
  }
  return FeatureSpec(type, true, std::move(shape));
}

FeatureSpec FeatureSpec::VarLen(FeatureType type) { return FeatureSpec(type, false, {}); }

FeatureSpec& FeatureSpec::default_value(at::Tensor value) {
  EST_CHECK(fixed_length_, ConfigError, "FeatureSpec: a VarLen feature takes no default value (a missing one has no values)");
  EST_CHECK(value.defined(), ConfigError, "FeatureSpec::default_value: the tensor is undefined");
  if (type_ != FeatureType::kBytes) {
    const auto dtype = type_ == FeatureType::kFloat32 ? at::kFloat : at::kLong;
    EST_CHECK(value.scalar_type() == dtype, ConfigError, "FeatureSpec::default_value: a ", FeatureTypeName(type_),
              " feature's default must be ", dtype, ", not ", value.scalar_type());
    EST_CHECK(value.dim() == 0 || value.sizes() == at::IntArrayRef(shape_), ConfigError,
              "FeatureSpec::default_value: the default has shape ", value.sizes(), "; the feature's shape is ",
              at::IntArrayRef(shape_), " (or give a scalar)");
    value = value.expand(shape_).contiguous();
  }
  default_value_ = value.cpu();
  return *this;
}

FeatureSpec& FeatureSpec::decoder(BytesDecoder decoder) {
  EST_CHECK(type_ == FeatureType::kBytes, ConfigError, "FeatureSpec::decoder: a ", FeatureTypeName(type_),
            " feature has no bytes to decode");
  EST_CHECK(decoder != nullptr, ConfigError, "FeatureSpec::decoder: the decoder is empty");
  decoder_ = std::move(decoder);
  ids_decoder_ = nullptr;
  return *this;
}

FeatureSpec& FeatureSpec::ids_decoder(BytesToIds decoder, int64_t ids_per_value) {
  EST_CHECK(type_ == FeatureType::kBytes, ConfigError, "FeatureSpec::ids_decoder: a ", FeatureTypeName(type_),
            " feature has no bytes to decode");
  EST_CHECK(decoder != nullptr, ConfigError, "FeatureSpec::ids_decoder: the decoder is empty");
  EST_CHECK(ids_per_value >= 1, ConfigError, "FeatureSpec::ids_decoder: ids_per_value is ", ids_per_value,
            "; it must be at least 1");
  ids_decoder_ = std::move(decoder);
  ids_per_value_ = ids_per_value;
  return *this;
}

}  // namespace est::data
