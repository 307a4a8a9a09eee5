#pragma once
/// The values and ids of categorical feature columns, per example, as LibTorch tensors.
///
/// TensorFlow hands a categorical column a SparseTensor of rank 2: row b holds the values
/// of example b (none, one or many). LibTorch has neither sparse string tensors nor ragged
/// tensors, so a batch of them is laid out here as the input pipeline already lays out a
/// VarLen feature (data/example.h): padded to the longest row, with the length of each row.
///
///   ids      int64 [batch, max_values]: row b's values in ids[b, 0 .. lengths[b]), in
///            TensorFlow's order (the order of the SparseTensor's values); the entries past
///            a row's length are padding, 0 where built here, and ignored by every function.
///   lengths  int64 [batch]: how many values each row holds, 0 <= lengths[b] <= max_values.
///   weights  float32 [batch, max_values], or undefined: the weight of each id
///            (weighted_categorical_column), laid out as the ids.
///
/// The same layout carries the raw integer values of a feature before they become ids (a
/// VarLen int64 feature after Dataset::padded_batch is exactly `ids` and `lengths`), and
/// the uint64 fingerprints of strings that a crossed column combines (their bits stored
/// in int64). Strings themselves become ids or fingerprints in the input pipeline, one
/// value at a time (the per-value functions of hash_bucket.h, vocabulary.h and
/// fingerprint.h, run by the ParsingPlan's ids decoders), so a model sees int64 tensors only.
/// A raw string batch, where one is needed, is a StringRows.
///
/// Dense inputs (a FixedLen feature, [batch, k]) become rows by DropIgnoredValues, as
/// TensorFlow's feature columns turn a dense tensor into a SparseTensor: without the
/// missing-value markers ("" for strings, -1 for integers).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace est::feature_columns {

/// Ids (or integer values, or fingerprints) of a batch, padded, with each row's length.
struct CategoricalIds {
  /// int64 [batch, max_values]; entries past a row's length are padding.
  at::Tensor ids;
  /// int64 [batch]: the number of values of each row.
  at::Tensor lengths;
  /// float32 [batch, max_values], or undefined when the ids carry no weights.
  at::Tensor weights;

  /// The number of rows (examples).
  int64_t batch_size() const;
  /// The width of `ids`: at least the longest row's length.
  int64_t max_values() const;
};

/// The string values of a batch, one vector per example, in the order TensorFlow's
/// SparseTensor holds them.
using StringRows = std::vector<std::vector<std::string>>;

/// Integer values of a batch, one vector per example.
using IntRows = std::vector<std::vector<int64_t>>;

/// `rows` in the padded layout: max_values is the longest row's length, padding is 0.
CategoricalIds IdsFromRows(const IntRows& rows);

/// The rows of `ids`, each cut to its length (what a test or a log line compares).
IntRows IdsToRows(const CategoricalIds& ids);

/// Checks the layout: `ids` int64 of rank 2, `lengths` int64 [batch] within
/// [0, max_values], `weights` undefined or float32 with the shape of `ids`. DataError
/// naming `column` and what was expected otherwise.
void CheckLayout(const CategoricalIds& ids, const std::string& column);

/// A dense integer batch [batch] or [batch, k] as rows, without the entries equal to
/// `ignore_value` (TensorFlow's missing-value marker, -1). DataError naming `column` for
/// another rank or a dtype that is not integral.
CategoricalIds DropIgnoredValues(const at::Tensor& dense, const std::string& column, int64_t ignore_value = -1);

/// A dense string batch (every row the same number of values) without its empty strings.
StringRows DropIgnoredValues(const StringRows& dense);

/// `ids` with `weights` attached (weighted_categorical_column): float32 values laid out as
/// the ids, with the same lengths. DataError naming `column` when the shapes or lengths
/// differ; weights of another floating dtype are converted to float32.
CategoricalIds WithWeights(CategoricalIds ids, const at::Tensor& weights, const at::Tensor& weight_lengths,
                           const std::string& column);

}  // namespace est::feature_columns
