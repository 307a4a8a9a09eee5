#pragma once
/// GradientReducer: averages gradients across workers while backward still runs, in
/// fixed-order buckets all-reduced on a communication thread (the DDP reducer's idea).

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distribute/backward_overlap.h"
#include "distribute/gradient_compression.h"

namespace est::distribute {

class Collective;

/// Bucket sizes of the GradientReducer, and when its buckets go.
struct GradientReducerOptions {
  /// The first bucket (the last layers' gradients, ready first) closes once it holds
  /// this many bytes, so that communication starts early in backward.
  TORCH_ARG(int64_t, first_bucket_bytes) = int64_t{1} << 20;
  /// Every other bucket closes once it holds this many bytes (as DDP's bucket_cap_mb).
  TORCH_ARG(int64_t, bucket_cap_bytes) = int64_t{25} << 20;
  /// The form of float32 buckets on the wire (other dtypes and the extras go as they are).
  TORCH_ARG(GradientCompression, compression) = GradientCompression::kNone;
  /// PowerSGD's rank and warm-up, when `compression` is kPowerSgd.
  TORCH_ARG(PowerSgdOptions, power_sgd) = {};
  /// Whether full buckets are all-reduced while backward runs or after it (OverlapsBackward).
  TORCH_ARG(BackwardOverlap, overlap) = BackwardOverlap::kAuto;
};

/// Averages the gradients of `parameters` over all replicas in sync. Parameters go into
/// buckets in reverse registration order (gradients of later layers are ready first); a
/// bucket takes parameters until it reaches its cap, and holds one dtype on one device (its
/// buffer lives there, so that a GPU collective reduces it in place). A gradient hook
/// copies each gradient into its bucket as backward produces it; a full bucket is
/// all-reduced on the communication thread, and buckets are issued strictly in bucket
/// order, so every rank issues the same sequence; where OverlapsBackward says no, every
/// bucket waits for finish() instead. finish() (after backward) issues what is left
/// (parameters that got no gradient count as zero) and writes each bucket's averages into
/// `.grad` as soon as its all-reduce completes, while later buckets are still on the wire.
/// Bucket buffers are allocated once.
///
/// With a compression, float32 buckets are all-reduced compressed, with error feedback
/// (BucketCompression): as 16-bit values (CompressedAllreduce), whose averages differ from
/// the exact ones by the rounding of the 16-bit type, or as PowerSGD's low-rank factors
/// (PowerSgdAllreduce).
///
/// `extras_numel` float32 values per step (the loss, an input-ended flag) can ride along
/// in the last bucket: prepare() takes them, extras() gives their average after finish(),
/// so a training step synchronizes once. They are never compressed: with a compression
/// they go in a bucket of their own.
class GradientReducer {
 public:
  /// The sum over replicas is divided by `divisor`: the number of replicas in sync, times
  /// the micro-batches accumulated per step.
  GradientReducer(Collective& collective, std::vector<at::Tensor> parameters, int divisor,
                  GradientReducerOptions options = {}, int64_t extras_numel = 0);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Call before each backward that must be synchronized: arms the hooks. `extras` is a
  /// float32 tensor of extras_numel values (undefined when extras_numel is 0). Throws
  /// CommunicationError after an earlier communication failure.
  void prepare(const at::Tensor& extras = {});
  /// Call after backward: issues the remaining buckets, waits for every all-reduce, and
  /// sets every parameter's gradient to the average. Rethrows a communication error.
  /// `bucket_done`, where set, is called on this thread as each bucket's averages are in
  /// `.grad`, with the indices (into `parameters`) of that bucket's parameters, while later
  /// buckets may still be on the wire.
  void finish(const std::function<void(const std::vector<size_t>& parameters)>& bucket_done = {});
  /// The average of the extras of the last finish(): a float32 view of extras_numel values.
  at::Tensor extras() const;
  /// Number of buckets (for logs and tests).
  size_t num_buckets() const { return buckets_.size(); }
  /// Byte size of each bucket, in bucket order.
  std::vector<int64_t> bucket_bytes() const;
  /// Whether full buckets are all-reduced while backward runs (else after it).
  bool overlaps_backward() const { return overlaps_backward_; }

 private:
  struct Slot {
    size_t bucket;
    int64_t offset;
    int64_t numel;
  };
  struct Bucket {
    at::Tensor buffer;
    std::vector<size_t> parameters;
    size_t pending = 0;
    std::unique_ptr<BucketCompression> compressed;  ///< set when the bucket goes compressed
  };

  void on_gradient(size_t parameter, const at::Tensor& gradient);
  void launch_ready_buckets_locked();
  void communicate();
  // Writes `bucket`'s averages into its parameters' .grad (after its all-reduce).
  void write_averages(const Bucket& bucket);

  Collective& collective_;
  std::vector<at::Tensor> parameters_;
  int divisor_;
  bool overlaps_backward_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::vector<bool> filled_;
  size_t extras_bucket_ = 0;
  int64_t extras_offset_ = 0;
  int64_t extras_numel_ = 0;

  std::vector<unsigned> hooks_;  ///< hook handles, removed on destruction

  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false;
  uint64_t round_ = 0;         ///< incremented by prepare(): the thread restarts at bucket 0
  size_t next_to_launch_ = 0;  ///< buckets [0, next_to_launch_) are handed to the thread
  size_t completed_ = 0;       ///< buckets [0, completed_) are reduced in this round
  std::exception_ptr error_;
  bool failed_ = false;  ///< a collective failed: the reducer (and its collective) is unusable
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace est::distribute
