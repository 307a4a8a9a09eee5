#include "data/example/feature_values.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/empty.h>

#include <cstring>
#include <sstream>

#include "common/error.h"
#include "data/example/wire_reader.h"
#include "data/ops/stack_tensors.h"

namespace est::data {
namespace {

constexpr int kBytesList = 1;
constexpr int kFloatList = 2;
constexpr int kInt64List = 3;

int KindOf(FeatureType type) {
  switch (type) {
    case FeatureType::kBytes:
      return kBytesList;
    case FeatureType::kFloat32:
      return kFloatList;
    case FeatureType::kInt64:
      break;
  }
  return kInt64List;
}

const char* KindName(int kind) {
  return kind == kBytesList ? "bytes" : kind == kFloatList ? "float32" : "int64";
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t elements = 1;
  for (int64_t size : shape) elements *= size;
  return elements;
}

/// Calls `on_value` for each value field of a serialized list (field 1 of BytesList,
/// FloatList and Int64List), packed or not.
template <typename OnValue>
void ForEachValueField(std::string_view list, OnValue on_value) {
  wire::MessageReader reader(list);
  wire::Field field;
  while (reader.next(&field)) {
    if (field.number == 1) on_value(field);
  }
}

}  // namespace

void FeatureValues::add(std::string_view serialized_feature) {
  present_ = true;
  wire::MessageReader reader(serialized_feature);
  wire::Field field;
  while (reader.next(&field)) {
    if (field.type != wire::WireType::kLengthDelimited) continue;
    const int kind = static_cast<int>(field.number);
    if (kind != kBytesList && kind != kFloatList && kind != kInt64List) continue;
    if (kind != kind_) {
      lists_ = 0;
      more_lists_.clear();
    }
    kind_ = kind;
    if (lists_++ == 0) {
      first_list_ = field.bytes;
    } else {
      more_lists_.push_back(field.bytes);
    }
  }
}

int64_t FeatureValues::count(const FeatureSpec& spec, const std::string& name) const {
  if (kind_ == 0) return 0;  // a Feature with no list holds no values of any kind
  EST_CHECK(kind_ == KindOf(spec.type()), DataError, "feature '", name, "' holds ", KindName(kind_),
            " values; the spec expects ", FeatureTypeName(spec.type()));
  int64_t values = 0;
  for_each_list([&](std::string_view list) {
    ForEachValueField(list, [&](const wire::Field& field) {
      switch (kind_) {
        case kBytesList:
          if (field.type == wire::WireType::kLengthDelimited) ++values;
          break;
        case kFloatList:
          if (field.type == wire::WireType::kFixed32) {
            ++values;
          } else if (field.type == wire::WireType::kLengthDelimited) {
            EST_CHECK(field.bytes.size() % 4 == 0, DataError, "feature '", name, "': a packed float list of ",
                      field.bytes.size(), " bytes, not a multiple of 4");
            values += static_cast<int64_t>(field.bytes.size() / 4);
          }
          break;
        default:
          if (field.type == wire::WireType::kVarint) {
            ++values;
          } else if (field.type == wire::WireType::kLengthDelimited) {
            for (char byte : field.bytes) values += (static_cast<uint8_t>(byte) & 0x80) == 0 ? 1 : 0;
            EST_CHECK(field.bytes.empty() || (static_cast<uint8_t>(field.bytes.back()) & 0x80) == 0, DataError,
                      "feature '", name, "': a packed int64 list ends inside a varint");
          }
      }
    });
  });
  return values;
}

at::Tensor HostTensor(at::IntArrayRef shape, at::ScalarType dtype) { return at::detail::empty_cpu(shape, dtype); }

at::Tensor HostScalar(int64_t value) {
  at::Tensor scalar = HostTensor({}, at::kLong);
  *scalar.data_ptr<int64_t>() = value;
  return scalar;
}

void FeatureValues::write_numbers(FeatureType type, void* out_values) const {
  const bool floats = type == FeatureType::kFloat32;
  char* out = static_cast<char*>(out_values);
  for_each_list([&](std::string_view list) {
    ForEachValueField(list, [&](const wire::Field& field) {
      if (floats) {
        const bool has_floats = field.type == wire::WireType::kFixed32 || field.type == wire::WireType::kLengthDelimited;
        if (has_floats && !field.bytes.empty()) {
          std::memcpy(out, field.bytes.data(), field.bytes.size());  // little-endian, as on every host we build for
          out += field.bytes.size();
        }
      } else if (field.type == wire::WireType::kVarint) {
        std::memcpy(out, &field.varint, sizeof(int64_t));
        out += sizeof(int64_t);
      } else if (field.type == wire::WireType::kLengthDelimited) {
        std::string_view packed = field.bytes;
        while (!packed.empty()) {
          const uint64_t value = wire::ReadVarint(&packed);
          std::memcpy(out, &value, sizeof(int64_t));
          out += sizeof(int64_t);
        }
      }
    });
  });
}

at::Tensor FeatureValues::numbers(FeatureType type, at::IntArrayRef shape) const {
  at::Tensor tensor = HostTensor(shape, type == FeatureType::kFloat32 ? at::kFloat : at::kLong);
  write_numbers(type, tensor.data_ptr());
  return tensor;
}

void FeatureValues::write_ids(const FeatureSpec& spec, const std::string& name, int64_t count, int64_t* out) const {
  const int64_t width = spec.ids_per_value();
  int64_t value = 0;
  for_each_list([&](std::string_view list) {
    ForEachValueField(list, [&](const wire::Field& field) {
      if (field.type != wire::WireType::kLengthDelimited) return;
      try {
        spec.bytes_to_ids()(field.bytes, out + value * width);
      } catch (const Error& e) {
        EST_THROW(DataError, "feature '", name, "', value ", value, ": ", e.what());
      }
      ++value;
    });
  });
  EST_ASSERT(value == count, "feature '", name, "': counted ", count, " bytes values but decoded ", value);
}

at::Tensor FeatureValues::ids(const FeatureSpec& spec, const std::string& name, int64_t count,
                              std::vector<int64_t> shape) const {
  if (spec.ids_per_value() > 1) shape.push_back(spec.ids_per_value());
  at::Tensor tensor = HostTensor(shape, at::kLong);
  write_ids(spec, name, count, tensor.data_ptr<int64_t>());
  return tensor;
}

at::Tensor FeatureValues::decoded(const FeatureSpec& spec, const std::string& name, int64_t count, bool stack) const {
  std::vector<at::Tensor> tensors;
  tensors.reserve(static_cast<size_t>(count));
  for_each_list([&](std::string_view list) {
    ForEachValueField(list, [&](const wire::Field& field) {
      if (field.type != wire::WireType::kLengthDelimited) return;
      at::Tensor tensor;
      try {
        tensor = spec.bytes_decoder()(field.bytes);
      } catch (const Error& e) {
        EST_THROW(DataError, "feature '", name, "', value ", tensors.size(), ": ", e.what());
      }
      EST_CHECK(tensor.defined(), DataError, "feature '", name, "': the decoder returned an undefined tensor for value ",
                tensors.size());
      if (!tensors.empty()) {
        const at::Tensor& first = tensors.front();
        EST_CHECK(tensor.sizes() == first.sizes() && tensor.scalar_type() == first.scalar_type(), DataError,
                  "feature '", name, "': value 0 decodes to ", first.scalar_type(), " ", first.sizes(), " but value ",
                  tensors.size(), " to ", tensor.scalar_type(), " ", tensor.sizes(), "; the values must decode alike");
      }
      tensors.push_back(tensor.contiguous());
    });
  });
  if (tensors.empty()) return at::empty({0}, at::kByte);
  if (!stack) return tensors.front();
  return StackTensors(tensors);
}

at::Tensor FeatureValues::fixed_len(const FeatureSpec& spec, const std::string& name) const {
  if (!present_) {
    EST_CHECK(spec.default_tensor().defined(), DataError, "feature '", name,
              "' is missing from the record and its spec has no default value");
    return spec.default_tensor();
  }
  const int64_t values = count(spec, name);
  const int64_t expected = NumElements(spec.shape());
  EST_CHECK(values == expected, DataError, "feature '", name, "' has ", values, " ", FeatureTypeName(spec.type()),
            " value(s); its shape ", DescribeShape(spec.shape()), " needs ", expected);
  if (spec.type() != FeatureType::kBytes) return numbers(spec.type(), spec.shape());
  if (spec.bytes_to_ids()) return ids(spec, name, values, spec.shape());
  if (spec.shape().empty()) return decoded(spec, name, values, /*stack=*/false);  // one value: no copy
  at::Tensor stacked = decoded(spec, name, values);
  std::vector<int64_t> shape = spec.shape();
  shape.insert(shape.end(), stacked.sizes().begin() + 1, stacked.sizes().end());
  return stacked.view(shape);
}

at::Tensor FeatureValues::var_len(const FeatureSpec& spec, const std::string& name, int64_t* length) const {
  *length = present_ ? count(spec, name) : 0;
  if (spec.type() != FeatureType::kBytes) return numbers(spec.type(), {*length});
  if (spec.bytes_to_ids()) return ids(spec, name, *length, {*length});
  return decoded(spec, name, *length);
}

std::string DescribeShape(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i == 0 ? "" : ", ") << shape[i];
  out << "]";
  return out.str();
}

}  // namespace est::data
