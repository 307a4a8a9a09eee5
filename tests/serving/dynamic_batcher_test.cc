// DynamicBatcher: concurrent requests answered in fewer model calls with the answers each
// would get alone; a full queue refuses, deadlines are kept, bad requests are refused at once,
// a new version takes over the batches formed after it is set, and with several model
// instances a batch forms and runs while another still computes.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "serving/dynamic_batcher.h"
#include "tests/serving/serving_models.h"

namespace dynamic_batcher_test {
using namespace est;
using namespace est::serving;
using Clock = std::chrono::steady_clock;

namespace {

// Holds model_fn's predictions while closed.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = true;
  int waiting = 0;
  void close() {
    std::lock_guard<std::mutex> lock(mutex);
    open = false;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    changed.notify_all();
  }
  void pass() {
    std::unique_lock<std::mutex> lock(mutex);
    ++waiting;
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
    --waiting;
  }
  // Waits until `callers` model calls are held (at most 20 s); true when they are.
  bool wait_for_callers(int callers = 1) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(20), [&] { return waiting >= callers; });
  }
};

// ServedRegression whose predictions wait at `gate`.
ModelFn Gated(std::shared_ptr<Gate> gate) {
  return [gate](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    if (mode == Mode::kPredict) gate->pass();
    return testing::ServedRegression(features, labels, mode, ctx);
  };
}

// ServedRegression behind a padded VarLen input, as ParsingServingInputFn gives them: "t" float32
// [-1, -1] and "t_length" [-1]; "x" is each row's mean of its first t_length values, their count
// and their sum. With `echo`, the predictions hold "t" too: an output of a free width.
ServingInputReceiver VarLenInput() {
  ServingInputReceiver receiver{{{"t", at::kFloat, {-1, -1}}, {"t_length", at::kLong, {-1}}}, nullptr};
  receiver.receiver = [](const Features& request) {
    const at::Tensor& t = request.at("t");
    const at::Tensor length = request.at("t_length");
    const at::Tensor kept = torch::arange(t.size(1)).unsqueeze(0).lt(length.unsqueeze(1));
    const at::Tensor sum = (t * kept).sum(1);
    const at::Tensor count = length.to(torch::kFloat);
    return Features{{"x", torch::stack({sum / count.clamp_min(1), count, sum}, 1)}, {"t", t}};
  };
  return receiver;
}
ModelFn VarLenModel(std::shared_ptr<Gate> gate, bool echo) {
  return [gate, echo](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    if (mode != Mode::kPredict) return testing::ServedRegression(features, labels, mode, ctx);
    gate->pass();
    EstimatorSpec spec = testing::ServedRegression(features, labels, mode, ctx);
    if (echo) spec.predictions.emplace("t", features.at("t"));
    return spec;
  };
}
// Request `r`: 1 to 3 rows of width 1 to 4, the last row's length one short of the width, and
// values beyond each length that the model must not read.
Features VarLenRequest(int64_t r) {
  const int64_t rows = 1 + r % 3;
  const int64_t width = 1 + r % 4;
  at::Tensor length = torch::full({rows}, width, torch::kLong);
  length[rows - 1] = width - 1;
  return {{"t", torch::cos(torch::arange(rows * width, torch::kFloat) * 0.7 + static_cast<double>(r)).reshape({rows, width})},
          {"t_length", length}};
}

}  // namespace

