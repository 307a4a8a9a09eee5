#include "checkpoint/retention.h"

#include <catch2/catch.hpp>

using namespace est::checkpoint;

namespace {

constexpr double kHour = 3600;

std::vector<TrackedCheckpoint> Tracked(const std::vector<double>& timestamps) {
  std::vector<TrackedCheckpoint> tracked;
  for (size_t i = 0; i < timestamps.size(); ++i)
    tracked.push_back({"ckpt-" + std::to_string(i), timestamps[i]});
  return tracked;
}

std::vector<std::string> Prefixes(const std::vector<TrackedCheckpoint>& tracked) {
  std::vector<std::string> prefixes;
  for (const auto& checkpoint : tracked) prefixes.push_back(checkpoint.prefix);
  return prefixes;
}

}  // namespace

TEST_CASE("retention keeps the newest keep_checkpoint_max", "[checkpoint]") {
  const auto outcome =
      ApplyRetention(Tracked({10, 20, 30, 40}), 0, RetentionOptions().keep_checkpoint_max(2));
  CHECK(Prefixes(outcome.tracked) == std::vector<std::string>{"ckpt-2", "ckpt-3"});
  CHECK(outcome.deleted == std::vector<std::string>{"ckpt-0", "ckpt-1"});
  CHECK(outcome.preserved.empty());
  CHECK(outcome.last_preserved_timestamp == 0);
}

TEST_CASE("keep_checkpoint_max 0 keeps everything", "[checkpoint]") {
  const auto outcome =
      ApplyRetention(Tracked({1, 2, 3, 4, 5, 6}), 0, RetentionOptions().keep_checkpoint_max(0));
  CHECK(outcome.tracked.size() == 6);
  CHECK(outcome.deleted.empty());
}

TEST_CASE("keep_checkpoint_every_n_hours preserves dropped checkpoints an interval apart",
          "[checkpoint]") {
  const auto options = RetentionOptions().keep_checkpoint_max(1).keep_checkpoint_every_n_hours(1);
  const auto outcome = ApplyRetention(
      Tracked({kHour, kHour + 400, 2 * kHour, 2 * kHour + 100, 2 * kHour + 200}), 0, options);
  CHECK(outcome.preserved == std::vector<std::string>{"ckpt-0", "ckpt-2"});
  CHECK(outcome.deleted == std::vector<std::string>{"ckpt-1", "ckpt-3"});
  CHECK(Prefixes(outcome.tracked) == std::vector<std::string>{"ckpt-4"});
  CHECK(outcome.last_preserved_timestamp == 2 * kHour);
}

TEST_CASE("the interval counts from the last preserved timestamp", "[checkpoint]") {
  const auto options = RetentionOptions().keep_checkpoint_max(1).keep_checkpoint_every_n_hours(0.5);
  const auto early = ApplyRetention(Tracked({1000, 5000}), 1000 - 0.5 * kHour + 1, options);
  CHECK(early.deleted == std::vector<std::string>{"ckpt-0"});
  const auto due = ApplyRetention(Tracked({1000, 5000}), 1000 - 0.5 * kHour, options);
  CHECK(due.preserved == std::vector<std::string>{"ckpt-0"});
  CHECK(due.last_preserved_timestamp == 1000);
}

TEST_CASE("keep_checkpoint_every_n_hours 0 never preserves", "[checkpoint]") {
  const auto options = RetentionOptions().keep_checkpoint_max(1).keep_checkpoint_every_n_hours(0);
  const auto outcome = ApplyRetention(Tracked({1e9, 2e9}), 0, options);
  CHECK(outcome.deleted == std::vector<std::string>{"ckpt-0"});
}

TEST_CASE("RetentionOptions defaults match tf.estimator.RunConfig", "[checkpoint]") {
  RetentionOptions options;
  CHECK(options.keep_checkpoint_max() == 5);
  CHECK(options.keep_checkpoint_every_n_hours() == 10000);
}

TEST_CASE("checkpoints also_keep chooses stay tracked however old, and go once no longer chosen", "[checkpoint]") {
  std::vector<std::string> offered;
  const auto keep_first = RetentionOptions().keep_checkpoint_max(2).also_keep(
      [&](const std::vector<std::string>& tracked) {
        offered = tracked;
        return std::set<std::string>{"ckpt-0"};
      });
  const auto kept = ApplyRetention(Tracked({10, 20, 30, 40}), 0, keep_first);
  CHECK(offered == std::vector<std::string>{"ckpt-0", "ckpt-1", "ckpt-2", "ckpt-3"});
  CHECK(Prefixes(kept.tracked) == std::vector<std::string>{"ckpt-0", "ckpt-2", "ckpt-3"});
  CHECK(kept.deleted == std::vector<std::string>{"ckpt-1"});
  // Chosen no more: deleted like any other beyond keep_checkpoint_max.
  const auto keep_none = RetentionOptions().keep_checkpoint_max(2).also_keep(
      [](const std::vector<std::string>&) { return std::set<std::string>{}; });
  const auto dropped = ApplyRetention(kept.tracked, 0, keep_none);
  CHECK(dropped.deleted == std::vector<std::string>{"ckpt-0"});
  CHECK(Prefixes(dropped.tracked) == std::vector<std::string>{"ckpt-2", "ckpt-3"});
}
