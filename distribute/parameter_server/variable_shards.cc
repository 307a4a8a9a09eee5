#include "distribute/parameter_server/variable_shards.h"

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/logging.h"
#include "distribute/optimizer/optimizer_step.h"
#include "distribute/parameter_server/shard_optimizer.h"

namespace est::distribute {
namespace {

using Clock = std::chrono::steady_clock;

/// How often a wait looks again at which workers are live.
constexpr std::chrono::milliseconds kLivenessCheck(100);

/// tf.clip_by_global_norm's factor: clip_norm / norm where the norm exceeds clip_norm, else
/// 1 (also for a norm that is not finite: the gradients are not finite either).
double ClipScale(double clip_norm, double norm) { return std::isfinite(norm) && norm > clip_norm ? clip_norm / norm : 1.0; }

std::string ShapeText(at::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

}  // namespace

bool VariableShards::initialized() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return initialized_;
}

uint64_t VariableShards::plan() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plan_;
}

int64_t VariableShards::global_step() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return global_step_;
}

std::map<uint32_t, int64_t> VariableShards::input_positions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return input_positions_;
}

std::vector<ps::VariableSpec> VariableShards::variables() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return variables_;
}

ps::UpdateRule VariableShards::rule() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rule_;
}

int64_t VariableShards::max_staleness() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_staleness_;
}

int64_t VariableShards::dropped_pushes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_pushes_;
}

std::string VariableShards::initialize(uint64_t plan, const std::vector<ps::ShardSpec>& specs,
                                       std::map<TensorKey, at::Tensor> tensors, int64_t global_step,
                                       const std::map<uint32_t, int64_t>& input_positions,
                                       std::vector<ps::VariableSpec> variables, const ps::UpdateRule& rule,
                                       bool replace, bool& initialized_now) {
  std::unique_lock<std::shared_mutex> version(version_mutex_);
  std::lock_guard<std::mutex> lock(mutex_);
  initialized_now = false;
  if (initialized_ && !replace) {
    if (plan == plan_) return "";
    return "this ps task holds variables of another placement plan (another model, or another number of ps "
           "tasks) than the chief's";
  }
  std::map<uint32_t, std::unique_ptr<Shard>> shards;
  for (const ps::ShardSpec& spec : specs) {
    auto value = tensors.find({spec.id(), ""});
    const std::string name = "shard " + std::to_string(spec.id()) + " ('" + spec.variable() + "' part " +
                             std::to_string(spec.part()) + ")";
    if (value == tensors.end()) return name + " came without its value";
    const std::vector<int64_t> shape(spec.shape().begin(), spec.shape().end());
    if (value->second.sizes() != at::IntArrayRef(shape) || static_cast<int32_t>(value->second.scalar_type()) != spec.dtype())
      return name + " has shape " + ShapeText(value->second.sizes()) + " and dtype " +
             std::string(c10::toString(value->second.scalar_type())) + ", its plan says " + ShapeText(shape);
    auto shard = std::make_unique<Shard>();
    shard->spec = spec;
    shard->value = value->second;
    if (spec.has_optimizer()) {
      shard->optimizer = MakeShardOptimizer(spec.optimizer(), shard->value);
      OptimizerSlots slots;
      for (auto it = tensors.lower_bound({spec.id(), std::string()}); it != tensors.end() && it->first.first == spec.id();
           ++it)
        if (!it->first.second.empty()) slots.emplace_back(it->first.second, it->second);
      SetOptimizerSlots(*shard->optimizer, shard->value, slots);
    }
    shards.emplace(spec.id(), std::move(shard));
  }
  shards_ = std::move(shards);
  plan_ = plan;
  rule_ = rule;
  global_step_ = global_step;
  input_positions_ = input_positions;
  variables_ = std::move(variables);
  last_sequence_.clear();
  round_sums_.clear();
  round_optimizers_.clear();
  round_pushes_ = 0;
  round_gathered_ = false;
  last_round_norm_.reset();
  workers_.clear();
  for (int worker = 0; worker < rule_.num_workers(); ++worker) workers_[static_cast<uint32_t>(worker)].last_seen = Clock::now();
  initialized_ = true;
  initialized_now = true;
  ++generation_;
  progress_.notify_all();  // SYNC pushes waiting for a step that was replaced give up on it
  return "";
}