TEST_CASE("requests of different widths of a padded VarLen input share a batch, padded", "[serving][batching]") {
  for (const bool echo : {false, true}) {
    INFO("echo " << echo);
    auto gate = std::make_shared<Gate>();
    Estimator estimator(VarLenModel(gate, echo), testing::FreshTempDir("batcher_varlen").string(),
                        testing::QuietConfig());
    const std::string path = testing::TrainAndExport(estimator, 2, VarLenInput, ExportOptions().weights_only(true));
    auto predictor = std::make_shared<const Predictor>(VarLenModel(gate, echo), path,
                                                       PredictorOptions().serving_input_fn(VarLenInput));
    DynamicBatcher batcher(predictor, BatchingOptions().max_queue_delay(std::chrono::microseconds(0)));
    // The first request's batch is held while the others queue; then they form batches.
    gate->close();
    std::vector<std::future<TensorMap>> answers;
    answers.push_back(std::async(std::launch::async, [&] { return batcher.predict(VarLenRequest(0)); }));
    REQUIRE(gate->wait_for_callers(1));
    for (int64_t r = 1; r < 12; ++r)
      answers.push_back(std::async(std::launch::async, [&, r] { return batcher.predict(VarLenRequest(r)); }));
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(20);
    while (batcher.stats().queued < 11 && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(batcher.stats().queued == 11);
    gate->release();
    for (int64_t r = 0; r < 12; ++r) {
      INFO("request " << r);
      const TensorMap batched = answers[static_cast<size_t>(r)].get();
      const TensorMap alone = predictor->predict(VarLenRequest(r));
      CHECK(torch::allclose(batched.at("y"), alone.at("y"), 1e-6, 1e-6));
      if (echo) CHECK(torch::equal(batched.at("t"), VarLenRequest(r).at("t")));  // its own width
    }
    // Padded: the 11 queued requests of 4 widths in one batch. With an output of a free width no
    // padding may change, each width batches apart.
    CHECK(batcher.stats().batches == (echo ? 5 : 2));
  }
}

TEST_CASE("concurrent requests are answered in fewer model calls, each with its own rows", "[serving][batching]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("batcher_equal").string(),
                      testing::QuietConfig());
  auto predictor = std::make_shared<const Predictor>(testing::ServedRegression, testing::TrainAndExport(estimator, 10));
  DynamicBatcher batcher(predictor, BatchingOptions().max_batch_size(16).max_queue_delay(std::chrono::milliseconds(200)));
  // 12 requests of 1 to 3 rows, sent at once: at most 16 rows a batch.
  std::vector<std::future<TensorMap>> answers;
  for (int64_t r = 0; r < 12; ++r)
    answers.push_back(std::async(std::launch::async, [&, r] { return batcher.predict({{"x", testing::Rows(r * 3, 1 + r % 3)}}); }));
  for (int64_t r = 0; r < 12; ++r) {
    INFO("request " << r);
    const TensorMap batched = answers[static_cast<size_t>(r)].get();
    const TensorMap alone = predictor->predict({{"x", testing::Rows(r * 3, 1 + r % 3)}});
    REQUIRE(batched.at("y").sizes() == alone.at("y").sizes());
    CHECK(torch::allclose(batched.at("y"), alone.at("y"), 1e-6, 1e-6));
    CHECK(torch::equal(batched.at("positive"), alone.at("positive")));
  }
  const BatchingStats stats = batcher.stats();
  CHECK(stats.requests == 12);
  CHECK(stats.batches >= 2);  // 24 rows need two batches of at most 16
  CHECK(stats.batches < 12);
}

TEST_CASE("a full queue refuses, a deadline is kept, and a bad request is refused at once", "[serving][batching]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("batcher_queue").string(),
                      testing::QuietConfig());
  const std::string path = testing::TrainAndExport(estimator, 2);
  auto gate = std::make_shared<Gate>();
  auto predictor = std::make_shared<const Predictor>(Gated(gate), path);
  DynamicBatcher batcher(predictor, BatchingOptions().max_queue_size(2).max_queue_delay(std::chrono::microseconds(0)));

  gate->close();
  auto first = std::async(std::launch::async, [&] { return batcher.predict({{"x", testing::Rows(0, 1)}}); });
  REQUIRE(gate->wait_for_callers());  // the first request's batch runs, and waits
  // Two wait in the queue, the second with a deadline.
  auto second = std::async(std::launch::async, [&] { return batcher.predict({{"x", testing::Rows(1, 1)}}); });
  auto third = std::async(std::launch::async, [&] {
    return batcher.predict({{"x", testing::Rows(2, 1)}}, Clock::now() + std::chrono::seconds(2));
  });
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(20);
  while (batcher.stats().queued < 2 && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(batcher.stats().queued == 2);
  // The queue is full: the next is refused at once.
  CHECK_THROWS_MATCHES(batcher.predict({{"x", testing::Rows(3, 1)}}), QueueFullError,
                       testing::MessageMatches(Catch::Contains("queue is full") && Catch::Contains("max_queue_size 2")));
  // The third's deadline passes while it waits.
  CHECK_THROWS_MATCHES(third.get(), TimeoutError,
                       testing::MessageMatches(Catch::Contains("deadline passed while it waited")));
  // A bad request is refused without waiting.
  CHECK_THROWS_MATCHES(batcher.predict({{"x", torch::zeros({1, 5})}}), RequestError,
                       testing::MessageMatches(Catch::Contains("input 'x' has shape [1, 5]")));
  gate->release();
  CHECK(first.get().at("y").size(0) == 1);
  CHECK(second.get().at("y").size(0) == 1);
  const BatchingStats stats = batcher.stats();
  CHECK(stats.expired == 1);
  CHECK(stats.refused == 1);
}

