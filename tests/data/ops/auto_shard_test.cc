// Dataset::auto_shard: by file through the transformations above a file source, by element
// (with a warning) when there are fewer files than input pipelines, and the explicit policies.

#include <torch/torch.h>

#include <algorithm>

#include "common/error.h"
#include "data/dataset.h"
#include "data/tfrecord_dataset.h"
#include "tests/data/record_files.h"
#include "tests/data/test_datasets.h"
#include "tests/log_capture.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::data::AutoShardPolicy;
using est::data::Dataset;
using est::data::Element;
using est::data::TFRecordDataset;
using est::data::TFRecordDatasetOptions;
using est::testing::NumberParser;
using est::testing::Xs;
using Ints = std::vector<int64_t>;

namespace {

/// Five files of 2 records each: 0, 1, 100, 101, ..., 400, 401.
const std::vector<std::string>& Files() {
  static const auto files = est::testing::WriteNumberedFiles("auto_shard", {2, 2, 2, 2, 2});
  return files;
}

Element Double(Element element) {
  element.features["x"] = element.features["x"] * 2;
  return element;
}

/// Every "x" of every batch of `dataset`.
Ints BatchedXs(const Dataset& dataset) {
  Ints xs;
  for (const auto& batch : est::testing::Drain(dataset)) {
    const auto values = est::testing::Values(batch.features.at("x"));
    xs.insert(xs.end(), values.begin(), values.end());
  }
  return xs;
}

}  // namespace

TEST_CASE("auto_shard shards a file source's files through the transformations above it", "[data][auto_shard]") {
  auto records = [](const std::string& file) {
    return TFRecordDataset({file}, TFRecordDatasetOptions().parser(NumberParser));
  };
  const std::vector<Dataset> sources = {TFRecordDataset(Files(), TFRecordDatasetOptions().parser(NumberParser)),
                                        Dataset::InterleaveFiles(Files(), records, est::data::InterleaveOptions().cycle_length(1))};
  for (const Dataset& source : sources) {
    const Dataset pipeline = source.map(Double).filter([](const Element&) { return true; }).batch(3).prefetch(2);
    est::testing::LogCapture log;
    CHECK(BatchedXs(pipeline.auto_shard(2, 0)) == Ints{0, 2, 400, 402, 800, 802});  // files 0, 2, 4
    CHECK(BatchedXs(pipeline.auto_shard(2, 1)) == Ints{200, 202, 600, 602});        // files 1, 3
    CHECK(BatchedXs(pipeline.auto_shard(5, 3)) == Ints{600, 602});
    CHECK(BatchedXs(pipeline.auto_shard(2, 1, AutoShardPolicy::kFile)) == Ints{200, 202, 600, 602});
    CHECK_THAT(log.text(), Catch::Contains("info: Dataset::auto_shard: input pipeline 1 of 2 reads 2 of 5 files"));
    CHECK_THAT(log.text(), !Catch::Contains("warning"));
    CHECK(BatchedXs(pipeline.auto_shard(1, 0)) == BatchedXs(pipeline));
    CHECK(BatchedXs(pipeline.auto_shard(3, 1, AutoShardPolicy::kOff)) == BatchedXs(pipeline));
  }
}

TEST_CASE("auto_shard shards by element, with a warning, when files are fewer than pipelines", "[data][auto_shard]") {
  const Dataset records = TFRecordDataset(Files(), TFRecordDatasetOptions().parser(NumberParser)).map(Double);
  {
    est::testing::LogCapture log;
    CHECK(Xs(records.auto_shard(6, 3)) == Ints{202, 802});  // elements 3 and 9 of 10
    CHECK_THAT(log.text(), Catch::Contains("warning: Dataset::auto_shard: sharding by element, not by file: it reads "
                                           "5 file(s), fewer than the 6 input pipelines"));
  }
  {
    est::testing::LogCapture log;
    CHECK(Xs(est::testing::Range(7).auto_shard(3, 2)) == Ints{2, 5});
    CHECK_THAT(log.text(), Catch::Contains("the pipeline's source reads no files"));
  }
  CHECK(Xs(records.auto_shard(2, 1, AutoShardPolicy::kData)) == Ints{2, 202, 402, 602, 802});
  CHECK_THROWS_WITH(records.auto_shard(6, 0, AutoShardPolicy::kFile),
                    Catch::StartsWith("Dataset::auto_shard: cannot shard by file: it reads 5 file(s), fewer than the 6"));
  CHECK_THROWS_AS(est::testing::Range(3).auto_shard(2, 0, AutoShardPolicy::kFile), est::DataError);
  CHECK_THROWS_AS(records.auto_shard(0, 0), est::DataError);
  CHECK_THROWS_AS(records.auto_shard(2, 2), est::DataError);
}
