// train_bench: one training run, timed, printing one JSON line. Run by run_benchmarks.py,
// which compares our Estimator with a hand-written LibTorch loop and PyTorch DDP.
//
//   train_bench --loop estimator|handwritten|raw_allreduce --model cnn|mlp|resnet --batch-size B
//               --steps N --warmup W [--strategy none|multi_worker] [--device cpu|cuda:N]
//               [--bytes X] [--transport auto|tcp] [--compression none|fp16|bf16|powersgd]
//               [--powersgd-rank R] [--bucket-cap-mb X] [--overlap auto|always|never]
//               [--fused-optimizer-step true|false] [--kernels on|ops|off] [--channels-last auto|on|off]
//               [--cpu-allocator default|caching] [--op-times]

#include <sys/resource.h>
#include <unistd.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/bench/bench_models.h"
#include "apps/bench/op_times.h"
#include "apps/bench/timing_collective.h"
#include "apps/common/parse_flags.h"
#include "common/error.h"
#include "distribute/cluster/cluster_address.h"
#include "distribute/cluster/cluster_resolver.h"
#include "distribute/collective/collective_backend.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/rendezvous/grpc_store.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/strategy.h"
#include "estimator/caching_cpu_allocator.h"
#include "estimator/process_tuning.h"
#include "estimator/estimator.h"

#if EST_WITH_KERNELS
#include "kernels/cpu_op_replacements.h"
#include "kernels/fused_adam.h"
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string loop = "estimator";
  std::string model = "cnn";
  std::string strategy = "none";
  int64_t batch_size = 64;
  int64_t steps = 200;
  int64_t warmup = 20;
  std::string device = "cpu";
  int64_t bytes = 0;
  /// raw_allreduce and multi_worker: "tcp" forces flat Gloo over TCP; "auto" lets ranks on one host
  /// use shared memory (and hosts with several ranks the hierarchical all-reduce)
  std::string transport = "auto";
  std::string compression = "none";  ///< multi_worker: none, fp16, bf16 or powersgd on the wire
  int64_t powersgd_rank = 1;
  double bucket_cap_mb = 25;  ///< multi_worker: GradientReducerOptions::bucket_cap_bytes, in MiB
  std::string overlap = "auto";  ///< multi_worker: GradientReducerOptions::overlap
  bool fused_optimizer_step = true;  ///< estimator: RunConfig::fused_optimizer_step
  /// "on": the CNN's and the MLP's layers on est::kernels; "ops": LibTorch's slow CPU kernels
  /// replaced (RunConfig::replace_slow_cpu_ops), Adam fused and the CNN's forward run by
  /// est::kernels::FusedForward, in every loop
  std::string kernels = "off";
  bool op_times = false;  ///< each op's own time over the timed steps, in the JSON line
  std::string channels_last = "auto";  ///< estimator: RunConfig::channels_last
  /// handwritten: "caching" installs the CachingCpuAllocator (as est-train and this bench's Estimator loop do)
  std::string cpu_allocator = "default";
};

double PeakRssMegabytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// The time now, once the work queued on `device` so far is done.
Clock::time_point Now(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
  return Clock::now();
}

// Records the time of the step after `warmup` steps and of the last step, and with `op_times`
// each op's own time between them.
class StepTimer : public est::SessionRunHook {
 public:
  StepTimer(int64_t warmup, int64_t last, torch::Device device, bool op_times)
      : warmup_(warmup), last_(last), device_(device), op_times_(op_times) {}
  void after_run(est::RunContext& context, const est::RunValues&) override {
    const int64_t step = context.session().global_step();
    if (step == warmup_) {
      start = Now(device_);
      if (op_times_) est_bench::StartOpTimes();
    }
    if (step == last_) {
      end = Now(device_);
      if (op_times_) ops = est_bench::StopOpTimes(last_ - warmup_);
    }
  }
  Clock::time_point start;
  Clock::time_point end;
  nlohmann::json ops;

