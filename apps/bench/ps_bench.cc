// ps_bench: the parameter-server benchmarks, one JSON line per run. Run by
// run_benchmarks.py (group "ps").
//
//   ps_bench --loop train --mode async|bounded|sync|mirrored [--straggler] --batch-size B
//            --steps N --warmup W        one task of an est-launch cluster (--ps 1 for the ps
//                                        modes): trains the Fashion-MNIST CNN on pre-built
//                                        batches; a ps task serves. Prints this worker's
//                                        examples/s.
//   ps_bench --loop transfer --model cnn|mlp --steps N
//                                        in one process over loopback: one ps task holding
//                                        the model's variables, a push and a pull per step,
//                                        vs the same bytes streamed both ways by a bare gRPC
//                                        service in the same chunks. Prints both in GB/s.

#include <grpcpp/grpcpp.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>

#include "apps/bench/bench_models.h"
#include "apps/bench/raw_transfer.grpc.pb.h"
#include "apps/common/parse_flags.h"
#include "common/error.h"
#include "common/malloc_tuning.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/parameter_server/ps_connection.h"
#include "distribute/parameter_server/tensor_chunks.h"
#include "distribute/parameter_server/variable_server.h"
#include "distribute/parameter_server_strategy.h"
#include "estimator/estimator.h"
#include "estimator/process_tuning.h"
#include "estimator/train_and_evaluate.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string loop = "train";
  std::string mode = "async";
  std::string model = "cnn";
  bool straggler = false;
  int64_t batch_size = 64;
  int64_t steps = 200;
  int64_t warmup = 20;
};

// Times this worker's own steps after `warmup` of them; with `straggle`, sleeps after each
// timed step as long as the warmup steps took on average: the worker runs at half its speed.
class LocalStepTimer : public est::SessionRunHook {
 public:
  LocalStepTimer(int64_t warmup, bool straggle) : warmup_(warmup), straggle_(straggle) {}
  void after_run(est::RunContext&, const est::RunValues&) override {
    ++steps_;
    if (steps_ == 1) first_ = Clock::now();
    if (steps_ == warmup_) {
      start_ = Clock::now();
      step_time_ = (start_ - first_) / std::max<int64_t>(1, warmup_ - 1);
    }
    if (steps_ > warmup_) {
      end_ = Clock::now();
      if (straggle_) std::this_thread::sleep_for(step_time_);
    }
  }
  /// Timed steps and their seconds (a straggler's sleeps included).
  int64_t timed_steps() const { return std::max<int64_t>(0, steps_ - warmup_); }
  double seconds() const { return std::chrono::duration<double>(end_ - start_).count(); }

 private:
  int64_t warmup_;
  bool straggle_;
  int64_t steps_ = 0;
  Clock::time_point first_, start_, end_;
  Clock::duration step_time_{};
};

