// model_checkpoint: a ModelContext's variables, global step and optimizer state into a
// checkpoint and back, with the errors a mismatched model meets.

#include "estimator/model_checkpoint.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <tuple>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/error.h"
#include "distribute/optimizer/ftrl.h"
#include "tests/test_util.h"

using namespace est;
using est::testing::FreshTempDir;
using est::testing::MessageMatches;

namespace {

/// A context on the CPU whose "dense" (Linear in → 1) and Adam "adam" exist, restored by `init`.
struct Model {
  std::unique_ptr<ModelContext> ctx;
  torch::nn::Linear dense{nullptr};
  torch::optim::Adam* adam = nullptr;

  explicit Model(ModelContext::Initializers init, int64_t in = 2) {
    ctx = std::make_unique<ModelContext>(std::make_shared<const nlohmann::json>(nlohmann::json::object()),
                                         c10::Device(c10::kCPU), std::move(init));
    dense = ctx->module("dense", [in] { return torch::nn::Linear(in, 1); });
    adam = &ctx->optimizer("adam", [&] { return torch::optim::Adam(dense->parameters(), 0.1); });
  }

  // One Adam step on a fixed batch: the optimizer gets state (moments, step count).
  void step() {
    adam->zero_grad();
    dense->forward(torch::ones({4, dense->options.in_features()})).sum().backward();
    adam->step();
  }
};

std::string Write(const std::string& dir, const CheckpointContents& contents, int64_t step) {
  const std::string prefix = dir + "/model.ckpt-" + std::to_string(step);
  checkpoint::WriteCheckpoint(prefix, contents.tensors, contents.blobs, step);
  return prefix;
}

}  // namespace

TEST_CASE("a snapshot holds every variable, the global step and each optimizer's state", "[estimator]") {
  torch::manual_seed(1);
  Model model({});
  model.step();
  const CheckpointContents contents = SnapshotModel(*model.ctx, 42);
  REQUIRE(contents.tensors.size() == 3);
  CHECK(contents.tensors[0].first == "dense/weight");
  CHECK(contents.tensors[1].first == "dense/bias");
  CHECK(contents.tensors[2].first == kGlobalStepName);
  CHECK(contents.tensors[2].second.item<int64_t>() == 42);
  CHECK_FALSE(contents.tensors[0].second.requires_grad());
  CHECK(at::equal(contents.tensors[0].second, model.dense->weight));
  REQUIRE(contents.blobs.count("optimizer/adam") == 1);
  CHECK_FALSE(contents.blobs.at("optimizer/adam").empty());
}

TEST_CASE("a model restored from a snapshot continues exactly as the original", "[estimator]") {
  const std::string dir = FreshTempDir("model_checkpoint_roundtrip").string();
  torch::manual_seed(1);
  Model original({});
  original.step();
  original.step();
  const auto reader = std::make_shared<const checkpoint::CheckpointReader>(
      Write(dir, SnapshotModel(*original.ctx, 2), 2));

  torch::manual_seed(99);  // other initial values, overwritten by the restore
  Model restored(RestoreFromCheckpoint(reader, RestoreMode::kTraining));
  CHECK(at::equal(restored.dense->weight, original.dense->weight));
  CHECK(at::equal(restored.dense->bias, original.dense->bias));
  // Adam's moments came back too: the next step is the same step.
  original.step();
  restored.step();
  CHECK(at::equal(restored.dense->weight, original.dense->weight));

  SECTION("without the optimizers, the variables come back and Adam starts afresh") {
    torch::manual_seed(99);
    Model fresh(RestoreFromCheckpoint(reader, RestoreMode::kVariables));
    CHECK(at::equal(fresh.dense->bias, reader->tensor("dense/bias")));
    fresh.step();
    Model again(RestoreFromCheckpoint(reader, RestoreMode::kTraining));
    again.step();
    CHECK_FALSE(at::equal(fresh.dense->weight, again.dense->weight));
  }
}

