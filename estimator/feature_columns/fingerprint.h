#pragma once
/// TensorFlow's 64-bit fingerprints, the hashes behind every hashed feature-column id:
/// string_to_hash_bucket_fast, vocabulary out-of-vocabulary buckets and crossed columns.

#include <cstdint>
#include <string_view>

namespace est::feature_columns {

/// TensorFlow's Fingerprint64 (tensorflow/core/platform/fingerprint.h): FarmHash's
/// Fingerprint64 of the bytes of `value`. Stable across platforms and releases.
uint64_t Fingerprint64(std::string_view value);

/// TensorFlow's FingerprintCat64: the fingerprint of the pair (`first`, `second`) of two
/// fingerprints, as sparse crosses chain their features. Not commutative.
uint64_t FingerprintCat64(uint64_t first, uint64_t second);

}  // namespace est::feature_columns