 private:
  int64_t warmup_;
  int64_t last_;
  torch::Device device_;
  bool op_times_;
};

// --kernels ops in the hand-written loop: LibTorch's slow CPU kernels replaced, as
// RunConfig::replace_slow_cpu_ops does for the Estimator.
void ReplaceSlowCpuOps(const Flags& flags) {
#if EST_WITH_KERNELS
  if (flags.kernels == "ops") est::kernels::ReplaceSlowCpuOps();
#endif
}

// Adam's step: fused for --kernels ops, as RunConfig::fused_optimizer_step steps it.
void StepAdam(torch::optim::Adam& adam, const Flags& flags) {
#if EST_WITH_KERNELS
  if (flags.kernels == "ops" && est::kernels::FusedAdamStep(adam)) return;
#endif
  adam.step();
}

// The chief's collective for --strategy multi_worker, timed.
std::shared_ptr<est_bench::TimingCollective> ConnectWorkers(const est::distribute::ClusterConfig& cluster,
                                                            bool shared_memory = true) {
  const auto chief = est::distribute::ParseHostPort(cluster.chief_address, "chief address");
  est::distribute::GrpcStoreOptions store_options;
  store_options.host = chief.host;
  store_options.port = static_cast<uint16_t>(chief.port);
  store_options.job_id = "train_bench";
  static std::shared_ptr<est::distribute::Store> store;  // lives until exit, as the chief's must
  if (cluster.is_chief)
    store = est::distribute::ServeGrpcStore(store_options);
  else
    store = est::distribute::CreateGrpcStore(store_options);
  est::distribute::RendezvousOptions rendezvous;
  rendezvous.job_id = store_options.job_id;
  rendezvous.rank = cluster.rank;
  rendezvous.world_size = cluster.num_worker_replicas;
  est::distribute::CollectiveRequest request;
  request.store = est::distribute::Rendezvous(store, rendezvous);
  request.rank = cluster.rank;
  request.world_size = cluster.num_worker_replicas;
  request.hostname = cluster.task_host();  // this task's address in TF_CONFIG: reachable from the other hosts
  request.shared_memory = shared_memory;
  const auto& ring = est::distribute::ChooseCollectiveBackend("ring", {c10::Device(c10::kCPU)}, "train_bench");
  return std::make_shared<est_bench::TimingCollective>(est::distribute::CreateCollective(ring, request));
}