nlohmann::json RunTrain(const Flags& flags) {
  est::TuneProcessForTraining();  // as est-train does in every task
  est::RunConfig config;  // TF_CONFIG from est-launch
  config.save_summary_steps = 0;
  config.save_checkpoints_steps = 1'000'000'000;
  config.log_step_count_steps = 1'000'000'000;
  if (flags.mode == "mirrored") {
    // The cluster RunConfig resolved, given at once: the worker's index is asked before the
    // Estimator would hand it over, and a ps task serves without one.
    config.train_distribute = est::distribute::MultiWorkerMirroredStrategy::Create(
        est::distribute::MultiWorkerOptions().cluster(config.cluster));
  } else {
    config.train_distribute = est::distribute::ParameterServerStrategy::Create(
        est::distribute::ParameterServerOptions()
            .mode(est::distribute::ParseParameterServerMode(flags.mode))
            .cluster(config.cluster));
  }
  if (config.cluster.is_ps()) {
    // As est-train's ps tasks: the chief's RunConfig::fused_optimizer_step says how they step.
    config.train_distribute->serve();
    return {{"task", "ps"}};
  }
  const int64_t total_steps = flags.warmup + flags.steps;
  const auto [inputs, labels] = est_bench::MakeBatches(flags.model, flags.batch_size, 32);
  auto model_fn = [model = flags.model](const est::Features& features, const torch::Tensor& y, est::Mode,
                                        est::ModelContext& ctx) {
    auto net = ctx.module("net", [&] { return est_bench::MakeModel(model, /*kernels=*/false); });
    auto loss = torch::nn::functional::cross_entropy(net->forward(features.at("x")), y);
    auto& adam = ctx.optimizer("adam", [&] { return torch::optim::Adam(net->parameters(), 1e-3); });
    return est::EstimatorSpec::Train(loss, adam);
  };
  auto input_fn = [inputs = inputs, labels = labels] {
    return est::data::Dataset::FromTensors({{"x", inputs}}, labels).repeat();
  };
  // With --straggler, worker 1 alone is slowed 2×.
  const bool straggle = flags.straggler && config.train_distribute->worker_index() == 1;
  auto timer = std::make_shared<LocalStepTimer>(flags.warmup, straggle);
  const std::string model_dir = "/tmp/ps_bench_" + std::to_string(::getppid());
  if (config.cluster.is_chief) std::filesystem::remove_all(model_dir);
  est::Estimator estimator(model_fn, model_dir, config);
  // Async: the global step counts every worker's pushes, so the job ends after about
  // total_steps per worker when max_steps is twice that.
  const int64_t max_steps = flags.mode == "async" || flags.mode == "bounded" ? 2 * total_steps : total_steps;
  estimator.train(input_fn, est::TrainOptions().max_steps(max_steps).hooks({timer}));
  if (config.cluster.is_chief) std::filesystem::remove_all(model_dir);
  nlohmann::json result = {{"task", config.cluster.job()},
                           {"worker", config.train_distribute->worker_index()},
                           {"straggler", straggle},
                           {"steps", timer->timed_steps()},
                           {"seconds", timer->seconds()}};
  result["examples_per_sec"] = timer->seconds() > 0 ? static_cast<double>(timer->timed_steps() * flags.batch_size) /
                                                          timer->seconds()
                                                    : 0.0;
  return result;
}

// The bare gRPC peer: receives and sends bytes in kChunkBytes messages.
class RawTransferService final : public est::bench::RawTransfer::Service {
 public:
  grpc::Status Send(grpc::ServerContext*, grpc::ServerReader<est::bench::Chunk>* reader, est::bench::Ack* ack) override {
    est::bench::Chunk chunk;
    int64_t bytes = 0;
    while (reader->Read(&chunk)) bytes += static_cast<int64_t>(chunk.data().size());
    ack->set_bytes(bytes);
    return grpc::Status::OK;
  }
  grpc::Status Receive(grpc::ServerContext*, const est::bench::ReceiveRequest* request,
                       grpc::ServerWriter<est::bench::Chunk>* writer) override {
    const std::string block(static_cast<size_t>(est::distribute::kChunkBytes), 'x');
    est::bench::Chunk chunk;
    for (int64_t left = request->bytes(); left > 0; left -= est::distribute::kChunkBytes) {
      chunk.mutable_data()->assign(block.data(), static_cast<size_t>(std::min(left, est::distribute::kChunkBytes)));
      if (!writer->Write(chunk)) break;
    }
    return grpc::Status::OK;
  }
};