TEST_CASE("restoring into another model names the variable, the checkpoint and both shapes", "[estimator]") {
  const std::string dir = FreshTempDir("model_checkpoint_mismatch").string();
  Model original({});
  const std::string prefix = Write(dir, SnapshotModel(*original.ctx, 1), 1);
  const auto reader = std::make_shared<const checkpoint::CheckpointReader>(prefix);

  CHECK_THROWS_MATCHES(Model(RestoreFromCheckpoint(reader, RestoreMode::kTraining), /*in=*/3), CheckpointError,
                       MessageMatches(Catch::Contains("variable 'dense/weight' has shape [1, 3] in the model but "
                                                      "[1, 2] in checkpoint " + prefix) &&
                                      Catch::Contains("train this model into a new model_dir") &&
                                      Catch::Contains("warm_start_from")));

  auto ctx = std::make_unique<ModelContext>(std::make_shared<const nlohmann::json>(nlohmann::json::object()),
                                            c10::Device(c10::kCPU), RestoreFromCheckpoint(reader, RestoreMode::kTraining));
  CHECK_THROWS_MATCHES(ctx->module("other", [] { return torch::nn::Linear(2, 1); }), CheckpointError,
                       MessageMatches(Catch::Contains("variable 'other/weight' is not in checkpoint " + prefix) &&
                                      Catch::Contains("dense/weight") &&
                                      Catch::Contains("train this model into a new model_dir")));
}

TEST_CASE("optimizer state that is not LibTorch's archive is a CheckpointError naming the optimizer",
          "[estimator]") {
  Model model({});
  CHECK_THROWS_MATCHES(DeserializeOptimizer("not an archive", "adam", *model.adam), CheckpointError,
                       MessageMatches(Catch::StartsWith("cannot restore the state of optimizer 'adam'")));
  // Its own bytes load; the same bytes cut short do not.
  model.step();
  const std::string adam_bytes = SerializeOptimizer(*model.adam);
  DeserializeOptimizer(adam_bytes, "adam", *model.adam);
  CHECK_THROWS_AS(DeserializeOptimizer(adam_bytes.substr(0, adam_bytes.size() / 2), "adam", *model.adam),
                  CheckpointError);
}

TEST_CASE("Ftrl's accumulator and linear slots go through a checkpoint and training continues exactly",
          "[estimator][ftrl]") {
  const std::string dir = FreshTempDir("model_checkpoint_ftrl").string();
  // An embedding (sparse_rows) and a dense layer, as a canned linear model trains them.
  const auto make = [](ModelContext::Initializers init) {
    auto ctx = std::make_unique<ModelContext>(std::make_shared<const nlohmann::json>(nlohmann::json::object()),
                                              c10::Device(c10::kCPU), std::move(init));
    auto embedding = ctx->module("embedding", [] { return torch::nn::Embedding(20, 3); });
    auto dense = ctx->module("dense", [] { return torch::nn::Linear(3, 1); });
    auto& ftrl = ctx->optimizer("ftrl", [&] {
      const auto options = optim::FtrlOptions(0.2).l1(0.01).l2(0.02).l2_shrinkage(0.01);
      return optim::Ftrl({torch::optim::OptimizerParamGroup(
                              embedding->parameters(), std::make_unique<optim::FtrlOptions>(
                                                           optim::FtrlOptions(options).sparse_rows(true))),
                          torch::optim::OptimizerParamGroup(dense->parameters())},
                         options);
    });
    return std::make_tuple(std::move(ctx), embedding, dense, &ftrl);
  };
  const auto step = [](torch::nn::Embedding& embedding, torch::nn::Linear& dense, optim::Ftrl& ftrl, int i) {
    ftrl.zero_grad();
    dense->forward(embedding->forward(torch::tensor({i % 20, (3 * i) % 20}))).sum().backward();
    ftrl.step();
  };
  torch::manual_seed(1);
  auto [original_ctx, original_embedding, original_dense, original_ftrl] = make({});
  for (int i = 0; i < 3; ++i) step(original_embedding, original_dense, *original_ftrl, i);
  const CheckpointContents contents = SnapshotModel(*original_ctx, 3);
  REQUIRE(contents.blobs.count("optimizer/ftrl") == 1);
  const auto reader = std::make_shared<const checkpoint::CheckpointReader>(Write(dir, contents, 3));

  torch::manual_seed(99);
  auto [ctx, embedding, dense, ftrl] = make(RestoreFromCheckpoint(reader, RestoreMode::kTraining));
  REQUIRE(ftrl->state().size() == 3);
  for (int i = 3; i < 6; ++i) {
    step(original_embedding, original_dense, *original_ftrl, i);
    step(embedding, dense, *ftrl, i);
  }
  CHECK(at::equal(embedding->weight, original_embedding->weight));
  CHECK(at::equal(dense->weight, original_dense->weight));
  CHECK(at::equal(dense->bias, original_dense->bias));
}
