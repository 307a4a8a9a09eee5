#pragma once
// The "columns" of est-train's canned-estimator spec: tf.feature_column's functions and
// parameters written as JSON, each column under a name of its own that the estimator's column
// lists and other columns refer to:
//   "user": {"categorical_column_with_hash_bucket": {"key": "user", "hash_bucket_size": 10000}},
//   "user_embedding": {"embedding_column": {"categorical_column": "user", "dimension": 8}}
// docs/canned.md lists every kind and parameter.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "apps/est_train/spec_value.h"
#include "estimator/feature_columns/feature_column.h"

namespace est_train {

/// The columns of a spec's "columns" object by their names there; a shared_embeddings entry
/// names the list of columns it makes.
class SpecColumns {
 public:
  /// Reads every column of `columns`, in any order of reference; relative vocabulary files
  /// are taken from `base_dir`. ConfigError naming the JSON path for an unknown kind or key, a
  /// reference to a missing column or to a column of the wrong kind, a cycle of references, or
  /// a parameter out of its range.
  SpecColumns(const SpecValue& columns, std::string base_dir);

  /// The columns an array of names (`list`) refers to, shared_embeddings entries expanded.
  std::vector<est::feature_columns::FeatureColumnPtr> feature_columns(const SpecValue& list) const;
  /// The same, each a dense column (a DNN's input); ConfigError naming one that is not.
  std::vector<est::feature_columns::DenseColumnPtr> dense_columns(const SpecValue& list) const;

 private:
  const std::vector<est::feature_columns::FeatureColumnPtr>& named(const SpecValue& ref) const;
  const std::vector<est::feature_columns::FeatureColumnPtr>& resolve(const std::string& name, const SpecValue& ref);
  std::vector<est::feature_columns::FeatureColumnPtr> make(const std::string& name, const SpecValue& column);
  est::feature_columns::FeatureColumnPtr single(const SpecValue& ref);
  est::feature_columns::CategoricalColumnPtr categorical(const SpecValue& ref);

  std::string base_dir_;
  std::map<std::string, SpecValue> specs_;
  std::map<std::string, std::vector<est::feature_columns::FeatureColumnPtr>> columns_;
  std::set<std::string> resolving_;
};

}  // namespace est_train
