#pragma once
/// Bytes decoders (data::FeatureSpec::decoder, or a CSV bytes column's decoder) that turn
/// each string value of a tf.train.Example feature or CSV field into its categorical id, or
/// its fingerprint, while the input pipeline parses the record: the model then receives
/// int64 tensors only (see
/// categorical_ids.h). Each value decodes to an int64 scalar, so a FixedLen bytes feature of
/// shape [k] parses to int64 [k], and a VarLen one to int64 [values] with `<name>_length`,
/// which Dataset::padded_batch makes the ids and lengths of a CategoricalIds.
///
/// A record whose VarLen feature holds no value parses to an empty uint8 tensor (the
/// parser calls no decoder and knows no dtype), which padded_batch cannot stack with the
/// int64 rows of other records: give such a feature a `map` that casts it to int64.

#include <memory>

#include "data/example.h"
#include "estimator/feature_columns/hash_bucket.h"
#include "estimator/feature_columns/vocabulary.h"

namespace est::feature_columns {

/// Each value becomes its id in `column`.
data::BytesDecoder HashBucketDecoder(HashBucket column);

/// Each value becomes its id in `vocabulary` (of string keys; ConfigError otherwise).
data::BytesDecoder VocabularyDecoder(std::shared_ptr<const Vocabulary> vocabulary);

/// Each value becomes its Fingerprint64 (the uint64 bits as int64): what a raw string
/// feature contributes to a crossed column (CrossInput::Ids of the parsed values).
data::BytesDecoder FingerprintDecoder();

}  // namespace est::feature_columns
