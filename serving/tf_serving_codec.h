#pragma once
/// TensorFlow Serving's tensors (tf.make_tensor_proto's TensorProto) both ways, and the
/// signature an export has as TensorFlow Serving's SignatureDefMap.

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "estimator/export/tensor_spec.h"
#include "serving/wire_inputs.h"

namespace est {
struct ExportManifest;
}  // namespace est

namespace est::serving::tf {
class PredictRequest;
class SignatureDefMap;
class TensorProto;
}  // namespace est::serving::tf

namespace est::serving {

/// The signature name TensorFlow Serving takes for an empty one, and the only one an export has.
inline constexpr const char* kDefaultSignature = "serving_default";

/// The tensor `proto` holds: from tensor_content, or from its dtype's typed field (fewer values
/// than elements repeat the last, as TensorFlow reads them). RequestError naming `input` for a
/// dtype est-serve cannot take, an unknown rank, or contents that do not fit the shape.
at::Tensor TensorFromProto(const std::string& input, const tf::TensorProto& proto, int64_t max_bytes);

/// A PredictRequest's inputs: DT_STRING ones as byte strings (string_val, the last repeated as
/// TensorFlow reads them), the others as tensors (TensorFromProto). RequestError naming the input.
WireInputs DecodePredictInputs(const tf::PredictRequest& request, int64_t max_bytes);

/// `tensor` as a TensorProto (dtype, shape, tensor_content).
void TensorToProto(const at::Tensor& tensor, tf::TensorProto& proto);

/// The export's signature as a SignatureDefMap with one signature, "serving_default", a
/// predict method; an export of serialized records takes one DT_STRING input [-1].
void SignatureDefMapOf(const ExportManifest& manifest, tf::SignatureDefMap& map);

}  // namespace est::serving
