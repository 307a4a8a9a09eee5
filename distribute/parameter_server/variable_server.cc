// The variable service of a ps task: VariableShards behind gRPC, the job id and token checked
// on every call.

#include "distribute/parameter_server/variable_server.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <set>

#include "common/crash_point.h"
#include "common/error.h"
#include "distribute/parameter_server/tensor_pool.h"
#include "distribute/parameter_server/variable_service_rpc.h"
#include "distribute/parameter_server/variable_shards.h"
#include "net/call_admission.h"
#include "net/grpc_transport.h"

namespace est::distribute {
namespace {

uint64_t RandomIncarnation() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device() ^ 1;  // never 0: 0 means "not known yet"
}

grpc::Status Invalid(const std::string& why) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why); }

/// The call's deadline and cancellation, for waits inside VariableShards.
CallLimit LimitOf(const grpc::ServerContextBase& context) {
  CallLimit limit;
  const auto left = context.deadline() - std::chrono::system_clock::now();
  if (left < std::chrono::hours(24 * 365))
    limit.deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(left);
  limit.cancelled = [&context] { return context.IsCancelled(); };
  return limit;
}

/// Reads every frame of a client stream: their chunks into `assembler` (each chunk's slot must
/// pass `slot_ok`), the first frame's other fields into `header`, which `on_header` sees before
/// that frame's chunks land. INVALID_ARGUMENT for a stream without frames, a chunk that does not
/// fit, or an incomplete tensor.
template <typename Header>
grpc::Status ReadChunked(MessageReader<TensorFrame<Header>>& reader, const char* call,
                         TensorAssembler& assembler, Header& header,
                         const std::function<bool(const std::string& slot)>& slot_ok,
                         const std::function<void(const Header&)>& on_header = nullptr) {
  TensorFrame<Header> frame;
  bool first = true;
  while (reader.Read(&frame)) {
    if (first && on_header) on_header(frame.header);
    for (const ps::TensorChunk& chunk : frame.header.chunks())
      if (!slot_ok(chunk.slot())) return Invalid(std::string("a ") + call + " carries slot '" + chunk.slot() + "'");
    if (std::string error = assembler.add(frame); !error.empty()) return Invalid(error);
    frame.header.clear_chunks();
    if (first) header = std::move(frame.header);
    first = false;
  }
  if (first) return Invalid(std::string("a ") + call + " call without messages");
  if (std::string error = assembler.check_complete(); !error.empty()) return Invalid(error);
  return grpc::Status::OK;
}

class VariableServiceImpl final : public VariableServiceBase {
 public:
  explicit VariableServiceImpl(const VariableServiceOptions& options)
      : shards_(options.task),
        task_(options.task),
        incarnation_(RandomIncarnation()),
        admission_("ps " + std::to_string(options.task), options.job_id, options.token, options.host) {}

  void set_port(uint16_t port) { admission_.set_port(port); }
  uint64_t incarnation() const { return incarnation_; }
  bool initialized() const { return shards_.initialized(); }

  bool wait_finished(std::chrono::milliseconds timeout, std::chrono::milliseconds grace) {
    std::unique_lock<std::mutex> lock(finish_mutex_);
    if (!finished_cv_.wait_for(lock, timeout, [&] { return finished_; })) return false;
    // Serve a little longer, until every worker of the job, and any other that was training
    // here, has left or been told (a worker that starts late learns the job is over instead of
    // finding nobody at this address).
    lock.unlock();
    const uint32_t workers = static_cast<uint32_t>(std::max(0, shards_.rule().num_workers()));
    lock.lock();
    finished_cv_.wait_for(lock, grace, [&] {
      if (!active_workers_.empty()) return false;
      for (uint32_t worker = 0; worker < workers; ++worker)
        if (settled_workers_.count(worker) == 0) return false;
      return true;
    });
    return true;
  }

