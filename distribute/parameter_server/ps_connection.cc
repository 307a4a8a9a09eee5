#include "distribute/parameter_server/ps_connection.h"

#include <ATen/ATen.h>

#include <cmath>
#include <exception>
#include <thread>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/rendezvous/error_text.h"

namespace est::distribute {
namespace {

ps::VariableSpec ToSpec(const VariableInfo& variable) {
  ps::VariableSpec spec;
  spec.set_name(variable.name);
  for (int64_t size : variable.shape) spec.add_shape(size);
  spec.set_dtype(static_cast<int32_t>(variable.dtype));
  return spec;
}

VariableInfo FromSpec(const ps::VariableSpec& spec) {
  return VariableInfo{spec.name(), {spec.shape().begin(), spec.shape().end()}, static_cast<c10::ScalarType>(spec.dtype())};
}

/// Rows [shard.row_begin, +rows) of `tensor`, or all of it for a shard that is the whole variable.
at::Tensor Cut(const at::Tensor& tensor, const Shard& shard) {
  at::Tensor part = shard.parts == 1 ? tensor : tensor.narrow(0, shard.row_begin, shard.rows);
  return part.detach().to(at::kCPU).contiguous();
}

}  // namespace

PsConnection::PsConnection(PsConnectionOptions options) : options_(std::move(options)) {
  EST_CHECK(!options_.tasks.empty(), ConfigError, "ParameterServerStrategy needs at least one ps task");
  for (size_t task = 0; task < options_.tasks.size(); ++task) {
    VariableServiceOptions client;
    client.task = static_cast<int>(task);
    client.host = options_.tasks[task].first;
    client.port = options_.tasks[task].second;
    client.job_id = options_.job_id;
    client.token = options_.token;
    client.tls = options_.tls;
    client.timeout = options_.timeout;
    clients_.push_back(std::make_unique<VariableClient>(client));
  }
  incarnations_.assign(clients_.size(), 0);
  options_.placement.num_ps(num_ps());
}

PsConnection::~PsConnection() = default;

const Placement& PsConnection::placement() const {
  EST_ASSERT(placement_ != nullptr, "the plan is known once the ps tasks are initialized");
  return *placement_;
}

void PsConnection::for_each_task(const std::function<void(int task)>& fn) {
  if (clients_.size() == 1) return fn(0);
  std::vector<std::exception_ptr> failures(clients_.size());
  std::vector<std::thread> threads;
  for (size_t task = 0; task < clients_.size(); ++task)
    threads.emplace_back([&, task] {
      try {
        fn(static_cast<int>(task));
      } catch (...) {
        failures[task] = std::current_exception();
      }
    });
  for (auto& thread : threads) thread.join();
  for (auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

void PsConnection::set_plan(std::vector<VariableInfo> variables, uint64_t expected_fingerprint) {
  auto placement = std::make_unique<Placement>(std::move(variables), options_.placement);
  EST_CHECK(placement->fingerprint() == expected_fingerprint, ConfigError, "worker ", options_.worker,
            " computes another placement of the variables than the chief did (fingerprint ", placement->fingerprint(),
            ", the ps tasks hold ", expected_fingerprint, "): every task of the job must use the same "
            "ParameterServerOptions placement and number of ps tasks");
  placement_ = std::move(placement);
}

bool PsConnection::initialized() {
  const ps::DescribeReply first = clients_.front()->describe_task();
  if (!first.initialized()) return false;
  std::vector<ps::DescribeReply> replies(clients_.size());
  replies.front() = first;
  for_each_task([&](int task) {
    if (task > 0) replies[static_cast<size_t>(task)] = clients_[static_cast<size_t>(task)]->describe_task();
  });
  for (size_t task = 0; task < replies.size(); ++task) {
    if (!replies[task].initialized()) return false;
    EST_CHECK(replies[task].plan() == first.plan(), ConfigError, clients_[task]->describe(),
              " holds variables of another placement plan than ps 0 (from another job, or another number of ps "
              "tasks); restart it empty");
    incarnations_[task] = replies[task].incarnation();
  }
  input_positions_ = {first.input_positions().begin(), first.input_positions().end()};
  const ps::UpdateRule& rule = first.rule();
  // A worker added to the running job (an index beyond the chief's workers) lists more
  // workers than the chief's cluster did.
  const bool added =
      options_.worker >= static_cast<uint32_t>(rule.num_workers()) && options_.rule.num_workers() > rule.num_workers();
  // replicas_to_aggregate counts only in SYNC mode (an added worker's default is larger).
  EST_CHECK(rule.mode() == options_.rule.mode() && rule.staleness() == options_.rule.staleness() &&
                (rule.replicas_to_aggregate() == options_.rule.replicas_to_aggregate() ||
                 rule.mode() != ps::UpdateRule::SYNC) &&
                (rule.num_workers() == options_.rule.num_workers() || added),
            ConfigError, "worker ", options_.worker, " trains with ", ps::UpdateRule::Mode_Name(options_.rule.mode()),
            " updates (staleness ", options_.rule.staleness(), ", replicas_to_aggregate ",
            options_.rule.replicas_to_aggregate(), ", ", options_.rule.num_workers(), " workers) but the chief set ",
            ps::UpdateRule::Mode_Name(rule.mode()), " (staleness ", rule.staleness(), ", replicas_to_aggregate ",
            rule.replicas_to_aggregate(), ", ", rule.num_workers(),
            " workers): every task needs the same "
            "ParameterServerOptions");
  if (added)
    Log().info("Worker {} joins a running job whose chief started it with {} worker(s)", options_.worker,
               rule.num_workers());
  if (!placement_) {
    std::vector<VariableInfo> variables;
    for (const auto& spec : first.variables()) variables.push_back(FromSpec(spec));
    set_plan(std::move(variables), first.plan());
  }
  return true;
}

void PsConnection::wait_initialized() {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options_.timeout;
  auto next_log = start;  // then every 30 s, as the rendezvous says who it waits for
  while (!initialized()) {
    if (const auto now = std::chrono::steady_clock::now(); now >= next_log) {
      Log().info("Waiting for the chief to initialize the variables on the ps tasks; {} of {} passed",
                 DescribeDuration(std::chrono::duration_cast<std::chrono::milliseconds>(now - start)),
                 DescribeDuration(options_.timeout));
      next_log = now + std::chrono::seconds(30);
    }
    EST_CHECK(std::chrono::steady_clock::now() < deadline, TimeoutError, "the ps tasks held no variables after ",
              DescribeDuration(options_.timeout), ": the chief did not initialize them (is it running?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool PsConnection::initialize(const std::vector<VariableInfo>& variables, const std::vector<at::Tensor>& values,
                              const std::vector<std::optional<ps::OptimizerConfig>>& optimizers,
                              const std::vector<OptimizerSlots>& slots, int64_t global_step,
                              const std::map<uint32_t, int64_t>& input_positions, bool replace) {
  EST_ASSERT(values.size() == variables.size() && optimizers.size() == variables.size() &&
                 slots.size() == variables.size(), "one value, optimizer and slot list per variable");
  auto placement = std::make_unique<Placement>(variables, options_.placement);
  std::vector<ps::VariableSpec> specs;
  for (const auto& variable : variables) specs.push_back(ToSpec(variable));
  std::vector<bool> initialized_now(clients_.size(), false);
  for_each_task([&](int task) {
    std::vector<ps::ShardSpec> shards;
    std::vector<TensorToSend> tensors;
    for (int id : placement->shards_on_ps(task)) {
      const Shard& shard = placement->shards()[static_cast<size_t>(id)];
      const size_t v = static_cast<size_t>(shard.variable);
      ps::ShardSpec& spec = shards.emplace_back();
      spec.set_id(static_cast<uint32_t>(id));
      spec.set_variable(variables[v].name);
      spec.set_part(static_cast<uint32_t>(shard.part));
      spec.set_parts(static_cast<uint32_t>(shard.parts));
      for (int64_t size : shard.shape) spec.add_shape(size);
      spec.set_dtype(static_cast<int32_t>(variables[v].dtype));
      if (optimizers[v]) *spec.mutable_optimizer() = *optimizers[v];
      tensors.push_back({static_cast<uint32_t>(id), "", Cut(values[v], shard)});
      for (const auto& [slot, tensor] : slots[v])
        tensors.push_back({static_cast<uint32_t>(id), slot, SlotIsSharded(tensor) ? Cut(tensor, shard) : tensor.to(at::kCPU)});
    }
    initialized_now[static_cast<size_t>(task)] = clients_[static_cast<size_t>(task)]->initialize(
        placement->fingerprint(), shards, tensors, global_step, input_positions, specs, options_.rule, replace);
    incarnations_[static_cast<size_t>(task)] = clients_[static_cast<size_t>(task)]->describe_task().incarnation();
  });
  placement_ = std::move(placement);
  return initialized_now.front();
}

PsValues PsConnection::pull(bool with_state, const std::vector<at::Tensor>& into) {
  const Placement& plan = placement();
  EST_ASSERT(into.empty() || into.size() == plan.variables().size(), "one destination per variable of the plan");
  // Where each variable's values land: the caller's tensor, or a buffer kept for the next pull.
  std::vector<at::Tensor> destinations;
  for (size_t v = 0; v < plan.variables().size(); ++v) {
    const VariableInfo& variable = plan.variables()[v];
    const bool usable = !into.empty() && into[v].defined() && into[v].is_cpu() && into[v].is_contiguous() &&
                        into[v].sizes() == at::IntArrayRef(variable.shape) && into[v].scalar_type() == variable.dtype;
    destinations.push_back(usable ? into[v]
                                  : buffers_.take({0, static_cast<uint32_t>(v), ""}, variable.shape, variable.dtype));
  }
  auto destination = [&](const TensorKey& key, at::IntArrayRef, at::ScalarType) -> at::Tensor {
    if (!key.second.empty() || key.first >= plan.shards().size()) return {};  // optimizer state: new tensors
    const Shard& shard = plan.shards()[key.first];
    const at::Tensor& whole = destinations[static_cast<size_t>(shard.variable)];
    return shard.parts == 1 ? whole : whole.narrow(0, shard.row_begin, shard.rows);
  };
  std::vector<PulledValues> pulled(clients_.size());
  for_each_task([&](int task) {
    pulled[static_cast<size_t>(task)] = clients_[static_cast<size_t>(task)]->pull(options_.worker, with_state, destination);
  });
  for (size_t task = 0; task < pulled.size(); ++task)
    if (incarnations_[task] != 0 && pulled[task].incarnation != incarnations_[task])
      EST_THROW(PsRestarted, clients_[task]->describe(), " restarted since this worker last reached it");
  PsValues values;
  values.global_step = pulled.front().global_step;
  values.input_positions = pulled.front().input_positions;
  for (size_t v = 0; v < plan.variables().size(); ++v) {
    const std::vector<int> ids = plan.shards_of_variable(static_cast<int>(v));
    auto part = [&](int id, const std::string& slot) -> const at::Tensor* {
      const auto& tensors = pulled[static_cast<size_t>(plan.shards()[static_cast<size_t>(id)].ps)].tensors;
      auto it = tensors.find({static_cast<uint32_t>(id), slot});
      return it == tensors.end() ? nullptr : &it->second;
    };
    for (int id : ids)
      EST_CHECK(part(id, "") != nullptr, CommunicationError,
                clients_[static_cast<size_t>(plan.shards()[static_cast<size_t>(id)].ps)]->describe(),
                " sent no value for '", plan.variables()[v].name, "' part ", plan.shards()[static_cast<size_t>(id)].part);
    values.values.push_back(destinations[v]);
    OptimizerSlots slots;
    if (with_state) {
      const auto& first_ps = pulled[static_cast<size_t>(plan.shards()[static_cast<size_t>(ids.front())].ps)].tensors;
      for (auto it = first_ps.lower_bound({static_cast<uint32_t>(ids.front()), std::string()});
           it != first_ps.end() && it->first.first == static_cast<uint32_t>(ids.front()); ++it) {
        const std::string& slot = it->first.second;
        if (slot.empty()) continue;
        if (!SlotIsSharded(it->second) || ids.size() == 1) {
          slots.emplace_back(slot, it->second);
          continue;
        }
        std::vector<at::Tensor> slot_parts;
        for (int id : ids) {
          const at::Tensor* tensor = part(id, slot);
          EST_CHECK(tensor != nullptr, CommunicationError, "the ps tasks sent optimizer slot '", slot, "' of '",
                    plan.variables()[v].name, "' for some of its parts only");
          slot_parts.push_back(*tensor);
        }
        slots.emplace_back(slot, at::cat(slot_parts));
      }
    }
    values.slots.push_back(std::move(slots));
  }
  return values;
}

std::optional<double> PsConnection::push(const std::vector<at::Tensor>& gradients,
                                         const std::vector<std::optional<ps::OptimizerConfig>>& optimizers,
                                         int64_t input_position, int64_t step, int64_t options_step,
                                         const ps::Clipping& clipping) {
  const Placement& plan = placement();
  EST_ASSERT(gradients.size() == plan.variables().size() && optimizers.size() == gradients.size(),
             "one gradient and optimizer per variable of the plan");
  const uint64_t sequence = ++sequence_;
  std::vector<ps::PushReply> replies(clients_.size());
  for_each_task([&](int task) {
    ps::PushRequest header;
    header.set_worker(options_.worker);
    header.set_sequence(sequence);
    header.set_input_position(input_position);
    header.set_incarnation(incarnations_[static_cast<size_t>(task)]);
    header.set_step(step);
    header.set_options_step(options_step);
    *header.mutable_clipping() = clipping;
    header.set_holds_every_shard(num_ps() == 1);
    std::vector<TensorToSend> tensors;
    for (int id : plan.shards_on_ps(task)) {
      const Shard& shard = plan.shards()[static_cast<size_t>(id)];
      const size_t v = static_cast<size_t>(shard.variable);
      if (!gradients[v].defined() || !optimizers[v]) continue;
      (*header.mutable_optimizers())[static_cast<uint32_t>(id)] = *optimizers[v];
      tensors.push_back({static_cast<uint32_t>(id), "grad", Cut(gradients[v], shard)});
    }
    replies[static_cast<size_t>(task)] = clients_[static_cast<size_t>(task)]->push(header, tensors);
  });
  if (clipping.global_norm() <= 0) return std::nullopt;
  // Every task's part of the norm of one step, or nothing: another worker finishes the step.
  double squares = 0;
  bool awaiting = false;
  for (const ps::PushReply& reply : replies) {
    if (!reply.has_round_norm() || reply.round_norm().step() != replies.front().round_norm().step())
      return std::nullopt;
    squares += reply.round_norm().norm_squared();
    awaiting = awaiting || reply.round_norm().awaiting();
  }
  const double norm = std::sqrt(squares);
  if (awaiting) {
    const int64_t round = replies.front().round_norm().step();
    for_each_task([&](int task) { clients_[static_cast<size_t>(task)]->apply_round(options_.worker, round, norm); });
  }
  return norm;
}

void PsConnection::finish(bool job) {
  for_each_task([&](int task) {
    try {
      clients_[static_cast<size_t>(task)]->finish(job, options_.worker);
    } catch (const Error& e) {
      Log().warn("could not tell {} that {}: {}", clients_[static_cast<size_t>(task)]->describe(),
                 job ? "the job is finished" : "this worker leaves", e.what());
    }
  });
}

}  // namespace est::distribute
