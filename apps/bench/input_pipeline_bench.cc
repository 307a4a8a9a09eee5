// Benchmark 4 of the performance issue: the Fashion-MNIST input pipeline alone (as
// est-train builds it, with map's num_parallel_calls 1 and kAutotune), and training steps
// of the Fashion-MNIST CNN fed by that pipeline versus fed from pre-built batches.
// Every repetition runs each configuration once, side by side (their order rotating), and
// the medians over repetitions are reported as a table and as one JSON line per figure; a
// ratio is the median of the per-repetition ratios. A pipeline-fed run starts a fresh
// pipeline, so its timed steps include the first epoch, where the map runs.

#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "apps/common/fashion_mnist_cnn.h"
#include "common/malloc_tuning.h"
#include "data/dataset.h"
#include "data/mnist.h"

namespace {

using est::data::Dataset;
using est::data::Element;

constexpr int64_t kBatchSize = 64;
constexpr uint64_t kShuffleSeed = 42;

/// What the command line chose.
struct BenchOptions {
  std::string data_dir = est_apps::kFashionMnistDir;
  int64_t batches = 2000;  // about 4 s of training a run: 200 steps varied by ±10 % from run to run
  int repetitions = 5;
  bool quick = false;
  std::string split = "train";
  int64_t max_examples = -1;  ///< -1: the whole split
  int64_t warmup_steps = 10;
};

/// The sizes of one benchmark run, derived from the options and the data.
struct Sizes {
  int64_t examples = 0;
  int64_t first_epoch_batches = 0;  ///< batches made only of first-epoch (mapped) examples
};

/// est-train's training pipeline over `source`, built afresh (so its cache starts empty).
Dataset TrainingPipeline(const Dataset& source, int64_t num_parallel_calls) {
  est_apps::FashionMnistPipelineOptions options;
  options.num_parallel_calls = num_parallel_calls;
  options.batch_size = kBatchSize;
  options.shuffle_seed = kShuffleSeed;
  return est_apps::FashionMnistPipeline(source, options);
}

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

/// The first number of /proc/loadavg, or -1 where it cannot be read.
double LoadAverage() {
  std::ifstream file("/proc/loadavg");
  double load = -1;
  file >> load;
  return load;
}

/// The next batch of an endless pipeline.
Element NextBatch(est::data::Iterator& iterator) {
  auto batch = iterator.next();
  if (!batch) throw std::runtime_error("the repeated pipeline ended");
  return std::move(*batch);
}

/// Batches/s of a pipeline over two phases.
struct PipelineRate {
  double first_epoch = 0;  ///< while the map runs
  double cached = 0;       ///< in later epochs, read from the cache
};

/// The rates of a fresh pipeline: over its first epoch, then over `batches` batches.
PipelineRate TimePipeline(const Dataset& source, int64_t num_parallel_calls, const Sizes& sizes,
                          int64_t batches) {
  PipelineRate rate;
  Clock::time_point start = Clock::now();
  auto iterator = TrainingPipeline(source, num_parallel_calls).make_iterator();
  for (int64_t i = 0; i < sizes.first_epoch_batches; ++i) NextBatch(*iterator);
  rate.first_epoch = sizes.first_epoch_batches / SecondsSince(start);
  NextBatch(*iterator);  // the batch that straddles the first and second epochs
  start = Clock::now();
  for (int64_t i = 0; i < batches; ++i) NextBatch(*iterator);
  rate.cached = batches / SecondsSince(start);
  return rate;
}

/// Steps/s of `steps` Adam steps of a freshly initialised CNN on the batches `next_batch`
/// returns, after `warmup` untimed steps.
double TimeTraining(const std::function<Element()>& next_batch, int64_t warmup, int64_t steps) {
  torch::manual_seed(0);
  est_apps::FashionMnistCnn net;
  torch::optim::Adam adam(net->parameters(), 1e-3);
  auto step = [&] {
    Element batch = next_batch();
    adam.zero_grad();
    auto loss =
        torch::nn::functional::cross_entropy(net->forward(batch.features.at("image")), batch.labels);
    loss.backward();
    adam.step();
  };
  for (int64_t i = 0; i < warmup; ++i) step();
  const Clock::time_point start = Clock::now();
  for (int64_t i = 0; i < steps; ++i) step();
  return steps / SecondsSince(start);
}

/// Training steps/s fed by a fresh pipeline (its first steps run the map).
double TimePipelineFedTraining(const Dataset& source, int64_t num_parallel_calls,
                               const BenchOptions& options) {
  auto iterator = TrainingPipeline(source, num_parallel_calls).make_iterator();
  return TimeTraining([&] { return NextBatch(*iterator); }, options.warmup_steps, options.batches);
}

/// Training steps/s on batches already in memory, used round-robin.
double TimePrebuiltTraining(const std::vector<Element>& prebuilt, const BenchOptions& options) {
  size_t next = 0;
  return TimeTraining(
      [&] {
        const Element& batch = prebuilt[next];
        next = (next + 1) % prebuilt.size();
        return batch;
      },
      options.warmup_steps, options.batches);
}

/// What each repetition measured, per figure.
struct Results {
  std::vector<double> first_epoch[2];  ///< [0]: num_parallel_calls 1, [1]: kAutotune
  std::vector<double> cached[2];
  std::vector<double> prebuilt_steps;
  std::vector<double> fed_steps[2];
  std::vector<double> fed_ratio[2];  ///< per repetition: fed steps/s / pre-built steps/s
};

/// The table, then one JSON line per figure.
void PrintReport(const Results& results, const BenchOptions& options, int64_t autotune_workers) {
  const int64_t calls[2] = {1, est::data::kAutotune};
  const int64_t workers[2] = {1, autotune_workers};
  const std::string names[2] = {"1", "kAutotune (" + std::to_string(autotune_workers) + ")"};
  const double prebuilt = Median(results.prebuilt_steps);
  std::printf("\n%-58s %22s %22s\n", "pipeline alone, batches/s", "first epoch (map runs)",
              "later epochs (cache)");
  for (int k = 0; k < 2; ++k) {
    std::printf("  num_parallel_calls = %-36s %22.1f %22.1f\n", names[k].c_str(),
                Median(results.first_epoch[k]), Median(results.cached[k]));
  }
  std::printf("\n%-58s %22s %22s\n", "training the CNN", "steps/s", "ratio to pre-built");
  std::printf("  %-56s %22.2f %22.3f\n", "on pre-built batches in memory", prebuilt, 1.0);
  for (int k = 0; k < 2; ++k) {
    const std::string label = "fed by the pipeline, num_parallel_calls = " + names[k];
    std::printf("  %-56s %22.2f %22.3f\n", label.c_str(), Median(results.fed_steps[k]),
                Median(results.fed_ratio[k]));
  }
  std::printf("\n");
  for (int k = 0; k < 2; ++k) {
    const nlohmann::json line = {
        {"bench", "input_pipeline"},
        {"figure", "pipeline_alone"},
        {"num_parallel_calls", calls[k]},
        {"workers", workers[k]},
        {"first_epoch_batches_per_sec", Median(results.first_epoch[k])},
        {"cached_batches_per_sec", Median(results.cached[k])},
        {"training_steps_per_sec", prebuilt},
        {"repetitions", options.repetitions}};
    std::cout << line.dump() << "\n";
  }
  for (int k = 0; k < 2; ++k) {
    const nlohmann::json line = {{"bench", "input_pipeline"},
                                 {"figure", "pipeline_vs_prebuilt"},
                                 {"num_parallel_calls", calls[k]},
                                 {"workers", workers[k]},
                                 {"ratio", Median(results.fed_ratio[k])},
                                 {"pipeline_steps_per_sec", Median(results.fed_steps[k])},
                                 {"prebuilt_steps_per_sec", prebuilt},
                                 {"repetitions", options.repetitions}};
    std::cout << line.dump() << "\n";
  }
  std::cout << std::flush;
}

int Run(BenchOptions options) {
  if (options.quick) {
    options.split = "t10k";
    options.max_examples = 2048;
    options.batches = std::min<int64_t>(options.batches, 10);
    options.repetitions = 1;
    options.warmup_steps = 2;
  }
  Dataset source = est::data::FashionMnist(options.data_dir, options.split);
  if (options.max_examples >= 0) source = source.take(options.max_examples);
  Sizes sizes;
  {
    auto iterator = source.make_iterator();
    while (iterator->next()) ++sizes.examples;
  }
  sizes.first_epoch_batches = sizes.examples / kBatchSize;

  std::vector<Element> prebuilt;
  {
    auto iterator = TrainingPipeline(source, 1).make_iterator();
    const int64_t count = std::min<int64_t>(options.batches, 100);
    for (int64_t i = 0; i < count; ++i) prebuilt.push_back(NextBatch(*iterator));
  }

  const auto autotune_workers = static_cast<int64_t>(est::data::AutotunedThreads());
  std::printf(
      "Input pipeline benchmark: Fashion-MNIST %s (%lld examples), batch %lld, shuffle buffer "
      "%lld\n"
      "medians of %d repetitions, %lld batches or steps per timed run; %u hardware threads, "
      "%d intra-op threads, kAutotune: %lld map threads; load average %.2f at the start\n",
      options.split.c_str(), static_cast<long long>(sizes.examples),
      static_cast<long long>(kBatchSize), static_cast<long long>(est_apps::kFashionMnistShuffleBuffer),
      options.repetitions, static_cast<long long>(options.batches), std::thread::hardware_concurrency(),
      at::get_num_threads(), static_cast<long long>(autotune_workers), LoadAverage());

  const int64_t calls[2] = {1, est::data::kAutotune};
  Results results;
  for (int repetition = 0; repetition < options.repetitions; ++repetition) {
    for (int i = 0; i < 2; ++i) {
      const int k = (i + repetition) % 2;  // alternate which runs first
      PipelineRate rate = TimePipeline(source, calls[k], sizes, options.batches);
      results.first_epoch[k].push_back(rate.first_epoch);
      results.cached[k].push_back(rate.cached);
    }
    double fed[2] = {0, 0};
    double prebuilt_steps = 0;
    for (int i = 0; i < 3; ++i) {
      const int run = (i + repetition) % 3;
      if (run == 2) {
        prebuilt_steps = TimePrebuiltTraining(prebuilt, options);
      } else {
        fed[run] = TimePipelineFedTraining(source, calls[run], options);
      }
    }
    results.prebuilt_steps.push_back(prebuilt_steps);
    for (int k = 0; k < 2; ++k) {
      results.fed_steps[k].push_back(fed[k]);
      results.fed_ratio[k].push_back(fed[k] / prebuilt_steps);
    }
  }
  PrintReport(results, options, autotune_workers);
  std::printf("load average %.2f at the end\n", LoadAverage());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  est::TuneMallocForTraining();  // as est-train does: the loops here train like it
  BenchOptions options;
  CLI::App app{"Input pipeline benchmark: the Fashion-MNIST pipeline alone, and training fed "
               "by it versus training on pre-built batches"};
  app.add_option("--data-dir", options.data_dir, "directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  app.add_option("--batches", options.batches,
                 "batches per timed run: cached pipeline batches and training steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--repetitions", options.repetitions, "repetitions; medians are reported")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--quick", options.quick,
               "tiny sizes (2048 t10k examples, 10 batches, 1 repetition) to check it runs");
  CLI11_PARSE(app, argc, argv);
  try {
    return Run(options);
  } catch (const std::exception& error) {
    std::cerr << "input_pipeline_bench: " << error.what() << "\n";
    return 1;
  }
}