  grpc::Status Describe(grpc::ServerContextBase* context, const ps::DescribeRequest*, ps::DescribeReply* reply) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    reply->set_incarnation(incarnation_);
    reply->set_task(static_cast<uint32_t>(task_));
    reply->set_initialized(shards_.initialized());
    reply->set_global_step(shards_.global_step());
    reply->set_plan(shards_.plan());
    for (auto& variable : shards_.variables()) *reply->add_variables() = std::move(variable);
    const auto positions = shards_.input_positions();
    reply->mutable_input_positions()->insert(positions.begin(), positions.end());
    *reply->mutable_rule() = shards_.rule();
    reply->set_max_staleness(shards_.max_staleness());
    reply->set_dropped_pushes(shards_.dropped_pushes());
    return grpc::Status::OK;
  }

  grpc::Status Initialize(grpc::ServerContextBase* context, MessageReader<InitializeFrame>* reader,
                          ps::InitializeReply* reply) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    ps::InitializeRequest header;
    TensorAssembler assembler;
    if (grpc::Status invalid = ReadChunked(*reader, "Initialize", assembler, header, [](const std::string&) { return true; });
        !invalid.ok())
      return invalid;
    const std::vector<ps::ShardSpec> specs(header.shards().begin(), header.shards().end());
    const std::map<uint32_t, int64_t> positions(header.input_positions().begin(), header.input_positions().end());
    bool initialized_now = false;
    std::string error;
    try {
      error = shards_.initialize(header.plan(), specs, assembler.take(), header.global_step(), positions,
                                 {header.variables().begin(), header.variables().end()}, header.rule(),
                                 header.replace(), initialized_now);
    } catch (const Error& e) {
      error = e.what();
    }
    if (!error.empty()) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, error);
    reply->set_initialized_now(initialized_now);
    reply->set_incarnation(incarnation_);
    return grpc::Status::OK;
  }

  grpc::Status Pull(grpc::ServerContextBase* context, const ps::PullRequest* request,
                    MessageWriter<PullFrame>* writer) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    if (grpc::Status finished = check_not_finished(request->worker()); !finished.ok()) return finished;
    if (!shards_.initialized())
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "ps " + std::to_string(task_) + " holds no variables yet");
    // The frames refer to each shard's value as it is under the shard's lock (an update copies
    // it first while they do), and to snapshots of optimizer slots; they are sent after.
    std::vector<PullFrame> frames;
    ChunkWriter<ps::PullReply> chunks([&](PullFrame& frame) {
      frames.push_back(std::move(frame));
      return true;
    });
    const PullHeader header = shards_.pull(request->worker(), request->with_state(), LimitOf(*context),
                                           [&](uint32_t id, const std::string& slot, const at::Tensor& tensor) {
                                             if (slot.empty()) {
                                               chunks.add({id, slot, tensor});
                                               return;
                                             }
                                             at::Tensor snapshot =
                                                 snapshots_.take({0, id, slot}, tensor.sizes(), tensor.scalar_type());
                                             snapshot.copy_(tensor);
                                             chunks.add({id, slot, snapshot});
                                           });
    chunks.finish();
    ps::PullReply& first = frames.front().header;
    first.set_global_step(header.global_step);
    first.set_incarnation(incarnation_);
    if (request->with_state())
      first.mutable_input_positions()->insert(header.input_positions.begin(), header.input_positions.end());
    bool written = true;
    for (const PullFrame& frame : frames) written = written && writer->Write(frame);
    return written ? grpc::Status::OK : grpc::Status(grpc::StatusCode::CANCELLED, "the puller went away");
  }

  grpc::Status Push(grpc::ServerContextBase* context, MessageReader<PushFrame>* reader,
                    ps::PushReply* reply) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    ps::PushRequest header;
    uint32_t worker = 0;  // known once the first frame's header is read, before its chunks land
    TensorAssembler assembler([&](const TensorKey& key, at::IntArrayRef shape, at::ScalarType dtype) {
      return gradients_.take({worker, key.first, key.second}, shape, dtype);
    });
    if (grpc::Status invalid = ReadChunked<ps::PushRequest>(
            *reader, "Push", assembler, header, [](const std::string& slot) { return slot == "grad"; },
            [&](const ps::PushRequest& first) { worker = first.worker(); });
        !invalid.ok())
      return invalid;
    if (grpc::Status finished = check_not_finished(header.worker()); !finished.ok()) return finished;
    if (header.incarnation() != incarnation_)
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "ps " + std::to_string(task_) + " restarted since this worker pulled (incarnation " +
                              std::to_string(header.incarnation()) + ", now " + std::to_string(incarnation_) + ")");
    ShardPush push;
    push.worker = header.worker();
    push.sequence = header.sequence();
    push.optimizers.insert(header.optimizers().begin(), header.optimizers().end());
    push.input_position = header.input_position();
    push.step = header.step();
    push.options_step = header.options_step();
    push.clipping = header.clipping();
    push.holds_every_shard = header.holds_every_shard();
    for (auto& [key, tensor] : assembler.take()) push.gradients.emplace(key.first, std::move(tensor));
    PushOutcome outcome;
    std::string error;
    try {
      error = shards_.apply(push, LimitOf(*context), outcome);
    } catch (const Error& e) {
      error = e.what();
    }
    if (outcome.optimizers_differ) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, error, kConfigMismatch);
    if (!error.empty()) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, error);
    if (outcome.job_finished) return JobFinished();
    CrashPoint("push", outcome.global_step);  // the fault-injection tests kill ps tasks here
    reply->set_global_step(outcome.global_step);
    reply->set_dropped(outcome.dropped);
    reply->set_incarnation(incarnation_);
    if (outcome.round_norm) *reply->mutable_round_norm() = *outcome.round_norm;
    return grpc::Status::OK;
  }

  grpc::Status ApplyRound(grpc::ServerContextBase* context, const ps::ApplyRoundRequest* request,
                          ps::ApplyRoundReply* reply) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    if (grpc::Status finished = check_not_finished(request->worker()); !finished.ok()) return finished;
    std::string error;
    const int64_t global_step = shards_.finish_round(request->step(), request->global_norm(), error);
    if (!error.empty()) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, error);
    reply->set_global_step(global_step);
    return grpc::Status::OK;
  }

  grpc::Status Finish(grpc::ServerContextBase* context, const ps::FinishRequest* request, ps::FinishReply*) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    {
      std::lock_guard<std::mutex> lock(finish_mutex_);
      if (request->job()) finished_ = true;
      active_workers_.erase(request->worker());
      settled_workers_.insert(request->worker());
    }
    if (request->job()) shards_.finish_job();
    if (!request->job()) shards_.leave(request->worker());
    finished_cv_.notify_all();
    return grpc::Status::OK;
  }

 private:
  /// OK while the job trains (and `worker` counts as active); ABORTED once the chief finished it.
  grpc::Status check_not_finished(uint32_t worker) {
    {
      std::lock_guard<std::mutex> lock(finish_mutex_);
      if (!finished_) {
        active_workers_.insert(worker);
        return grpc::Status::OK;
      }
      active_workers_.erase(worker);
      settled_workers_.insert(worker);
    }
    finished_cv_.notify_all();
    return JobFinished();
  }

  static grpc::Status JobFinished() {
    return grpc::Status(grpc::StatusCode::ABORTED, "the chief finished the job's training");
  }

  VariableShards shards_;
  const int task_;
  const uint64_t incarnation_;
  net::CallAdmission admission_;
  std::mutex finish_mutex_;
  std::condition_variable finished_cv_;
  bool finished_ = false;
  std::set<uint32_t> active_workers_;  ///< workers that pulled or pushed and have not left or been told
  std::set<uint32_t> settled_workers_;  ///< workers that left, or were told the job is finished
  TensorPool snapshots_;  ///< the optimizer slots pulls send, by shard and slot
  TensorPool gradients_;  ///< where pushes land, by worker and shard
};

class VariableServerImpl final : public VariableServer {
 public:
  explicit VariableServerImpl(const VariableServiceOptions& options) : service_(options), handler_(service_) {
    net::StartedServer started = net::StartGrpcServer(handler_, options.host, options.port, options.tls,
                                                      kMaxVariableMessageBytes, "ps " + std::to_string(options.task));
    server_ = std::move(started.server);
    port_ = started.port;
    service_.set_port(port_);
  }
  ~VariableServerImpl() override { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200)); }

  uint16_t port() const override { return port_; }
  uint64_t incarnation() const override { return service_.incarnation(); }
  bool initialized() const override { return service_.initialized(); }
  bool wait_finished(std::chrono::milliseconds timeout, std::chrono::milliseconds grace) override {
    return service_.wait_finished(timeout, grace);
  }

 private:
  VariableServiceImpl service_;
  VariableServiceHandler handler_;  ///< destroyed after server_, before service_
  std::unique_ptr<grpc::Server> server_;
  uint16_t port_ = 0;
};

}  // namespace

std::unique_ptr<VariableServer> VariableServer::Start(const VariableServiceOptions& options) {
  return std::make_unique<VariableServerImpl>(options);
}

}  // namespace est::distribute
