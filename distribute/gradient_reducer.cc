#include "distribute/gradient_reducer.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "distribute/collective/collective.h"

namespace est::distribute {

GradientReducer::GradientReducer(Collective& collective, std::vector<at::Tensor> parameters, int divisor,
                                 GradientReducerOptions options, int64_t extras_numel)
    : collective_(collective),
      parameters_(std::move(parameters)),
      divisor_(divisor),
      overlaps_backward_(OverlapsBackward(options.overlap(), collective)),
      extras_numel_(extras_numel) {
  EST_CHECK(divisor > 0, ConfigError, "GradientReducer: divisor must be positive, got ", divisor);
  EST_CHECK(options.first_bucket_bytes() > 0 && options.bucket_cap_bytes() > 0, ConfigError,
            "GradientReducer: bucket sizes must be positive, got first ", options.first_bucket_bytes(), " and cap ",
            options.bucket_cap_bytes());
  EST_CHECK(extras_numel >= 0, ConfigError, "GradientReducer: extras_numel must not be negative, got ", extras_numel);
  // Assign buckets in reverse registration order; a bucket closes once it reaches its cap.
  slots_.resize(parameters_.size());
  std::vector<std::vector<size_t>> members;
  std::vector<at::TensorOptions> kinds;  // each bucket's dtype and device
  std::vector<int64_t> bytes;
  for (size_t k = parameters_.size(); k-- > 0;) {
    const at::Tensor& parameter = parameters_[k];
    const int64_t size = parameter.numel() * static_cast<int64_t>(parameter.element_size());
    const int64_t cap = members.size() <= 1 ? options.first_bucket_bytes() : options.bucket_cap_bytes();
    const bool open = !members.empty() && kinds.back().dtype() == parameter.dtype() &&
                      kinds.back().device() == parameter.device() && bytes.back() < cap;
    if (!open) {
      members.emplace_back();
      kinds.push_back(at::TensorOptions().dtype(parameter.scalar_type()).device(parameter.device()));
      bytes.push_back(0);
    }
    members.back().push_back(k);
    bytes.back() += size;
  }
  // The extras ride in the last bucket (issued last, after prepare() wrote them) when it
  // holds float32 that goes uncompressed, else in a bucket of their own on the last
  // bucket's device.
  const bool compressing = options.compression() != GradientCompression::kNone;
  if (extras_numel_ > 0 && (members.empty() || kinds.back().dtype() != at::kFloat || compressing)) {
    const c10::Device device = members.empty() ? c10::Device(at::kCPU) : kinds.back().device();
    members.emplace_back();
    kinds.push_back(at::TensorOptions().dtype(at::kFloat).device(device));
  }
  for (size_t b = 0; b < members.size(); ++b) {
    Bucket bucket;
    int64_t offset = 0;
    for (size_t k : members[b]) {
      slots_[k] = Slot{b, offset, parameters_[k].numel()};
      offset += parameters_[k].numel();
    }
    if (extras_numel_ > 0 && b + 1 == members.size()) {
      extras_bucket_ = b;
      extras_offset_ = offset;
      offset += extras_numel_;
    }
    bucket.buffer = at::zeros({offset}, kinds[b]);
    bucket.parameters = members[b];
    if (compressing && kinds[b].dtype() == at::kFloat && !bucket.parameters.empty()) {
      std::vector<std::vector<int64_t>> shapes;
      for (size_t k : bucket.parameters) shapes.push_back(parameters_[k].sizes().vec());
      bucket.compressed = MakeBucketCompression(options.compression(), options.power_sgd(), shapes, kinds[b]);
    }
    buckets_.push_back(std::move(bucket));
  }
  filled_.assign(parameters_.size(), false);
  for (size_t k = 0; k < parameters_.size(); ++k) {
    EST_CHECK(parameters_[k].requires_grad(), ConfigError, "GradientReducer: parameter ", k,
              " does not require grad");
    hooks_.push_back(
        parameters_[k].register_hook([this, k](const at::Tensor& gradient) { on_gradient(k, gradient); }));
  }
  thread_ = std::thread([this] { communicate(); });
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
  for (size_t k = 0; k < parameters_.size(); ++k) parameters_[k].remove_hook(hooks_[k]);
}

std::vector<int64_t> GradientReducer::bucket_bytes() const {
  std::vector<int64_t> sizes;
  for (const auto& bucket : buckets_)
    sizes.push_back(bucket.buffer.numel() * static_cast<int64_t>(bucket.buffer.element_size()));
  return sizes;
}

at::Tensor GradientReducer::extras() const {
  EST_ASSERT(extras_numel_ > 0, "GradientReducer::extras: the reducer was made without extras");
  return buckets_[extras_bucket_].buffer.narrow(0, extras_offset_, extras_numel_);
}

void GradientReducer::prepare(const at::Tensor& extras) {
  std::lock_guard<std::mutex> lock(mutex_);
  EST_ASSERT(!armed_, "GradientReducer::prepare called twice without finish");
  EST_CHECK(!failed_, CommunicationError,
            "the gradient all-reduce failed earlier; the collective cannot be used again");
  EST_ASSERT(extras.defined() == (extras_numel_ > 0) && (!extras.defined() || extras.numel() == extras_numel_),
             "GradientReducer::prepare: expected ", extras_numel_, " extras");
  if (extras_numel_ > 0) this->extras().copy_(extras.reshape({-1}));
  for (auto& bucket : buckets_) bucket.pending = bucket.parameters.size();
  std::fill(filled_.begin(), filled_.end(), false);
  next_to_launch_ = 0;
  completed_ = 0;
  ++round_;
  armed_ = true;
  changed_.notify_all();
}

void GradientReducer::on_gradient(size_t parameter, const at::Tensor& gradient) {
  const Slot& slot = slots_[parameter];
  Bucket& bucket = buckets_[slot.bucket];
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!armed_ || filled_[parameter]) return;
  }
  // Gradient accumulation (no sync on earlier micro-batches): what reaches .grad is the
  // earlier sum plus this gradient, so that sum is what gets averaged. The bucket holds each
  // gradient in its logical (row-major) order, whatever the gradient's layout (channels-last
  // included): one pass, reading it where it lies.
  at::Tensor destination = bucket.buffer.narrow(0, slot.offset, slot.numel).view(gradient.sizes());
  const at::Tensor& accumulated = parameters_[parameter].grad();
  if (accumulated.defined()) {
    at::add_out(destination, accumulated, gradient);
  } else {
    destination.copy_(gradient);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  filled_[parameter] = true;
  if (--bucket.pending == 0 && overlaps_backward_) launch_ready_buckets_locked();
}

