#include "estimator/feature_columns/example_decoders.h"

#include <ATen/ATen.h>

#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/fingerprint.h"

namespace est::feature_columns {

namespace {

at::Tensor Int64Scalar(int64_t value) { return at::scalar_tensor(value, at::kLong); }

}  // namespace

data::BytesDecoder HashBucketDecoder(HashBucket column) {
  return [column = std::move(column)](std::string_view bytes) { return Int64Scalar(column.id(bytes)); };
}

data::BytesDecoder VocabularyDecoder(std::shared_ptr<const Vocabulary> vocabulary) {
  EST_CHECK(vocabulary != nullptr, ConfigError, "VocabularyDecoder: the vocabulary is null");
  EST_CHECK(!vocabulary->integer_keys(), ConfigError, "VocabularyDecoder: vocabulary column '", vocabulary->key(),
            "' has int64 keys; a bytes feature needs string keys");
  return [vocabulary = std::move(vocabulary)](std::string_view bytes) { return Int64Scalar(vocabulary->id(bytes)); };
}

data::BytesDecoder FingerprintDecoder() {
  return [](std::string_view bytes) { return Int64Scalar(static_cast<int64_t>(Fingerprint64(bytes))); };
}

}  // namespace est::feature_columns
