#include "estimator/export/serving_signature.h"

#include <ATen/ATen.h>

#include <set>

#include "common/error.h"

namespace est {

void ValidateServingInputs(const std::vector<TensorSpec>& inputs) {
  EST_CHECK(!inputs.empty(), ConfigError, "the serving input receiver declares no inputs; expected at least one");
  std::set<std::string> names;
  for (const TensorSpec& input : inputs) {
    EST_CHECK(!input.name.empty(), ConfigError, "a serving input has no name");
    EST_CHECK(names.insert(input.name).second, ConfigError, "serving input '", input.name, "' is declared twice");
    EST_CHECK(!input.shape.empty(), ConfigError, "serving input '", input.name,
              "' has rank 0; expected a batch dimension first (-1)");
    for (int64_t size : input.shape)
      EST_CHECK(size >= -1, ConfigError, "serving input '", input.name, "' has size ", size,
                "; expected -1 (any) or a size");
    DtypeName(input.dtype);  // a dtype a signature can hold
  }
}

void ValidateServingInputReceiver(const ServingInputReceiver& receiver) {
  ValidateServingInputs(receiver.inputs);
  EST_CHECK(receiver.records_input.empty() == (receiver.parse_records == nullptr), ConfigError,
            "the serving input receiver has ", receiver.records_input.empty() ? "no records_input" : "a records_input",
            " but ", receiver.parse_records ? "a parse_records function" : "no parse_records function",
            "; expected both (requests of serialized records) or neither (requests of tensors)");
}

Features ExampleRequest(const std::vector<TensorSpec>& inputs, int64_t free_size) {
  Features request;
  for (const TensorSpec& input : inputs) {
    std::vector<int64_t> sizes = input.shape;
    for (int64_t& size : sizes)
      if (size < 0) size = free_size;
    request[input.name] = at::zeros(sizes, at::TensorOptions().dtype(input.dtype));
  }
  return request;
}

std::vector<TensorSpec> OutputSignature(const std::vector<TensorSpec>& inputs,
                                        const std::function<TensorMap(const Features&)>& predict) {
  const TensorMap one = predict(ExampleRequest(inputs, 1));
  const TensorMap two = predict(ExampleRequest(inputs, 2));
  std::vector<TensorSpec> outputs;
  for (const auto& [name, tensor] : one) {
    auto other = two.find(name);
    EST_CHECK(other != two.end(), ModelError, "model_fn's prediction '", name, "' comes and goes between requests");
    EST_CHECK(tensor.scalar_type() == other->second.scalar_type() && tensor.dim() == other->second.dim(), ModelError,
              "model_fn's prediction '", name, "' changes its dtype or rank with the request's size");
    TensorSpec spec;
    spec.name = name;
    spec.dtype = tensor.scalar_type();
    for (int64_t d = 0; d < tensor.dim(); ++d)
      spec.shape.push_back(tensor.size(d) == other->second.size(d) ? tensor.size(d) : -1);
    outputs.push_back(std::move(spec));
  }
  return outputs;
}

std::string RequestMismatch(const std::vector<TensorSpec>& inputs, const Features& request) {
  for (const auto& [name, tensor] : request) {
    bool known = false;
    for (const TensorSpec& input : inputs) known = known || input.name == name;
    if (known) continue;
    return "the request has input '" + name + "', which the model does not take; it takes " + QuotedNames(inputs);
  }
  int64_t batch = -1;
  std::string first;
  for (const TensorSpec& input : inputs) {
    auto it = request.find(input.name);
    if (it == request.end()) return "the request lacks input '" + input.describe() + "'";
    if (std::string mismatch = input.mismatch(it->second, "input"); !mismatch.empty()) return mismatch;
    if (input.shape.front() >= 0) continue;
    if (batch < 0) {
      batch = it->second.size(0);
      first = input.name;
    } else if (it->second.size(0) != batch) {
      return "input '" + input.name + "' has " + std::to_string(it->second.size(0)) + " rows but input '" + first +
             "' has " + std::to_string(batch) + "; expected the same batch size";
    }
  }
  return "";
}

std::string SignatureDifference(const std::vector<TensorSpec>& ours, const std::vector<TensorSpec>& theirs,
                                const std::string& what, const std::string& here, const std::string& there) {
  for (const TensorSpec& spec : ours) {
    const TensorSpec* match = nullptr;
    for (const TensorSpec& other : theirs)
      if (other.name == spec.name) match = &other;
    if (match == nullptr) return what + " '" + spec.name + "' is " + here + " but not " + there;
    if (*match != spec) return what + " " + spec.describe() + " " + here + ", " + match->describe() + " " + there;
  }
  for (const TensorSpec& other : theirs) {
    bool found = false;
    for (const TensorSpec& spec : ours) found = found || spec.name == other.name;
    if (!found) return what + " '" + other.name + "' is " + there + " but not " + here;
  }
  return "";
}

}  // namespace est
