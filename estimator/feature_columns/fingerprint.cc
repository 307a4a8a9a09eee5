#include "estimator/feature_columns/fingerprint.h"

#include <farmhash.h>

namespace est::feature_columns {

namespace {

// The multiplier of MurmurHash2-64, which FingerprintCat64's mixing uses.
constexpr uint64_t kCatMultiplier = 0xc6a4a7935bd1e995ULL;

uint64_t ShiftMix(uint64_t value) { return value ^ (value >> 47); }

}  // namespace

uint64_t Fingerprint64(std::string_view value) { return util::Fingerprint64(value.data(), value.size()); }

uint64_t FingerprintCat64(uint64_t first, uint64_t second) {
  uint64_t mixed = (first ^ kCatMultiplier) ^ (ShiftMix(second * kCatMultiplier) * kCatMultiplier);
  mixed *= kCatMultiplier;
  mixed = ShiftMix(mixed) * kCatMultiplier;
  return ShiftMix(mixed);
}

}  // namespace est::feature_columns
