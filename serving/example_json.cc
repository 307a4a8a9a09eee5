#include "serving/example_json.h"

#include "common/error.h"
#include "common/json_from_outside.h"
#include "data/example/example.pb.h"
#include "serving/json_tensor.h"
#include "serving/predictor.h"

namespace est::serving::detail {
namespace {

/// `value` (one JSON value or a list of them) as the feature `name` of an example.
void SetFeature(const std::string& name, const nlohmann::json& value, int64_t max_bytes, tfexample::Feature& feature) {
  std::vector<const nlohmann::json*> values;
  if (value.is_array()) {
    for (const nlohmann::json& element : value) values.push_back(&element);
  } else {
    values.push_back(&value);
  }
  bool strings = false, fractions = false, numbers = false;
  for (const nlohmann::json* element : values) {
    strings = strings || element->is_string() || element->is_object();
    numbers = numbers || element->is_number();
    fractions = fractions || element->is_number_float();
    EST_CHECK(element->is_string() || element->is_object() || element->is_number(), RequestError, "feature '", name,
              "' holds ", element->type_name(), "; expected numbers, strings or {\"b64\": \"<base64>\"} values");
  }
  EST_CHECK(!(strings && numbers), RequestError, "feature '", name,
            "' mixes numbers and strings; a tf.train.Example feature holds values of one kind");
  if (strings) {
    for (std::string& bytes : StringsOfJsonElements(name, values, max_bytes))
      feature.mutable_bytes_list()->add_value(std::move(bytes));
  } else if (fractions) {
    auto& list = *feature.mutable_float_list();
    for (const nlohmann::json* element : values) list.add_value(element->get<float>());
  } else {
    auto& list = *feature.mutable_int64_list();
    for (const nlohmann::json* element : values) {
      EST_CHECK(element->is_number_integer(), RequestError, "feature '", name, "' holds ", element->dump(),
                ", which is not an int64");
      list.add_value(element->get<int64_t>());
    }
  }
}

/// The JSON object `features` as a serialized tf.train.Example.
std::string ExampleOf(const nlohmann::json& features, const std::string& what, int64_t max_bytes) {
  EST_CHECK(features.is_object(), RequestError, what, " is ", features.type_name(),
            "; expected an object of features by name");
  tfexample::Example example;
  auto& map = *example.mutable_features()->mutable_feature();
  for (const auto& [name, value] : features.items()) SetFeature(name, value, max_bytes, map[name]);
  return example.SerializeAsString();
}

}  // namespace
}  // namespace est::serving::detail

namespace est::serving {

tf::Input DecodeExamplesJson(const std::string& body, int64_t max_bytes, tf::ModelSpec& spec) {
  const ParsedJson parsed = ParseJsonFromOutside(body);
  EST_CHECK(parsed.ok(), RequestError, "JSON Parse error: ", parsed.error);
  const nlohmann::json& json = parsed.value;
  EST_CHECK(json.is_object() && json.contains("examples") && json.at("examples").is_array(), RequestError,
            "Missing 'examples' key: the body of :classify and :regress is {\"examples\": [{...}, ...]}");
  for (const auto& [key, value] : json.items())
    EST_CHECK(key == "examples" || key == "context" || key == "signature_name", RequestError, "unknown key '", key,
              "'; expected \"examples\", \"context\" and \"signature_name\"");
  if (json.contains("signature_name")) {
    EST_CHECK(json.at("signature_name").is_string(), RequestError, "'signature_name' must be a string");
    spec.set_signature_name(json.at("signature_name").get<std::string>());
  }
  tf::Input input;
  const nlohmann::json& examples = json.at("examples");
  if (json.contains("context")) {
    auto& list = *input.mutable_example_list_with_context();
    list.set_context(detail::ExampleOf(json.at("context"), "'context'", max_bytes));
    for (size_t i = 0; i < examples.size(); ++i)
      list.add_examples(detail::ExampleOf(examples[i], "example " + std::to_string(i), max_bytes));
  } else {
    auto& list = *input.mutable_example_list();
    for (size_t i = 0; i < examples.size(); ++i)
      list.add_examples(detail::ExampleOf(examples[i], "example " + std::to_string(i), max_bytes));
  }
  return input;
}

}  // namespace est::serving

namespace est::serving::detail {

nlohmann::json ClassificationJson(const tf::ClassificationResult& result) {
  nlohmann::json results = nlohmann::json::array();
  for (const tf::Classifications& classes : result.classifications()) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const tf::Class& label : classes.classes()) pairs.push_back({label.label(), label.score()});
    results.push_back(std::move(pairs));
  }
  return {{"results", std::move(results)}};
}

nlohmann::json RegressionJson(const tf::RegressionResult& result) {
  nlohmann::json results = nlohmann::json::array();
  for (const tf::Regression& regression : result.regressions()) results.push_back(regression.value());
  return {{"results", std::move(results)}};
}

}  // namespace est::serving::detail