nlohmann::json RunEstimator(const Flags& flags) {
  const auto [inputs, labels] = est_bench::MakeBatches(flags.model, flags.batch_size, flags.warmup + flags.steps);
  auto model_fn = [model = flags.model, kernels = flags.kernels == "on", fused = flags.kernels == "ops"](
                      const est::Features& features, const torch::Tensor& y, est::Mode mode, est::ModelContext& ctx) {
    auto net = ctx.module("net", [&] { return est_bench::MakeModel(model, kernels, fused); });
    auto loss = torch::nn::functional::cross_entropy(net->forward(features.at("x")), y);
    auto& adam = ctx.optimizer("adam", [&] { return torch::optim::Adam(net->parameters(), 1e-3); });
    return est::EstimatorSpec::Train(loss, adam);
  };
  // Pre-built batches in memory: the benchmark measures the framework, not an input pipeline.
  auto input_fn = [inputs = inputs, labels = labels] {
    return est::data::Dataset::FromTensors({{"x", inputs}}, labels).repeat();
  };
  est::RunConfig config;
  config.save_summary_steps = 0;
  config.save_checkpoints_steps = 1'000'000'000;
  config.log_step_count_steps = 1'000'000'000;
  config.fused_optimizer_step = flags.fused_optimizer_step;
  config.replace_slow_cpu_ops = flags.kernels == "ops";
  config.channels_last = est::ParseChannelsLast(flags.channels_last);
  std::shared_ptr<est_bench::TimingCollective> collective;
  if (flags.strategy == "multi_worker") {
    collective = ConnectWorkers(config.cluster, flags.transport != "tcp");
    config.train_distribute = est::distribute::MultiWorkerMirroredStrategy::CreateWithCollective(
        collective, {flags.device}, est::distribute::BufferSync::kBroadcast,
        est::distribute::GradientReducerOptions()
            .compression(est::distribute::ParseGradientCompression(flags.compression, "--compression"))
            .power_sgd(est::distribute::PowerSgdOptions().rank(flags.powersgd_rank))
            .bucket_cap_bytes(static_cast<int64_t>(flags.bucket_cap_mb * (1 << 20)))
            .overlap(est::distribute::ParseBackwardOverlap(flags.overlap, "--overlap")));
  } else if (flags.device != "cpu") {
    config.train_distribute = est::distribute::OneDeviceStrategy::Create(flags.device);
  }
  const std::string model_dir = "/tmp/train_bench_" + std::to_string(::getpid());
  std::filesystem::remove_all(model_dir);
  auto timer = std::make_shared<StepTimer>(flags.warmup, flags.warmup + flags.steps, torch::Device(flags.device),
                                           flags.op_times);
  est::TuneProcessForTraining();  // as est-train does
  est::Estimator estimator(model_fn, model_dir, config);
  if (collective) collective->reset();
  estimator.train(input_fn, est::TrainOptions().max_steps(flags.warmup + flags.steps).hooks({timer}));
  std::filesystem::remove_all(model_dir);
  const double seconds = std::chrono::duration<double>(timer->end - timer->start).count();
  nlohmann::json result = {{"seconds", seconds}, {"steps", flags.steps}};
  if (flags.op_times) result["op_micros_per_step"] = timer->ops;
  if (collective) {
    result["allreduce"] = collective->stats_json(1 << 16);
    result["collective"] = collective->name();
  }
  return result;
}

// The loop a LibTorch user writes by hand; on a GPU, batches come from pinned host memory
// with non-blocking copies, as PyTorch's DataLoader(pin_memory=True) gives them.
nlohmann::json RunHandwritten(const Flags& flags) {
  const int64_t count = flags.warmup + flags.steps;
  const torch::Device device(flags.device);
  if (flags.cpu_allocator == "caching") est::InstallCachingCpuAllocator();
  ReplaceSlowCpuOps(flags);
  auto [inputs, labels] = est_bench::MakeBatches(flags.model, flags.batch_size, count);
  if (device.is_cuda()) {
    inputs = inputs.pin_memory();
    labels = labels.pin_memory();
  }
  auto net = est_bench::MakeModel(flags.model, flags.kernels == "on", flags.kernels == "ops");
  net->to(device);
  torch::optim::Adam adam(net->parameters(), 1e-3);
  auto step = [&, inputs = inputs, labels = labels](int64_t i) {
    adam.zero_grad();
    const auto x = inputs.select(0, i % inputs.size(0)).to(device, /*non_blocking=*/true);
    const auto y = labels.select(0, i % labels.size(0)).to(device, /*non_blocking=*/true);
    torch::nn::functional::cross_entropy(net->forward(x), y).backward();
    StepAdam(adam, flags);
  };
  for (int64_t i = 0; i < flags.warmup; ++i) step(i);
  const auto start = Now(device);
  if (flags.op_times) est_bench::StartOpTimes();
  for (int64_t i = flags.warmup; i < count; ++i) step(i);
  nlohmann::json result = {{"seconds", std::chrono::duration<double>(Now(device) - start).count()},
                           {"steps", flags.steps}};
  if (flags.op_times) result["op_micros_per_step"] = est_bench::StopOpTimes(flags.steps);
  return result;
}