TEST_CASE("with two model instances a batch runs while another computes", "[serving][batching]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("batcher_threads").string(),
                      testing::QuietConfig());
  const std::string path = testing::TrainAndExport(estimator, 2);
  auto gate = std::make_shared<Gate>();
  auto predictor = std::make_shared<const Predictor>(Gated(gate), path, PredictorOptions().instances(2));
  REQUIRE(predictor->instances() == 2);
  DynamicBatcher batcher(predictor, BatchingOptions().max_queue_delay(std::chrono::microseconds(0)));
  gate->close();
  auto first = std::async(std::launch::async, [&] { return batcher.predict({{"x", testing::Rows(0, 2)}}); });
  REQUIRE(gate->wait_for_callers(1));
  // The first batch is held in its instance: the second request gets a batch of its own on the
  // other, and a third waits in the queue for a free one.
  auto second = std::async(std::launch::async, [&] { return batcher.predict({{"x", testing::Rows(2, 3)}}); });
  REQUIRE(gate->wait_for_callers(2));
  auto third = std::async(std::launch::async, [&] { return batcher.predict({{"x", testing::Rows(5, 1)}}); });
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(20);
  while (batcher.stats().queued < 1 && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(batcher.stats().queued == 1);
  CHECK(batcher.stats().batches == 2);
  gate->release();
  CHECK(torch::equal(first.get().at("y"), predictor->predict({{"x", testing::Rows(0, 2)}}).at("y")));
  CHECK(torch::equal(second.get().at("y"), predictor->predict({{"x", testing::Rows(2, 3)}}).at("y")));
  CHECK(torch::equal(third.get().at("y"), predictor->predict({{"x", testing::Rows(5, 1)}}).at("y")));
  CHECK(batcher.stats().batches == 3);
  CHECK(batcher.stats().requests == 3);
  CHECK_THROWS_MATCHES(Predictor(testing::ServedRegression, path, PredictorOptions().instances(0)), ConfigError,
                       testing::MessageMatches(Catch::Contains("instances must be between 1 and 256, got 0")));
}

TEST_CASE("batches formed after set_predictor use the new version", "[serving][batching]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("batcher_swap").string(),
                      testing::QuietConfig());
  auto older = std::make_shared<const Predictor>(testing::ServedRegression, testing::TrainAndExport(estimator, 2));
  auto newer = std::make_shared<const Predictor>(testing::ServedRegression, testing::TrainAndExport(estimator, 30));
  DynamicBatcher batcher(older, BatchingOptions().max_queue_delay(std::chrono::microseconds(0)));
  const at::Tensor x = testing::Rows(0, 4);
  int64_t version = -1;
  CHECK(torch::equal(batcher.predict({{"x", x}}, Clock::time_point::max(), &version).at("y"),
                     older->predict({{"x", x}}).at("y")));
  CHECK(version == older->version());
  batcher.set_predictor(newer);
  CHECK(torch::equal(batcher.predict({{"x", x}}, Clock::time_point::max(), &version).at("y"),
                     newer->predict({{"x", x}}).at("y")));
  CHECK(version == newer->version());
  CHECK(older->version() != newer->version());
  CHECK_FALSE(torch::equal(older->predict({{"x", x}}).at("y"), newer->predict({{"x", x}}).at("y")));
  CHECK_THROWS_MATCHES(BatchingOptions().max_batch_size(0).validate(), ConfigError,
                       testing::MessageMatches(Catch::Contains("max_batch_size must be at least 1, got 0")));
}

}  // namespace dynamic_batcher_test
