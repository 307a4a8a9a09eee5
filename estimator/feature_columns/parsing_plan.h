#pragma once
/// ParsingPlan: the raw features a set of columns reads and how each is parsed from a
/// tf.train.Example — TensorFlow's make_parse_example_spec — with, for a string feature, the ids
/// each of its values becomes while the record is parsed (a vocabulary id, a hash bucket, a
/// fingerprint for a cross): one int64 per distinct use, so strings never leave the parser.
///
/// Like TensorFlow's spec, categorical and weight features are VarLen, numeric ones FixedLen.
/// A string feature read by k different uses parses to int64 [values, k] (k = 1: [values]), the
/// uses in the order of their names, so that every plan of the same uses lays them out alike; the
/// columns find their slot by their use. Parse and read a batch with plans of the same columns
/// (a plan of other uses is a DataError when the batch is read).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/example.h"
#include "estimator/feature_columns/feature_column.h"

namespace est::feature_columns {

/// What a string value becomes under one use.
using StringToId = std::function<int64_t(std::string_view value)>;

/// How every raw feature of a set of columns is parsed.
class ParsingPlan {
 public:
  /// An empty plan.
  ParsingPlan() = default;
  /// The plan of `columns` and of the columns they build on. ConfigError naming the key when two
  /// columns read one feature in different ways (as a number and as categories).
  explicit ParsingPlan(const std::vector<FeatureColumnPtr>& columns);

  /// The spec to parse records with (data::ParseExample); a string feature's values go through
  /// an ids decoder that writes each use's id.
  data::ExampleSpec example_spec() const;

  /// A FixedLen float32 feature of `shape`, filled by `default_value` (of that shape or a
  /// scalar; undefined: a record must hold it).
  void add_numeric(const std::string& key, std::vector<int64_t> shape, at::Tensor default_value);
  /// A VarLen int64 feature: integer categorical values.
  void add_integers(const std::string& key);
  /// A VarLen float32 feature: the weights of a weighted categorical column.
  void add_floats(const std::string& key);
  /// A VarLen bytes feature whose values become `id_of(value)` under `use` (a name for the
  /// mapping: "vocabulary:<column>", "hash_bucket:<n>", "fingerprint"; one slot per use).
  void add_strings(const std::string& key, const std::string& use, StringToId id_of);

  /// Whether `key` is read.
  bool has(const std::string& key) const { return features_.count(key) == 1; }
  /// Whether `key` is a string feature.
  bool is_strings(const std::string& key) const;
  /// The slot of `use` among `key`'s uses, and how many uses it has; ConfigError when the plan
  /// does not parse `key` so.
  int64_t slot(const std::string& key, const std::string& use) const;
  /// The number of uses of the string feature `key`.
  int64_t slots(const std::string& key) const;

 private:
  enum class Kind { kNumeric, kIntegers, kFloats, kStrings };
  struct Use {
    std::string name;
    StringToId id_of;
  };
  struct Feature {
    Kind kind;
    std::vector<int64_t> shape;
    at::Tensor default_value;
    std::vector<Use> uses;
  };
  Feature& add(const std::string& key, Kind kind);
  const Feature& feature(const std::string& key) const;

  std::map<std::string, Feature> features_;
};

/// tf.feature_column.make_parse_example_spec: ParsingPlan(columns).example_spec().
data::ExampleSpec make_parse_example_spec(const std::vector<FeatureColumnPtr>& columns);

}  // namespace est::feature_columns
