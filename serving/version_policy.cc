#include "serving/version_policy.h"

#include <algorithm>

#include "common/error.h"

namespace est::serving {

VersionPolicy VersionPolicy::Latest(int64_t count) {
  EST_CHECK(count >= 1, ConfigError, "a latest version policy serves at least 1 version, got num_versions ", count);
  VersionPolicy policy;
  policy.latest = count;
  return policy;
}

VersionPolicy VersionPolicy::All() {
  VersionPolicy policy;
  policy.kind = Kind::kAll;
  return policy;
}

VersionPolicy VersionPolicy::Specific(std::set<int64_t> versions) {
  EST_CHECK(!versions.empty(), ConfigError, "a specific version policy names no version; name at least one");
  EST_CHECK(*versions.begin() >= 1, ConfigError, "a specific version policy names version ", *versions.begin(),
            "; versions are positive numbers");
  VersionPolicy policy;
  policy.kind = Kind::kSpecific;
  policy.specific = std::move(versions);
  return policy;
}

std::vector<int64_t> VersionPolicy::select(const std::vector<int64_t>& available) const {
  std::vector<int64_t> versions = available;
  std::sort(versions.begin(), versions.end());
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  switch (kind) {
    case Kind::kAll:
      return versions;
    case Kind::kLatest:
      if (static_cast<int64_t>(versions.size()) > latest) versions.erase(versions.begin(), versions.end() - latest);
      return versions;
    case Kind::kSpecific:
      versions.erase(std::remove_if(versions.begin(), versions.end(), [&](int64_t v) { return specific.count(v) == 0; }),
                     versions.end());
      return versions;
  }
  return versions;
}

std::string VersionPolicy::describe() const {
  switch (kind) {
    case Kind::kAll:
      return "all";
    case Kind::kLatest:
      return "latest " + std::to_string(latest);
    case Kind::kSpecific: {
      std::string listed;
      for (int64_t version : specific) listed += (listed.empty() ? "" : ", ") + std::to_string(version);
      return "specific {" + listed + "}";
    }
  }
  return "";
}

}  // namespace est::serving
