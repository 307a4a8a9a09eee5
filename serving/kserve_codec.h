#pragma once
/// The Open Inference Protocol's tensors (KServe v2, as tritonclient sends them): a
/// ModelInferRequest's inputs decoded into a request's tensors, and predictions encoded into a
/// ModelInferResponse's outputs, raw little-endian bytes aligned with them.

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>
#include <vector>

#include "data/element.h"
#include "estimator/estimator_spec.h"
#include "estimator/export/tensor_spec.h"
#include "serving/wire_inputs.h"

namespace est::serving::v2 {
class ModelInferRequest;
class ModelInferResponse;
}  // namespace est::serving::v2

namespace est::serving {

/// The protocol's datatype of byte strings (serialized records), which no tensor has.
inline constexpr const char* kV2BytesDatatype = "BYTES";

/// The protocol's datatype for `dtype` ("FP32", "INT64", "BOOL", …).
std::string V2Datatype(at::ScalarType dtype);
/// The dtype of a datatype string, or nullopt for one est-serve cannot take (UINT16,
/// UINT32, UINT64, BYTES (byte strings, not a tensor), or unknown).
std::optional<at::ScalarType> DtypeOfV2Datatype(const std::string& datatype);

/// The request's inputs, each as the request declares it (name, datatype, shape) and carries it
/// (raw_input_contents or typed contents): BYTES inputs as byte strings, the others as tensors.
/// RequestError naming the input for a datatype est-serve cannot take, a shape the bytes do not
/// fill, contents missing or given twice, a name given twice, more than `max_bytes` in one input,
/// or shared-memory inputs. Whether the inputs fit the model is RequestTensors' and the
/// Predictor's check.
WireInputs DecodeInferInputs(const v2::ModelInferRequest& request, int64_t max_bytes);

/// The output names the request asks for, in its order: all of `outputs` when it asks for
/// none. RequestError for an output the model does not have or one asked for twice.
std::vector<std::string> RequestedInferOutputs(const v2::ModelInferRequest& request,
                                               const std::vector<TensorSpec>& outputs);

/// Adds each of `names` from `predictions` to `response`: name, datatype, shape, and its bytes
/// in raw_output_contents.
void EncodeInferOutputs(const TensorMap& predictions, const std::vector<std::string>& names,
                        v2::ModelInferResponse& response);

}  // namespace est::serving