void GradientReducer::launch_ready_buckets_locked() {
  const size_t before = next_to_launch_;
  while (next_to_launch_ < buckets_.size() && buckets_[next_to_launch_].pending == 0) ++next_to_launch_;
  if (next_to_launch_ != before) changed_.notify_all();
}

void GradientReducer::communicate() {
  uint64_t round = 0;
  size_t next = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || round_ != round || next < next_to_launch_; });
    if (stopping_) return;
    if (round_ != round) {
      round = round_;
      next = 0;
      continue;
    }
    const size_t index = next;
    lock.unlock();
    std::exception_ptr error;
    try {
      Bucket& bucket = buckets_[index];
      if (bucket.compressed) {
        bucket.compressed->allreduce(collective_, bucket.buffer, divisor_);
      } else {
        collective_.allreduce(bucket.buffer, ReduceOp::kSum);
      }
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error) {
      error_ = error;
      failed_ = true;
      completed_ = buckets_.size();
      changed_.notify_all();
      return;
    }
    next = index + 1;
    completed_ = next;
    changed_.notify_all();
  }
}

void GradientReducer::write_averages(const Bucket& bucket) {
  // The sums become averages as they are written into .grad, in .grad's own layout: one pass
  // over the gradients. Compressed buckets hold averages already.
  const int divisor = bucket.compressed ? 1 : divisor_;
  for (size_t k : bucket.parameters) {
    const Slot& slot = slots_[k];
    const at::Tensor sum = bucket.buffer.narrow(0, slot.offset, slot.numel).view(parameters_[k].sizes());
    at::Tensor& grad = parameters_[k].mutable_grad();
    if (grad.defined() && grad.sizes() == sum.sizes() && grad.is_non_overlapping_and_dense() &&
        grad.scalar_type() == sum.scalar_type()) {
      at::div_out(grad, sum, divisor);
    } else {
      grad = sum.div(divisor);
    }
  }
}

void GradientReducer::finish(const std::function<void(const std::vector<size_t>& parameters)>& bucket_done) {
  std::unique_lock<std::mutex> lock(mutex_);
  EST_ASSERT(armed_, "GradientReducer::finish without prepare");
  // Parameters that got no gradient in this backward count as zero.
  for (size_t k = 0; k < parameters_.size(); ++k) {
    if (filled_[k]) continue;
    const Slot& slot = slots_[k];
    Bucket& bucket = buckets_[slot.bucket];
    const at::Tensor& accumulated = parameters_[k].grad();
    at::Tensor destination = bucket.buffer.narrow(0, slot.offset, slot.numel);
    if (accumulated.defined()) {
      destination.copy_(accumulated.reshape({-1}));
    } else {
      destination.zero_();
    }
    filled_[k] = true;
    --bucket.pending;
  }
  launch_ready_buckets_locked();
  // Each bucket's averages are written into .grad (and handed to bucket_done) as soon as its
  // all-reduce completes, while later buckets are still on the wire: only the last bucket's
  // share is left once the communication ends. An error of bucket_done's is rethrown once
  // every bucket has come back, so that the reducer is ready for the next prepare().
  std::exception_ptr caller_error;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    changed_.wait(lock, [&] { return completed_ > b; });
    if (error_) break;
    if (caller_error) continue;
    lock.unlock();
    try {
      write_averages(buckets_[b]);
      if (bucket_done && !buckets_[b].parameters.empty()) bucket_done(buckets_[b].parameters);
    } catch (...) {
      caller_error = std::current_exception();
    }
    lock.lock();
  }
  armed_ = false;
  changed_.notify_all();
  if (error_) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
  lock.unlock();
  if (caller_error) std::rethrow_exception(caller_error);
  if (extras_numel_ > 0) extras().div_(divisor_);
}

}  // namespace est::distribute
