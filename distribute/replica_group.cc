#include "distribute/replica_group.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"

namespace est::distribute {

// The local replicas' threads and whose turn it is. Guarded by `mutex`.
struct ReplicaGroup::Turns {
  enum class State {
    kRunnable,  // running, or ready to when its turn comes
    kWaiting,   // inside a collective that not every local replica has called yet
    kDone,      // its call of run()'s fn returned or threw
  };

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::thread> threads;
  bool stopping = false;

  // The call of run() in progress.
  uint64_t generation = 0;  // incremented by each run()
  const std::function<void(int)>* fn = nullptr;
  std::unique_ptr<at::ThreadLocalState> caller_state;
  std::vector<State> states;
  int turn = -1;  // the replica whose code runs; -1 when none does
  int done = 0;
  std::exception_ptr first_error;
  int collectives = 0;  // collectives completed in this run()

  // The collective being gathered: `arrived` local replicas have brought their values.
  const char* what = nullptr;
  int arrived = 0;
  std::vector<at::Tensor> values;
  // What each replica takes away from the last collective it was in.
  std::vector<at::Tensor> results;
  std::vector<std::exception_ptr> errors;

  explicit Turns(int replicas)
      : states(static_cast<size_t>(replicas), State::kDone),
        values(static_cast<size_t>(replicas)),
        results(static_cast<size_t>(replicas)),
        errors(static_cast<size_t>(replicas)) {}

  int size() const { return static_cast<int>(states.size()); }

  int first_in(State state) const {
    for (int r = 0; r < size(); ++r)
      if (states[static_cast<size_t>(r)] == state) return r;
    return -1;
  }

  // Ends the collective being gathered: every waiting replica becomes runnable and takes
  // its result, or `error`.
  void release(std::exception_ptr error) {
    for (int r = 0; r < size(); ++r) {
      if (states[static_cast<size_t>(r)] != State::kWaiting) continue;
      states[static_cast<size_t>(r)] = State::kRunnable;
      errors[static_cast<size_t>(r)] = error;
    }
    arrived = 0;
    what = nullptr;
    for (at::Tensor& value : values) value.reset();
    ++collectives;
  }

  // Gives the turn to the first runnable replica. When none is but some wait in a
  // collective, the replicas that are done will never call it: it fails.
  void pass_turn() {
    turn = first_in(State::kRunnable);
    if (turn < 0 && arrived > 0) {
      const int waiting = first_in(State::kWaiting);
      const int finished = first_in(State::kDone);
      release(std::make_exception_ptr(ModelError(::est::Concat(
          "model_fn's ", what, " (collective ", collectives + 1, " of this step) was called by replica ", waiting,
          " but replica ", finished, " finished its model code without calling it: every replica must call the "
          "replica context's collectives, in the same order"))));
      turn = first_in(State::kRunnable);
    }
    changed.notify_all();
  }

  // Waits, with `lock` held, until it is replica `r`'s turn.
  void wait_for_turn(std::unique_lock<std::mutex>& lock, int r) {
    changed.wait(lock, [&] { return turn == r && states[static_cast<size_t>(r)] == State::kRunnable; });
  }

  void serve(int r) {
    at::init_num_threads();  // the intra-op thread count of the caller, as LibTorch's own threads do
    uint64_t served = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return stopping || generation != served; });
      if (stopping) return;
      served = generation;
      wait_for_turn(lock, r);
      lock.unlock();
      std::exception_ptr error;
      {
        at::ThreadLocalStateGuard state(*caller_state);
        try {
          (*fn)(r);
        } catch (...) {
          error = std::current_exception();
        }
      }
      lock.lock();
      if (error && !first_error) first_error = error;
      states[static_cast<size_t>(r)] = State::kDone;
      ++done;
      pass_turn();
    }
  }
};

ReplicaGroup::ReplicaGroup(int local_replicas, int workers, int worker_index, ConnectWorkers connect)
    : local_replicas_(local_replicas), workers_(workers), worker_index_(worker_index), connect_(std::move(connect)) {
  EST_ASSERT(local_replicas >= 1 && workers >= 1 && worker_index >= 0 && worker_index < workers,
             "ReplicaGroup of ", local_replicas, " local replicas, worker ", worker_index, " of ", workers);
  EST_ASSERT(workers == 1 || connect_, "ReplicaGroup over ", workers, " workers needs a way to connect them");
  if (local_replicas == 1) return;
  turns_ = std::make_unique<Turns>(local_replicas);
  for (int r = 0; r < local_replicas; ++r) turns_->threads.emplace_back([this, r] { turns_->serve(r); });
}

ReplicaGroup::~ReplicaGroup() {
  if (!turns_) return;
  {
    std::lock_guard<std::mutex> lock(turns_->mutex);
    turns_->stopping = true;
  }
  turns_->changed.notify_all();
  for (std::thread& thread : turns_->threads) thread.join();
}

void ReplicaGroup::run(const std::function<void(int replica)>& fn) {
  if (!turns_) {
    fn(0);
    return;
  }
  Turns& turns = *turns_;
  std::unique_lock<std::mutex> lock(turns.mutex);
  turns.fn = &fn;
  turns.caller_state = std::make_unique<at::ThreadLocalState>();
  std::fill(turns.states.begin(), turns.states.end(), Turns::State::kRunnable);
  turns.done = 0;
  turns.first_error = nullptr;
  turns.collectives = 0;
  turns.turn = 0;
  ++turns.generation;
  turns.changed.notify_all();
  turns.changed.wait(lock, [&] { return turns.done == turns.size(); });
  turns.fn = nullptr;
  if (turns.first_error) std::rethrow_exception(turns.first_error);
}

