#include "data/list_files.h"

#include <glob.h>

#include <random>
#include <utility>

#include "common/error.h"

namespace est::data {
namespace {

/// splitmix64: a fixed generator, so a seeded order is the same with every standard library.
uint64_t NextRandom(uint64_t* state) {
  uint64_t value = (*state += 0x9E3779B97F4A7C15ULL);
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ULL;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBULL;
  return value ^ (value >> 31);
}

/// A uniform number in [0, bound), by rejection.
uint64_t UniformBelow(uint64_t bound, uint64_t* state) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t value = NextRandom(state);
  while (value >= limit) value = NextRandom(state);
  return value % bound;
}

}  // namespace

std::vector<std::string> ListFiles(const std::string& pattern, bool shuffle, std::optional<uint64_t> seed) {
  EST_CHECK(!pattern.empty(), DataError, "ListFiles: the pattern is empty");
  glob_t matches{};
  const int status = glob(pattern.c_str(), GLOB_MARK, nullptr, &matches);
  std::vector<std::string> files;
  if (status == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) {
      std::string path = matches.gl_pathv[i];
      if (path.back() != '/') files.push_back(std::move(path));  // GLOB_MARK ends directories with '/'
    }
  }
  globfree(&matches);
  EST_CHECK(status == 0 || status == GLOB_NOMATCH, IoError, "ListFiles: reading the directories of '", pattern,
            "' failed (glob status ", status, ")");
  EST_CHECK(!files.empty(), DataError, "ListFiles: no file matches '", pattern, "'");
  if (shuffle) {
    uint64_t state = seed ? *seed : (uint64_t{std::random_device()()} << 32) ^ std::random_device()();
    for (size_t i = files.size() - 1; i > 0; --i) std::swap(files[i], files[UniformBelow(i + 1, &state)]);
  }
  return files;
}

}  // namespace est::data
