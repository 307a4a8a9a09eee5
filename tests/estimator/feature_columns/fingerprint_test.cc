// Fingerprint64 and FingerprintCat64 against the values TensorFlow 2.15 computes
// (make_tensorflow_ids.py recovers them from string_to_hash_bucket_fast and SparseCross).

#include "estimator/feature_columns/fingerprint.h"

#include "tests/estimator/feature_columns/tensorflow_ids.h"

using namespace est::feature_columns;
using namespace est::feature_columns::tensorflow_ids;

TEST_CASE("Fingerprint64 is TensorFlow's for ASCII, UTF-8, NUL, empty and long strings", "[feature_columns]") {
  for (const FingerprintValue& expected : kFingerprints) {
    INFO("string of " << expected.value.size() << " bytes: " << expected.value.substr(0, 20));
    CHECK(Fingerprint64(expected.value) == expected.fingerprint);
  }
  CHECK(std::size(kFingerprints) >= 10);
}

TEST_CASE("FingerprintCat64 chains as TensorFlow's hashed sparse cross does", "[feature_columns]") {
  for (const RawCross& expected : kRawCrosses) {
    uint64_t hash = expected.hash_key;
    for (int64_t feature : expected.features) hash = FingerprintCat64(hash, static_cast<uint64_t>(feature));
    INFO("hash_key " << expected.hash_key << ", " << expected.features.size() << " features");
    CHECK(hash == expected.hash);
  }
}

TEST_CASE("FingerprintCat64 depends on the order of its arguments", "[feature_columns]") {
  CHECK(FingerprintCat64(1, 2) != FingerprintCat64(2, 1));
  CHECK(FingerprintCat64(Fingerprint64("a"), Fingerprint64("b")) != Fingerprint64("ab"));
}
