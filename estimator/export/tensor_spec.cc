#include "estimator/export/tensor_spec.h"

#include <array>
#include <sstream>
#include <utility>

#include "common/error.h"

namespace est {
namespace {

constexpr std::array<std::pair<at::ScalarType, const char*>, 10> kDtypeNames = {{
    {at::kFloat, "float32"},
    {at::kDouble, "float64"},
    {at::kHalf, "float16"},
    {at::kBFloat16, "bfloat16"},
    {at::kChar, "int8"},
    {at::kShort, "int16"},
    {at::kInt, "int32"},
    {at::kLong, "int64"},
    {at::kByte, "uint8"},
    {at::kBool, "bool"},
}};

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

// DtypeName's name, or LibTorch's for a dtype without one (for messages).
std::string NameForMessage(at::ScalarType dtype) {
  for (const auto& [type, name] : kDtypeNames)
    if (type == dtype) return name;
  return c10::toString(dtype);
}

}  // namespace

std::string DtypeName(at::ScalarType dtype) {
  for (const auto& [type, name] : kDtypeNames)
    if (type == dtype) return name;
  EST_THROW(ConfigError, "dtype ", dtype, " cannot be part of a serving signature; expected one of float32, "
            "float64, float16, bfloat16, int8, int16, int32, int64, uint8, bool");
}

at::ScalarType ParseDtype(const std::string& name) {
  for (const auto& [type, known] : kDtypeNames)
    if (name == known) return type;
  EST_THROW(ConfigError, "unknown dtype '", name, "'; expected one of float32, float64, float16, bfloat16, int8, "
            "int16, int32, int64, uint8, bool");
}

std::string TensorSpec::describe() const { return name + ": " + DtypeName(dtype) + " " + ShapeText(shape); }

std::string TensorSpec::mismatch(const at::Tensor& tensor, const std::string& what) const {
  const std::string subject = what + " '" + name + "'";
  if (!tensor.defined()) return subject + " is missing";
  if (tensor.scalar_type() != dtype)
    return subject + " has dtype " + NameForMessage(tensor.scalar_type()) + "; expected " + DtypeName(dtype);
  const std::vector<int64_t> sizes = tensor.sizes().vec();
  bool fits = sizes.size() == shape.size();
  for (size_t d = 0; fits && d < shape.size(); ++d) fits = shape[d] < 0 || shape[d] == sizes[d];
  if (!fits) return subject + " has shape " + ShapeText(sizes) + "; expected " + ShapeText(shape) + " (-1: any size)";
  return "";
}

std::string QuotedNames(const std::vector<TensorSpec>& specs) {
  std::string names;
  for (const TensorSpec& spec : specs) names += (names.empty() ? "'" : ", '") + spec.name + "'";
  return names;
}

}  // namespace est
