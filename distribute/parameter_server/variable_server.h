#pragma once
/// The variable service of a ps task (variable_service_rpc.h): its shards of the job's
/// variables, served at the task's address to the job's workers, and the client workers and
/// the chief reach a ps task with.

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "distribute/parameter_server/tensor_chunks.h"
#include "distribute/parameter_server/variable_service.pb.h"
#include "distribute/rendezvous/grpc_store.h"
#include "net/tls_options.h"

namespace est::distribute {

/// Where a ps task serves and what a call must carry (as the chief's store).
struct VariableServiceOptions {
  /// The ps task's index.
  int task = 0;
  /// The task's address: the server binds this host only; clients connect to it.
  std::string host = "127.0.0.1";
  /// The server's port; a server given 0 picks a free one.
  uint16_t port = 0;
  /// The job's id and token: calls with others are refused.
  std::string job_id = "default";
  std::string token;
  /// TLS, as the chief's store's.
  net::TlsOptions tls;
  /// Limit on a client's calls, reconnecting included.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

/// A ps task's server. Stops when destroyed.
class VariableServer {
 public:
  /// Listens on options.host:options.port; CommunicationError naming the address when it cannot.
  static std::unique_ptr<VariableServer> Start(const VariableServiceOptions& options);
  virtual ~VariableServer() = default;
  /// The port it listens on.
  virtual uint16_t port() const = 0;
  /// Chosen at random when it started; a client that sees another one knows the task restarted.
  virtual uint64_t incarnation() const = 0;
  /// Whether the chief has given it its variables (a worker pulls only then).
  virtual bool initialized() const = 0;
  /// Waits until the chief says the job is finished (true) or `timeout` passes (false); once
  /// finished, serves up to `grace` longer while a worker of the job (or another that was
  /// training here) has not yet left or been told.
  virtual bool wait_finished(std::chrono::milliseconds timeout,
                             std::chrono::milliseconds grace = std::chrono::seconds(10)) = 0;
};

/// What a pull brought back.
struct PulledValues {
  int64_t global_step = 0;
  uint64_t incarnation = 0;
  /// By (shard, slot): values under slot "", optimizer slots under their names.
  std::map<TensorKey, at::Tensor> tensors;
  std::map<uint32_t, int64_t> input_positions;
};

/// A client of one ps task. A call made while the task is not reachable is retried with
/// back-off until the timeout; errors name the task and its address. Thread-safe.
class VariableClient {
 public:
  explicit VariableClient(VariableServiceOptions options);
  ~VariableClient();

  /// "ps 1 at host:port".
  std::string describe() const;
  /// What the task holds; waits for it to listen.
  ps::DescribeReply describe_task();
  /// Gives the task its shards (InitializeRequest); false when it held them already.
  bool initialize(uint64_t plan, const std::vector<ps::ShardSpec>& specs, const std::vector<TensorToSend>& tensors,
                  int64_t global_step, const std::map<uint32_t, int64_t>& input_positions,
                  const std::vector<ps::VariableSpec>& variables = {}, const ps::UpdateRule& rule = {},
                  bool replace = false);
  /// The task's values (and with `with_state`, optimizer slots and input positions at one
  /// version), each in the tensor `destination` gives for it (default: new tensors).
  PulledValues pull(uint32_t worker, bool with_state, const TensorDestination& destination = nullptr);
  /// Pushes gradients (slot "grad"); returns the reply. A task that restarted since
  /// `incarnation` refuses: PsRestarted.
  ps::PushReply push(const ps::PushRequest& header, const std::vector<TensorToSend>& gradients);
  /// SYNC, clipping by global norm: applies step `step`, gathered on the task, with the
  /// global norm of its gradients over every task; returns the task's global step after it.
  int64_t apply_round(uint32_t worker, int64_t step, double global_norm);
  /// Tells the task that the job is finished (`job`, from the chief) or that `worker` leaves.
  void finish(bool job, uint32_t worker);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A ps task answered that the chief finished the job's training.
class PsJobFinished : public CommunicationError {
 public:
  using CommunicationError::CommunicationError;
};

/// A ps task restarted (empty) since this worker last reached it: it refused a push made for
/// its earlier incarnation, or holds no variables.
class PsRestarted : public CommunicationError {
 public:
  using CommunicationError::CommunicationError;
};

}  // namespace est::distribute
