#pragma once
/// tf.train.Example and tf.train.SequenceExample records parsed into named tensors by a
/// feature spec, as tf.io.parse_single_example and tf.io.parse_single_sequence_example do.
/// Records are read straight from their protobuf wire format (TensorFlow's field numbers,
/// data/example/*.proto), one pass and no intermediate messages.
///
/// What each spec entry gives, in the element's features (or its labels, see label_key):
/// - FixedLen(type, shape): a tensor of `shape` (float32 or int64); the record must hold
///   exactly shape's element count of values, or the feature must have a default.
/// - VarLen(type): a 1-D tensor of however many values the record holds, and
///   `<name>_length`, an int64 scalar. Dataset::padded_batch pads such tensors to the
///   longest in the batch with zeros, so a batch has `<name>` [batch, longest] and
///   `<name>_length` [batch]: padded tensors with lengths, what LibTorch's sequence
///   functions (pack_padded_sequence) take, since LibTorch has no ragged tensor.
/// - Bytes features: each value goes through the feature's decoder (by default: its bytes
///   as a uint8 1-D tensor; DecodeRaw for raw numbers); the decoded tensors are stacked
///   into shape + the decoded shape (a FixedLen bytes feature of shape [] gives the one
///   decoded tensor itself). With an ids decoder instead (FeatureSpec::ids_decoder) each value
///   becomes int64s written straight into the feature's tensor: how the feature columns turn
///   strings into vocabulary ids, hash buckets or fingerprints while parsing.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/element.h"

namespace est::data {

/// The kinds of values a tf.train.Feature holds.
enum class FeatureType { kFloat32, kInt64, kBytes };

/// "float32", "int64" or "bytes".
std::string FeatureTypeName(FeatureType type);

/// Turns one bytes value of a feature into a tensor.
using BytesDecoder = std::function<at::Tensor(std::string_view bytes)>;

/// Turns one bytes value of a feature into `ids_per_value` int64s written at `ids` (a
/// vocabulary id, a hash bucket, a fingerprint): no tensor per value, for features of many
/// short strings.
using BytesToIds = std::function<void(std::string_view bytes, int64_t* ids)>;

/// The default BytesDecoder: the bytes themselves, as a uint8 [size] tensor.
at::Tensor BytesAsUint8(std::string_view bytes);

/// tf.io.decode_raw: the bytes as consecutive `dtype` values (little-endian unless
/// `little_endian` is false) in `shape`, where one dimension may be -1 (inferred). A byte
/// count that does not fill the shape is a DataError naming both.
BytesDecoder DecodeRaw(at::ScalarType dtype, std::vector<int64_t> shape = {-1}, bool little_endian = true);

/// How one feature is parsed: its kind, its shape and what fills it when it is missing.
class FeatureSpec {
 public:
  /// tf.io.FixedLenFeature: exactly as many values as `shape` holds, as a tensor of `shape`.
  static FeatureSpec FixedLen(FeatureType type, std::vector<int64_t> shape = {});
  /// tf.io.VarLenFeature: any number of values as a 1-D tensor, plus `<name>_length`.
  static FeatureSpec VarLen(FeatureType type);

  /// The value of a FixedLen feature that a record lacks: a tensor of the feature's shape
  /// (a bytes feature's: of its parsed shape), or a scalar that fills it. Without one a
  /// missing feature is a DataError.
  FeatureSpec& default_value(at::Tensor value);
  /// How each bytes value becomes a tensor (bytes features only).
  FeatureSpec& decoder(BytesDecoder decoder);
  /// Instead of a decoder: each bytes value becomes `ids_per_value` (>= 1) int64s, so that a
  /// FixedLen feature of shape S parses to int64 S (S + [ids_per_value] when more than one),
  /// and a VarLen one to int64 [values] (or [values, ids_per_value]), empty ones included.
  FeatureSpec& ids_decoder(BytesToIds decoder, int64_t ids_per_value = 1);

  /// The kind of values.
  FeatureType type() const { return type_; }
  /// Whether the feature has a fixed number of values.
  bool fixed_length() const { return fixed_length_; }
  /// The shape of a FixedLen feature.
  const std::vector<int64_t>& shape() const { return shape_; }
  /// The default of a FixedLen feature; undefined when it has none.
  const at::Tensor& default_tensor() const { return default_value_; }
  /// The decoder of a bytes feature (never empty for one without an ids decoder).
  const BytesDecoder& bytes_decoder() const { return decoder_; }
  /// The ids decoder of a bytes feature; empty unless ids_decoder() set one.
  const BytesToIds& bytes_to_ids() const { return ids_decoder_; }
  /// How many int64s the ids decoder writes for each value.
  int64_t ids_per_value() const { return ids_per_value_; }

 private:
  FeatureSpec(FeatureType type, bool fixed_length, std::vector<int64_t> shape);

  FeatureType type_;
  bool fixed_length_;
  std::vector<int64_t> shape_;
  at::Tensor default_value_;
  BytesDecoder decoder_;
  BytesToIds ids_decoder_;
  int64_t ids_per_value_ = 1;
};

/// Features by name, as tf.io.parse_single_example's `features` dictionary.
using ExampleSpec = std::map<std::string, FeatureSpec>;

/// What tf.io.parse_single_sequence_example takes.
struct SequenceExampleSpec {
  /// Features of the whole sequence (SequenceExample.context), as an ExampleSpec.
  ExampleSpec context;
  /// Features per step (SequenceExample.feature_lists). FixedLen(type, shape) gives
  /// [steps, ...shape] and `<name>_length` (the steps); a record without the feature has 0
  /// steps. VarLen steps are not supported (ConfigError).
  ExampleSpec sequence;
};

/// Turns one serialized record into an element.
using RecordParser = std::function<Element(std::string_view record)>;

/// Parses tf.train.Example records by `spec`. The feature named `label_key`, when not
/// empty, becomes the element's labels instead of a feature (it must be FixedLen). A record
/// that is not an Example, or does not match the spec, is a DataError naming the feature
/// and what was expected; a bad spec is a ConfigError, thrown here.
RecordParser ParseExample(ExampleSpec spec, std::string label_key = "");

/// Turns a batch of serialized records into one element.
using BatchRecordParser = std::function<Element(const std::vector<std::string_view>& records)>;

/// Parses a batch of tf.train.Example records by `spec` into one element, as tf.io.parse_example
/// parses a batch: the element equals Dataset::padded_batch of ParseExample(spec, label_key)'s
/// elements of the same records (VarLen features padded, with `<name>_length` [batch]), except
/// that a FixedLen feature must parse to one shape in every record (bytes decoded to different
/// shapes are a DataError, where padded_batch would pad them). Numbers and ids
/// (FeatureSpec::ids_decoder) are written straight into one tensor per feature per batch, so a
/// batch costs a few allocations rather than a few per record; bytes decoded into tensors are
/// parsed per record and batched. A record that does not match the spec is a DataError naming
/// it ("record 3 of " + `batch_name`) and the feature; an empty batch is a DataError.
BatchRecordParser ParseExampleBatch(ExampleSpec spec, std::string label_key = "",
                                    std::string batch_name = "the batch");

/// Parses tf.train.SequenceExample records by `spec`, as ParseExample does; `label_key`
/// names a context feature.
RecordParser ParseSequenceExample(SequenceExampleSpec spec, std::string label_key = "");

}  // namespace est::data