void VariableShards::step_shard(Shard& shard, const at::Tensor& gradient, const ps::OptimizerConfig* optimizer,
                                bool fuse) const {
  if (!shard.optimizer) return;
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (shard.value.storage().use_count() > 1) {
    // A pull still sends from the value's memory: the value (the optimizer's parameter, the
    // same tensor) moves to a copy, which the step updates.
    torch::NoGradGuard no_grad;
    shard.value.set_(shard.value.clone());
  }
  if (optimizer != nullptr) SetShardOptimizerOptions(*shard.optimizer, *optimizer);
  shard.value.mutable_grad() = gradient;
  StepOptimizer(*shard.optimizer, fuse);
  shard.value.mutable_grad() = at::Tensor();
}

void VariableShards::seen(uint32_t worker) {
  if (workers_.count(worker) == 0) {
    // A worker beyond the job's first ones joins the running job: it counts as having pushed
    // as often as the slowest live one, so that bounded staleness does not hold the others
    // back until it has caught up with the pushes made before it came.
    const int64_t slowest = std::max<int64_t>(0, slowest_pushes());
    workers_[worker].pushes = slowest;
    Log().info("ps {}: worker {} joins the running job ({} worker(s) before it); it counts from {} pushes", task_,
               worker, workers_.size() - 1, slowest);
  }
  Worker& state = workers_[worker];
  state.last_seen = Clock::now();
  state.left = false;
  state.excluded = false;
}

bool VariableShards::live(uint32_t worker, Worker& state) {
  if (state.left) return false;
  const auto silent = Clock::now() - state.last_seen;
  if (silent < std::chrono::milliseconds(rule_.liveness_ms())) return true;
  if (!state.excluded) {
    state.excluded = true;
    Log().warn("ps {}: worker {} sent nothing for {:.1f} s: steps no longer wait for it (it died, or it is stuck)",
               task_, worker, std::chrono::duration<double>(silent).count());
  }
  return false;
}

int64_t VariableShards::slowest_pushes() {
  int64_t slowest = -1;
  for (auto& [worker, state] : workers_)
    if (live(worker, state) && (slowest < 0 || state.pushes < slowest)) slowest = state.pushes;
  return slowest;
}

int VariableShards::required_pushes() {
  int live_workers = 0;
  for (auto& [worker, state] : workers_)
    if (live(worker, state)) ++live_workers;
  return std::max(1, std::min(rule_.replicas_to_aggregate(), live_workers));
}

void VariableShards::gather_round() {
  torch::NoGradGuard no_grad;
  const double count = static_cast<double>(round_pushes_);
  const bool by_norm = round_clipping_.global_norm() > 0;
  round_norm_squared_ = 0;
  for (auto& [id, sum] : round_sums_) {
    sum.div_(count);
    if (round_clipping_.by_value()) sum.clamp_(round_clipping_.value_min(), round_clipping_.value_max());
    if (by_norm) round_norm_squared_ += at::linalg_vector_norm(sum, 2, {}, false, at::kDouble).square().item<double>();
  }
  round_gathered_ = true;
}

void VariableShards::apply_round(double scale) {
  torch::NoGradGuard no_grad;
  for (auto& [id, mean] : round_sums_) {
    if (scale != 1.0) mean.mul_(scale);
    auto options = round_optimizers_.find(id);
    step_shard(*shards_.at(id), mean, options == round_optimizers_.end() ? nullptr : &options->second,
               rule_.fused_optimizer_step());
  }
  last_round_norm_.reset();
  if (round_clipping_.global_norm() > 0) {
    last_round_norm_.emplace();
    last_round_norm_->set_step(global_step_);
    last_round_norm_->set_norm_squared(round_norm_squared_);
  }
  round_sums_.clear();
  round_optimizers_.clear();
  round_pushes_ = 0;
  round_gathered_ = false;
  ++global_step_;
  progress_.notify_all();
}

