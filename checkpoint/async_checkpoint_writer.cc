#include "checkpoint/async_checkpoint_writer.h"

#include <ATen/ATen.h>
#include <sys/resource.h>
#include <unistd.h>

#include "checkpoint/checkpoint_files.h"
#include "common/error.h"
#include "common/logging.h"

namespace est::checkpoint {
namespace {

/// Nice value of the writer thread: it yields the CPU to training where the two compete
/// (a CFS weight of about a tenth), yet still progresses on a busy machine.
constexpr int kWriterNiceness = 10;

/// True when `staged` (a buffer of the previous snapshot) can hold a copy of `tensor`.
bool Fits(const at::Tensor& staged, const at::Tensor& tensor) {
  return staged.defined() && staged.scalar_type() == tensor.scalar_type() &&
         staged.sizes() == tensor.sizes();
}

/// A copy of `tensor` in contiguous CPU memory that later updates of `tensor` do not
/// reach: into `staged` when it fits (memory already mapped copies several times faster
/// than new memory is allocated and faulted in), else into new memory. Undefined and
/// non-strided tensors are passed on as they are, for WriteCheckpoint to reject with a
/// message naming them.
at::Tensor Snapshot(const at::Tensor& tensor, at::Tensor staged) {
  if (!tensor.defined() || tensor.layout() != at::kStrided) return tensor;
  if (Fits(staged, tensor)) return staged.copy_(tensor.detach());
  return tensor.detach().to(tensor.options().device(at::kCPU), /*non_blocking=*/false,
                            /*copy=*/true, at::MemoryFormat::Contiguous);
}

std::string Describe(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "an exception of unknown type";
  }
}

}  // namespace

AsyncCheckpointWriter::AsyncCheckpointWriter(checkpoint::CheckpointManager manager)
    : manager_(std::move(manager)), thread_([this] { write_jobs(); }) {}

AsyncCheckpointWriter::~AsyncCheckpointWriter() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !job_.has_value(); });
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
  if (failure_) {
    try {
      Log().error("A checkpoint save failed and was not reported before its writer closed: {}", Describe(failure_));
    } catch (...) {
      // Logging is best effort here: a destructor must not throw.
    }
  }
}

std::string AsyncCheckpointWriter::save(int64_t step, const Tensors& tensors,
                                        std::map<std::string, std::string> blobs) {
  wait();
  Job job{step, {}, std::move(blobs)};
  job.tensors.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    at::Tensor staged = i < staging_.size() ? std::move(staging_[i]) : at::Tensor();
    job.tensors.emplace_back(tensors[i].first, Snapshot(tensors[i].second, std::move(staged)));
  }
  staging_.clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
  }
  changed_.notify_all();
  return checkpoint::CheckpointPrefix(manager_.directory(), step);
}

void AsyncCheckpointWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !job_.has_value(); });
  rethrow_failure(lock);
}

void AsyncCheckpointWriter::check() {
  if (!failed_.load(std::memory_order_acquire)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  rethrow_failure(lock);
}

bool AsyncCheckpointWriter::saving() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return job_.has_value();
}

void AsyncCheckpointWriter::rethrow_failure(std::unique_lock<std::mutex>& lock) {
  if (!failure_) return;
  std::exception_ptr failure = std::exchange(failure_, nullptr);
  failed_.store(false, std::memory_order_release);
  lock.unlock();
  std::rethrow_exception(failure);
}

void AsyncCheckpointWriter::write_jobs() {
  // Best effort: when the priority cannot be lowered, the writer runs at the caller's.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kWriterNiceness);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return job_.has_value() || stopping_; });
    if (!job_) return;
    // save() does not touch job_ until it is reset, so it is read here without the lock.
    Job& job = *job_;
    lock.unlock();
    std::exception_ptr failure;
    try {
      manager_.save(job.step, job.tensors, job.blobs);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    // Kept for the next snapshot (the tensors passed on uncopied are not the writer's).
    for (auto& [name, tensor] : job.tensors)
      staging_.push_back(tensor.defined() && tensor.layout() == at::kStrided ? std::move(tensor) : at::Tensor());
    job_.reset();
    if (failure) {
      failure_ = failure;
      failed_.store(true, std::memory_order_release);
    }
    changed_.notify_all();
  }
}

}  // namespace est::checkpoint
