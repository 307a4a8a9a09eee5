#include "checkpoint/retention.h"

namespace est::checkpoint {

RetentionOutcome ApplyRetention(const std::vector<TrackedCheckpoint>& tracked,
                                double last_preserved_timestamp, const RetentionOptions& options) {
  RetentionOutcome outcome;
  outcome.last_preserved_timestamp = last_preserved_timestamp;
  const size_t keep = static_cast<size_t>(options.keep_checkpoint_max());
  const size_t drop = keep == 0 || tracked.size() <= keep ? 0 : tracked.size() - keep;
  const double interval_seconds = options.keep_checkpoint_every_n_hours() * 3600.0;
  std::set<std::string> also_kept;
  if (drop > 0 && options.also_keep()) {
    std::vector<std::string> prefixes;
    for (const TrackedCheckpoint& checkpoint : tracked) prefixes.push_back(checkpoint.prefix);
    also_kept = options.also_keep()(prefixes);
  }
  for (size_t i = 0; i < drop; ++i) {
    const TrackedCheckpoint& oldest = tracked[i];
    if (also_kept.count(oldest.prefix) > 0) {
      outcome.tracked.push_back(oldest);
    } else if (interval_seconds > 0 &&
        oldest.timestamp - interval_seconds >= outcome.last_preserved_timestamp) {
      outcome.preserved.push_back(oldest.prefix);
      outcome.last_preserved_timestamp = oldest.timestamp;
    } else {
      outcome.deleted.push_back(oldest.prefix);
    }
  }
  outcome.tracked.insert(outcome.tracked.end(), tracked.begin() + static_cast<std::ptrdiff_t>(drop), tracked.end());
  return outcome;
}

}  // namespace est::checkpoint
