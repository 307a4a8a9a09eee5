#pragma once
/// TensorSpec: the name, dtype and shape of one input or output of a serving signature, a
/// dimension of -1 standing for any size (the batch dimension, usually), as in
/// tf.TensorSpec and the KServe v2 model metadata.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace est {

/// One named tensor of a serving signature.
struct TensorSpec {
  std::string name;
  at::ScalarType dtype = at::kFloat;
  /// Sizes, -1 where any size goes.
  std::vector<int64_t> shape;

  bool operator==(const TensorSpec& other) const {
    return name == other.name && dtype == other.dtype && shape == other.shape;
  }
  bool operator!=(const TensorSpec& other) const { return !(*this == other); }

  /// "image: float32 [-1, 28, 28, 1]".
  std::string describe() const;
  /// Why `tensor` does not fit this spec ("input 'image' has dtype int64; expected float32"),
  /// or "" when it does. `what` names the tensor's role in the message ("input", "output").
  std::string mismatch(const at::Tensor& tensor, const std::string& what) const;
};

/// A float32 or int64 feature of the tf.train.Example records a signature of records takes
/// (tf.io.FixedLenFeature): what a server needs to parse them without the serving input.
struct RecordFeature {
  std::string name;
  /// at::kFloat (a float_list) or at::kLong (an int64_list).
  at::ScalarType dtype = at::kFloat;
  /// The shape of one example's values.
  std::vector<int64_t> shape;
  /// What fills a missing feature, of `shape`; undefined: a missing one is an error.
  at::Tensor default_value;
};

/// The specs' names, quoted and comma-separated ("'x', 'y'"), for messages.
std::string QuotedNames(const std::vector<TensorSpec>& specs);

/// The dtype's name in serving signatures: "float32", "float64", "float16", "bfloat16",
/// "int8", "int16", "int32", "int64", "uint8", "bool".
std::string DtypeName(at::ScalarType dtype);
/// The dtype DtypeName calls `name`; ConfigError listing the names for another.
at::ScalarType ParseDtype(const std::string& name);

}  // namespace est
