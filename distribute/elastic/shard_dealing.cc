#include "distribute/elastic/shard_dealing.h"

#include <algorithm>

#include "common/error.h"

namespace est::distribute {

std::vector<std::vector<int>> DealLogicalShards(const std::vector<int>& holders, int workers) {
  std::vector<std::vector<int>> shards(static_cast<size_t>(workers));
  std::vector<int> unheld;
  for (size_t shard = 0; shard < holders.size(); ++shard) {
    const int holder = holders[shard];
    EST_ASSERT(holder >= -1 && holder < workers, "logical shard ", shard, " is held by rank ", holder, " of ",
               workers);
    if (holder < 0)
      unheld.push_back(static_cast<int>(shard));
    else
      shards[static_cast<size_t>(holder)].push_back(static_cast<int>(shard));
  }
  const auto size_order = [](const std::vector<int>& a, const std::vector<int>& b) { return a.size() < b.size(); };
  for (int shard : unheld) std::min_element(shards.begin(), shards.end(), size_order)->push_back(shard);
  while (true) {
    auto fewest = std::min_element(shards.begin(), shards.end(), size_order);
    auto most = std::max_element(shards.begin(), shards.end(), size_order);
    if (most->size() <= fewest->size() + 1) break;
    const auto highest = std::max_element(most->begin(), most->end());
    fewest->push_back(*highest);
    most->erase(highest);
  }
  for (auto& each : shards) std::sort(each.begin(), each.end());
  return shards;
}

}  // namespace est::distribute