nlohmann::json RunTransfer(const Flags& flags) {
  est::TuneMallocForTraining();  // as est-train does in every task (a ps task's included)
  auto net = est_bench::MakeModel(flags.model, /*kernels=*/false);
  std::vector<est::distribute::VariableInfo> infos;
  std::vector<at::Tensor> values, gradients;
  std::vector<std::optional<est::ps::OptimizerConfig>> optimizers;
  int64_t bytes = 0;
  for (const auto& item : net->named_parameters()) {
    const at::Tensor& parameter = item.value();
    infos.push_back({item.key(), parameter.sizes().vec(), parameter.scalar_type()});
    values.push_back(parameter.detach());
    gradients.push_back(torch::full_like(parameter, 1e-6));
    est::ps::OptimizerConfig sgd;
    sgd.set_kind("SGD");
    sgd.set_lr(1e-3);
    optimizers.push_back(sgd);
    bytes += static_cast<int64_t>(parameter.nbytes());
  }
  est::distribute::VariableServiceOptions service;
  service.job_id = "ps_bench";
  auto server = est::distribute::VariableServer::Start(service);
  est::distribute::PsConnectionOptions options;
  options.tasks = {{"127.0.0.1", server->port()}};
  options.job_id = "ps_bench";
  est::distribute::PsConnection connection(options);
  connection.initialize(infos, values, optimizers, std::vector<est::distribute::OptimizerSlots>(infos.size()), 0, {});
  double push_seconds = 0;
  auto ours_step = [&] {
    const auto push_start = Clock::now();
    connection.push(gradients, optimizers, 0, 0, 0);
    push_seconds += std::chrono::duration<double>(Clock::now() - push_start).count();
    connection.pull(false, values);  // into the variables, as a worker's step does
  };
  RawTransferService raw_service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&raw_service);
  builder.SetMaxReceiveMessageSize(est::distribute::kMaxVariableMessageBytes);
  builder.SetMaxSendMessageSize(est::distribute::kMaxVariableMessageBytes);
  auto raw_server = builder.BuildAndStart();
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(est::distribute::kMaxVariableMessageBytes);
  arguments.SetMaxSendMessageSize(est::distribute::kMaxVariableMessageBytes);
  auto stub = est::bench::RawTransfer::NewStub(
      grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), arguments));
  const std::string block(static_cast<size_t>(est::distribute::kChunkBytes), 'y');
  auto raw_step = [&] {
    {
      grpc::ClientContext context;
      est::bench::Ack ack;
      auto writer = stub->Send(&context, &ack);
      est::bench::Chunk chunk;
      for (int64_t left = bytes; left > 0; left -= est::distribute::kChunkBytes) {
        chunk.mutable_data()->assign(block.data(), static_cast<size_t>(std::min(left, est::distribute::kChunkBytes)));
        writer->Write(chunk);
      }
      writer->WritesDone();
      EST_CHECK(writer->Finish().ok() && ack.bytes() == bytes, est::CommunicationError, "raw transfer: send failed");
    }
    grpc::ClientContext context;
    est::bench::ReceiveRequest request;
    request.set_bytes(bytes);
    auto reader = stub->Receive(&context, request);
    est::bench::Chunk chunk;
    int64_t received = 0;
    while (reader->Read(&chunk)) received += static_cast<int64_t>(chunk.data().size());
    EST_CHECK(reader->Finish().ok() && received == bytes, est::CommunicationError, "raw transfer: receive failed");
  };
  // Alternated step by step, so that both see the same machine.
  for (int64_t i = 0; i < flags.warmup; ++i) {
    ours_step();
    raw_step();
  }
  push_seconds = 0;
  double ours_seconds = 0;
  double raw_seconds = 0;
  for (int64_t i = 0; i < flags.steps; ++i) {
    auto start = Clock::now();
    ours_step();
    ours_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    start = Clock::now();
    raw_step();
    raw_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  }
  raw_server->Shutdown();
  const double moved = 2.0 * static_cast<double>(bytes) * static_cast<double>(flags.steps) / 1e9;
  return {{"bytes_per_step", 2 * bytes}, {"ours_gbytes_per_sec", moved / ours_seconds},
          {"ours_push_share", push_seconds / ours_seconds},
          {"raw_gbytes_per_sec", moved / raw_seconds}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ps_bench: parameter-server benchmarks (see apps/bench/run_benchmarks.py)", "ps_bench");
  Flags flags;
  app.add_option("--loop", flags.loop)->check(CLI::IsMember({"train", "transfer"}));
  app.add_option("--mode", flags.mode)->check(CLI::IsMember({"async", "bounded", "sync", "mirrored"}));
  app.add_option("--model", flags.model)->check(CLI::IsMember({"cnn", "mlp"}));
  app.add_flag("--straggler", flags.straggler, "worker 1 sleeps as long as its step takes: half its speed");
  app.add_option("--batch-size", flags.batch_size)->check(CLI::PositiveNumber);
  app.add_option("--steps", flags.steps)->check(CLI::PositiveNumber);
  app.add_option("--warmup", flags.warmup)->check(CLI::PositiveNumber);
  if (auto exit_status = est_apps::ParseFlags(app, argc, argv, "ps_bench")) return *exit_status;
  try {
    nlohmann::json result = flags.loop == "train" ? RunTrain(flags) : RunTransfer(flags);
    result["loop"] = flags.loop;
    result["mode"] = flags.mode;
    result["model"] = flags.model;
    std::printf("%s\n", result.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ps_bench: error: %s\n", e.what());
    return 1;
  }
}