std::optional<ps::RoundNorm> VariableShards::round_norm(int64_t step) const {
  std::optional<ps::RoundNorm> norm;
  if (last_round_norm_ && last_round_norm_->step() == step) return last_round_norm_;
  if (round_gathered_ && round_clipping_.global_norm() > 0) {
    norm.emplace();
    norm->set_step(global_step_);
    norm->set_norm_squared(round_norm_squared_);
    norm->set_awaiting(true);
  }
  return norm;
}

int64_t VariableShards::finish_round(int64_t step, double global_norm, std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!initialized_) {
    error = "this ps task holds no variables yet";
    return -1;
  }
  if (step == global_step_ && round_gathered_ && round_clipping_.global_norm() > 0)
    apply_round(ClipScale(round_clipping_.global_norm(), global_norm));
  return global_step_;
}

std::string VariableShards::apply(const ShardPush& push, const CallLimit& limit, PushOutcome& outcome) {
  std::shared_lock<std::shared_mutex> version(version_mutex_, std::defer_lock);
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  // SYNC applies a step under mutex_ only (a pull with state holds it while it copies), so
  // that waiting pushes hold no version lock.
  if (rule().mode() != ps::UpdateRule::SYNC) version.lock();
  lock.lock();
  if (!initialized_) return "this ps task holds no variables yet";
  seen(push.worker);
  auto last = last_sequence_.find(push.worker);
  if (last != last_sequence_.end() && push.sequence <= last->second) {
    outcome.global_step = global_step_;  // a retry of a push already applied
    return "";
  }
  for (const auto& [id, gradient] : push.gradients) {
    auto shard = shards_.find(id);
    if (shard == shards_.end()) return "a gradient for shard " + std::to_string(id) + ", which this task does not hold";
    if (gradient.sizes() != shard->second->value.sizes() || gradient.scalar_type() != shard->second->value.scalar_type())
      return "the gradient of '" + shard->second->spec.variable() + "' part " + std::to_string(shard->second->spec.part()) +
             " has shape " + ShapeText(gradient.sizes()) + ", its shard " + ShapeText(shard->second->value.sizes());
  }
  const std::string differ = optimizer_agreement_.check(push.worker, push.options_step, push.optimizers, [&](uint32_t id) {
    const ps::ShardSpec& spec = shards_.at(id)->spec;
    const std::string variable = "'" + spec.variable() + "'";
    return spec.parts() > 1 ? variable + " part " + std::to_string(spec.part()) : variable;
  });
  if (!differ.empty()) {
    outcome.optimizers_differ = true;
    return differ;
  }
  last_sequence_[push.worker] = push.sequence;
  input_positions_[push.worker] = push.input_position;
  ++workers_[push.worker].pushes;

  if (rule_.mode() != ps::UpdateRule::SYNC) {
    const bool fuse = rule_.fused_optimizer_step();
    lock.unlock();
    for (const auto& [id, gradient] : push.gradients) {
      auto options = push.optimizers.find(id);
      step_shard(*shards_.at(id), gradient, options == push.optimizers.end() ? nullptr : &options->second, fuse);
    }
    lock.lock();
    outcome.global_step = ++global_step_;
    progress_.notify_all();
    return "";
  }

  // SYNC: a push for a step already applied is dropped (a backup worker's, or a late one's),
  // as is one for a step this task has not reached (values from before a restore), or one
  // for a step whose pushes are gathered already. Its reply tells what the task knows of the
  // norm of its step (or of the one awaiting it), so that its worker can finish that step.
  if (push.step != global_step_ || round_gathered_) {
    ++dropped_pushes_;
    outcome.global_step = global_step_;
    outcome.dropped = true;
    outcome.round_norm = round_norm(push.step);
    return "";
  }
  torch::NoGradGuard no_grad;
  for (const auto& [id, gradient] : push.gradients) {
    auto [sum, first] = round_sums_.try_emplace(id, gradient);
    if (!first) sum->second.add_(gradient);
  }
  for (const auto& [id, options] : push.optimizers) round_optimizers_[id] = options;
  round_clipping_ = push.clipping;
  round_holds_every_shard_ = push.holds_every_shard;
  ++round_pushes_;
  const int64_t step = global_step_;
  const uint64_t generation = generation_;
  while (global_step_ == step) {
    if (generation != generation_) {  // the chief replaced what this task holds: the step is gone
      outcome.global_step = global_step_;
      outcome.dropped = true;
      return "";
    }
    if (job_finished_) {  // nobody will push for this step any more
      outcome.global_step = global_step_;
      outcome.job_finished = true;
      return "";
    }
    if (round_gathered_) {  // its global norm comes in finish_round(), from a worker
      outcome.global_step = global_step_;
      outcome.round_norm = round_norm(step);
      return "";
    }
    if (round_pushes_ >= required_pushes()) {
      gather_round();
      const double clip_norm = round_clipping_.global_norm();
      if (clip_norm > 0 && !round_holds_every_shard_) continue;  // the other tasks' parts are needed
      apply_round(ClipScale(clip_norm, std::sqrt(round_norm_squared_)));
      break;
    }
    if (Clock::now() >= limit.deadline || limit.cancelled())
      return "step " + std::to_string(step) + " did not gather its " + std::to_string(required_pushes()) +
             " pushes in time (" + std::to_string(round_pushes_) + " arrived)";
    progress_.wait_until(lock, std::min(limit.deadline, Clock::now() + kLivenessCheck));
    seen(push.worker);  // waiting here, it is alive
  }
  outcome.global_step = global_step_;
  if (last_round_norm_ && last_round_norm_->step() == step) outcome.round_norm = last_round_norm_;
  return "";
}

