#pragma once
/// VersionPolicy: which versions of a model's export base a ServedModel serves, as TensorFlow
/// Serving's ServableVersionPolicy says it: the latest N, all, or specific version numbers.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace est::serving {

/// Which of the versions under an export base are served.
struct VersionPolicy {
  enum class Kind { kLatest, kAll, kSpecific };

  /// The `count` highest versions (TF Serving's default: the latest one).
  static VersionPolicy Latest(int64_t count = 1);
  /// Every version.
  static VersionPolicy All();
  /// The versions named (ConfigError when none is, or one is not positive).
  static VersionPolicy Specific(std::set<int64_t> versions);

  /// The versions of `available` (loadable, in any order) the policy serves, in ascending order.
  std::vector<int64_t> select(const std::vector<int64_t>& available) const;
  /// "latest 1", "all", "specific {1, 3}".
  std::string describe() const;

  bool operator==(const VersionPolicy& other) const {
    return kind == other.kind && latest == other.latest && specific == other.specific;
  }
  bool operator!=(const VersionPolicy& other) const { return !(*this == other); }

  Kind kind = Kind::kLatest;
  /// How many of the latest versions (kLatest).
  int64_t latest = 1;
  /// The versions (kSpecific).
  std::set<int64_t> specific;
};

}  // namespace est::serving