nlohmann::json RunRawAllreduce(const Flags& flags) {
  auto collective = ConnectWorkers(est::distribute::ResolveCluster(), flags.transport != "tcp");
  torch::Tensor buffer = torch::ones({flags.bytes / 4});
  for (int64_t i = 0; i < flags.warmup; ++i) collective->allreduce(buffer, est::distribute::ReduceOp::kSum);
  collective->reset();
  for (int64_t i = 0; i < flags.steps; ++i) collective->allreduce(buffer, est::distribute::ReduceOp::kSum);
  return {{"allreduce", collective->stats_json(0)}, {"steps", flags.steps}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("train_bench: one timed training run (see apps/bench/run_benchmarks.py)", "train_bench");
  Flags flags;
  app.add_option("--loop", flags.loop)->check(CLI::IsMember({"estimator", "handwritten", "raw_allreduce"}));
  app.add_option("--model", flags.model)->check(CLI::IsMember({"cnn", "mlp", "resnet"}));
  app.add_option("--strategy", flags.strategy)->check(CLI::IsMember({"none", "multi_worker"}));
  app.add_option("--batch-size", flags.batch_size)->check(CLI::PositiveNumber);
  app.add_option("--steps", flags.steps)->check(CLI::PositiveNumber);
  app.add_option("--warmup", flags.warmup)->check(CLI::PositiveNumber);
  app.add_option("--device", flags.device, "cpu or cuda:N (a LibTorch with CUDA)");
  app.add_option("--bytes", flags.bytes)->check(CLI::NonNegativeNumber);
  app.add_option("--transport", flags.transport)->check(CLI::IsMember({"auto", "tcp"}));
  app.add_option("--compression", flags.compression, "multi_worker: gradient compression")
      ->check(CLI::IsMember({"none", "fp16", "bf16", "powersgd"}));
  app.add_option("--powersgd-rank", flags.powersgd_rank, "multi_worker, powersgd: the factors' columns")
      ->check(CLI::Range(int64_t{1}, int64_t{64}));
  app.add_option("--bucket-cap-mb", flags.bucket_cap_mb, "multi_worker: gradient buckets close at this many MiB")
      ->check(CLI::Range(0.001, 1048576.0));
  app.add_option("--overlap", flags.overlap, "multi_worker: buckets all-reduced while backward runs")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--fused-optimizer-step", flags.fused_optimizer_step,
                 "estimator: step Adam fused (RunConfig::fused_optimizer_step)");
  app.add_option("--kernels", flags.kernels,
                 "on: the CNN's and the MLP's layers on est::kernels; ops: LibTorch's slow CPU kernels replaced, "
                 "Adam fused and the CNN's forward run as a fused graph (est::kernels::FusedForward); in every loop")
      ->check(CLI::IsMember({"on", "ops", "off"}));
  app.add_flag("--op-times", flags.op_times, "each LibTorch op's own time a step, over the timed steps");
  app.add_option("--channels-last", flags.channels_last, "estimator: RunConfig::channels_last")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--cpu-allocator", flags.cpu_allocator, "handwritten: LibTorch's CPU allocator, or ours")
      ->check(CLI::IsMember({"default", "caching"}));
  if (auto exit_status = est_apps::ParseFlags(app, argc, argv, "train_bench")) return *exit_status;
  try {
    // A clear error for a device LibTorch does not see.
    est::distribute::CheckDeviceAvailable(est::distribute::ParseDevice(flags.device));
    est_apps::CheckKernelsBuilt(flags.kernels == "ops", "--kernels ops");
    nlohmann::json result = flags.loop == "estimator"     ? RunEstimator(flags)
                            : flags.loop == "handwritten" ? RunHandwritten(flags)
                                                          : RunRawAllreduce(flags);
    result["loop"] = flags.loop;
    result["model"] = flags.model;
    result["batch_size"] = flags.batch_size;
    result["device"] = flags.device;
    result["peak_rss_mb"] = PeakRssMegabytes();
    if (result.contains("seconds"))
      result["examples_per_sec"] = static_cast<double>(flags.steps * flags.batch_size) / result["seconds"].get<double>();
    std::printf("%s\n", result.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_bench: error: %s\n", e.what());
    return 1;
  }
}