PullHeader VariableShards::pull(uint32_t worker, bool with_state, const CallLimit& limit, const TensorVisitor& visit) {
  if (rule().mode() == ps::UpdateRule::BOUNDED) {
    std::unique_lock<std::mutex> lock(mutex_);
    seen(worker);
    const int64_t own = workers_[worker].pushes;
    int64_t slowest = slowest_pushes();
    while (slowest >= 0 && own - slowest > rule_.staleness() && !job_finished_ && Clock::now() < limit.deadline &&
           !limit.cancelled()) {
      progress_.wait_until(lock, std::min(limit.deadline, Clock::now() + kLivenessCheck));
      seen(worker);  // waiting here, it is alive
      slowest = slowest_pushes();
    }
    if (slowest >= 0) max_staleness_ = std::max(max_staleness_, own - slowest);
  }
  std::shared_lock<std::shared_mutex> shared(version_mutex_, std::defer_lock);
  std::unique_lock<std::shared_mutex> consistent(version_mutex_, std::defer_lock);
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  if (with_state) {
    consistent.lock();
    lock.lock();  // held while copying: no SYNC step applies either
  } else {
    shared.lock();
    lock.lock();
  }
  seen(worker);
  PullHeader header;
  header.global_step = global_step_;
  header.input_positions = input_positions_;
  if (!with_state) lock.unlock();
  for (const auto& [id, shard] : shards_) {
    std::lock_guard<std::mutex> shard_lock(shard->mutex);
    visit(id, "", shard->value);
    if (with_state && shard->optimizer)
      for (const auto& [slot, tensor] : GetOptimizerSlots(*shard->optimizer, shard->value)) visit(id, slot, tensor);
  }
  return header;
}

void VariableShards::leave(uint32_t worker) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    workers_[worker].left = true;
  }
  progress_.notify_all();
}

void VariableShards::finish_job() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_finished_ = true;
  }
  progress_.notify_all();
}

}  // namespace est::distribute