at::Tensor ReplicaGroup::exchange(int local, const char* what, const at::Tensor& value, const Combine& combine) {
  EST_CHECK(value.defined(), ModelError, "model_fn's ", what, " was given an undefined tensor");
  if (!turns_) return combine({value});
  Turns& turns = *turns_;
  std::unique_lock<std::mutex> lock(turns.mutex);
  EST_CHECK(turns.fn != nullptr && turns.turn == local, ModelError, "model_fn's ", what,
            " was called outside the replica's own model code (from another thread?)");
  const auto slot = static_cast<size_t>(local);
  std::exception_ptr mismatch;
  if (turns.arrived == 0) {
    turns.what = what;
  } else {
    const int first = turns.first_in(Turns::State::kWaiting);
    const at::Tensor& theirs = turns.values[static_cast<size_t>(first)];
    if (std::string(turns.what) != what)
      mismatch = std::make_exception_ptr(ModelError(::est::Concat(
          "replica ", local, " called model_fn's ", what, " where replica ", first, " called ", turns.what,
          ": every replica must call the replica context's collectives, in the same order")));
    else if (theirs.sizes() != value.sizes() || theirs.scalar_type() != value.scalar_type())
      mismatch = std::make_exception_ptr(ModelError(::est::Concat(
          "model_fn's ", what, ": replica ", local, " gave a tensor of shape ", value.sizes(), " and dtype ",
          value.scalar_type(), " where replica ", first, " gave shape ", theirs.sizes(), " and dtype ",
          theirs.scalar_type(), ": every replica must give the same shape and dtype")));
  }
  turns.values[slot] = value;
  turns.states[slot] = Turns::State::kWaiting;
  if (mismatch) {
    turns.release(mismatch);
    turns.pass_turn();
  } else if (++turns.arrived == turns.size()) {
    // The last to arrive combines, while every other local replica waits.
    std::exception_ptr error;
    try {
      const at::Tensor combined = combine(turns.values);
      for (int r = 0; r < turns.size(); ++r) {
        const at::Device device = turns.values[static_cast<size_t>(r)].device();
        turns.results[static_cast<size_t>(r)] = combined.device() == device ? combined.clone() : combined.to(device);
      }
    } catch (...) {
      error = std::current_exception();
    }
    turns.release(error);
    turns.pass_turn();
  } else {
    turns.pass_turn();
  }
  turns.wait_for_turn(lock, local);
  if (std::exception_ptr error = std::exchange(turns.errors[slot], nullptr)) std::rethrow_exception(error);
  return std::move(turns.results[slot]);
}

void ReplicaGroup::across_workers(const char* what, const std::function<void(Collective&)>& call) {
  if (workers_ == 1) return;
  try {
    if (workers_collective_ == nullptr) workers_collective_ = &connect_();
    call(*workers_collective_);
  } catch (const TimeoutError& error) {
    EST_THROW(TimeoutError, "model_fn's ", what, " across workers: ", error.what(),
              ". Every replica of every worker must call the replica context's collectives, in the same order");
  }
}

at::Tensor ReplicaGroup::all_reduce(int local, const at::Tensor& value, ReduceOp op) {
  const int replicas = size();
  const auto mean = [replicas](at::Tensor& sum) {
    if (at::isFloatingType(sum.scalar_type())) {
      sum.div_(replicas);
    } else {
      sum.div_(replicas, "trunc");
    }
  };
  if (alone_) {
    at::Tensor result = op == ReduceOp::kSum ? value.mul(replicas) : value.clone();
    return result;
  }
  return exchange(local, "all_reduce", value, [&](const std::vector<at::Tensor>& values) {
    at::Tensor sum = values.front().contiguous().clone();
    for (size_t r = 1; r < values.size(); ++r) sum.add_(values[r].to(sum.device()));
    across_workers("all_reduce", [&](Collective& collective) { collective.allreduce(sum, ReduceOp::kSum); });
    if (op == ReduceOp::kMean) mean(sum);
    return sum;
  });
}

at::Tensor ReplicaGroup::all_gather(int local, const at::Tensor& value, int64_t axis) {
  const int64_t dims = value.dim();
  EST_CHECK(dims >= 1, ModelError, "model_fn's all_gather needs a tensor of at least one dimension, got a scalar");
  EST_CHECK(axis >= -dims && axis < dims, ModelError, "model_fn's all_gather: axis ", axis,
            " is out of range for a tensor of ", dims, " dimensions; expected [", -dims, ", ", dims, ")");
  const int64_t along = axis < 0 ? axis + dims : axis;
  if (alone_) return at::cat(std::vector<at::Tensor>(static_cast<size_t>(size()), value), along);
  return exchange(local, "all_gather", value, [&](const std::vector<at::Tensor>& values) {
    std::vector<at::Tensor> parts;
    for (const at::Tensor& part : values) parts.push_back(part.to(values.front().device()));
    at::Tensor gathered = at::cat(parts, along);
    across_workers("all_gather", [&](Collective& collective) {
      gathered = at::cat(collective.allgather(gathered.contiguous()).unbind(0), along);
    });
    return gathered;
  });
}

ReplicaGroup::Alone::Alone(ReplicaGroup& group) : group_(group) { group_.alone_ = true; }

ReplicaGroup::Alone::~Alone() { group_.alone_ = false; }

}  // namespace est::distribute
