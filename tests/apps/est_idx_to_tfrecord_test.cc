// est-idx-to-tfrecord: the shards it writes hold every Fashion-MNIST example, in order, as
// est_apps::FashionMnistExampleSpec reads them; it never writes beside existing shards.

#include <torch/torch.h>

#include <filesystem>

#include "apps/common/fashion_mnist_cnn.h"
#include "data/list_files.h"
#include "data/mnist.h"
#include "data/tfrecord_dataset.h"
#include "tests/apps/run_command.h"
#include "tests/test_util.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::testing::RunCommand;
using est::testing::RunResult;

TEST_CASE("est-idx-to-tfrecord writes every example into TFRecord shards of tf.train.Example", "[apps]") {
  const std::string dir = est::testing::FreshTempDir("idx_to_tfrecord").string();
  const std::string convert = std::string(EST_IDX_TO_TFRECORD_PATH) + " --output-dir " + dir;
  RunResult run = RunCommand(convert + " --train-shards 3 --eval-shards 1 --compression gzip");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto train = est::data::ListFiles(dir + "/train-*", /*shuffle=*/false);
  CHECK(train == std::vector<std::string>{dir + "/train-00000-of-00003.tfrecord.gz",
                                          dir + "/train-00001-of-00003.tfrecord.gz",
                                          dir + "/train-00002-of-00003.tfrecord.gz"});
  CHECK(std::filesystem::exists(dir + "/t10k-00000-of-00001.tfrecord.gz"));

  // Read back one file after another: the IDX examples in their order.
  const auto records = est::data::TFRecordDataset(
      train, est::data::TFRecordDatasetOptions()
                 .reader(est::data::TFRecordReaderOptions().compression(est::data::TFRecordCompression::kGzip))
                 .parser(est::data::ParseExample(est_apps::FashionMnistExampleSpec(), "label")));
  auto from_records = records.batch(10000).make_iterator();
  auto from_idx = est::data::FashionMnist(est_apps::kFashionMnistDir, "train").batch(10000).make_iterator();
  int batches = 0;
  while (auto expected = from_idx->next()) {
    const auto got = from_records->next();
    REQUIRE(got);
    CHECK(torch::equal(got->features.at("image"), expected->features.at("image")));
    CHECK(torch::equal(got->labels, expected->labels));
    ++batches;
  }
  CHECK(batches == 6);
  CHECK_FALSE(from_records->next());

  // Another set of shards beside these would be read with them by a glob: refused.
  RunResult again = RunCommand(convert);
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Catch::Contains("holds shards already (") && Catch::Contains("choose another directory"));
  CHECK(est::data::ListFiles(dir + "/*", /*shuffle=*/false).size() == 4);
  CHECK(RunCommand(convert + " --train-shards 0").exit_code == 2);
}
