#pragma once
/// GradientCompression: what float32 gradients become on the wire of the all-reduce
/// (DDP's fp16/bf16 compression hooks and its PowerSGD hook, with error feedback).

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace est::distribute {

class Collective;

/// The form in which float32 gradient buckets are all-reduced.
enum class GradientCompression {
  kNone,      ///< float32, as computed (the default)
  kFloat16,   ///< IEEE float16: half the bytes; range ±65504, 11 significant bits
  kBFloat16,  ///< bfloat16: half the bytes; float32's range, 8 significant bits
  kPowerSgd,  ///< PowerSGD: each weight matrix as two thin matrices of PowerSgdOptions::rank columns
};

/// "none", "fp16", "bf16" or "powersgd".
const char* GradientCompressionName(GradientCompression compression);
/// The compression named `name` ("none", "fp16", "bf16" or "powersgd"); ConfigError naming
/// `what` (the flag or option) and the names accepted otherwise.
GradientCompression ParseGradientCompression(const std::string& name, const std::string& what);

/// Options of PowerSGD (GradientCompression::kPowerSgd), after DDP's PowerSGDState.
struct PowerSgdOptions {
  /// Throws ConfigError naming the field that is out of range.
  void validate() const;

  /// Columns of each matrix's two factors (DDP's matrix_approximation_rank), in [1, 64]:
  /// more columns, more bytes and a closer approximation.
  TORCH_ARG(int64_t, rank) = 1;
  /// Steps all-reduced uncompressed before compression starts (DDP's start_powerSGD_iter,
  /// which suggests about a tenth of training where accuracy suffers), counted from the
  /// reducer's first step; >= 0.
  TORCH_ARG(int64_t, warmup_steps) = 0;
};

/// The all-reduce of one compressed float32 bucket of gradients: afterwards the bucket holds
/// the average over the ranks (each rank's values divided by `divisor`, summed), as closely
/// as the compression gives it. Each object keeps its bucket's state between steps.
class BucketCompression {
 public:
  virtual ~BucketCompression() = default;
  /// Replaces `bucket` (float32, the size the object was made for) by the average.
  virtual void allreduce(Collective& collective, at::Tensor& bucket, int divisor) = 0;
};

/// The BucketCompression of `compression` (not kNone) for a float32 bucket on `options`'
/// device that holds the gradients of `shapes`, one after another.
std::unique_ptr<BucketCompression> MakeBucketCompression(GradientCompression compression,
                                                         const PowerSgdOptions& power_sgd,
                                                         const std::vector<std::vector<int64_t>>& shapes,
                                                         const at::TensorOptions& options);

/// One float32 bucket's all-reduce in a 16-bit type, with error feedback: each rank
/// scales its bucket by 1/divisor, adds what rounding dropped from its previous step
/// (the residual), rounds the result to the 16-bit type, keeps the new rounding error as
/// the next residual, and all-reduces the 16-bit values (summed pairwise in float32 and
/// rounded, as NCCL sums them). Nothing a rank computes is lost: what one step does not
/// send, a later step does. Scaling before rounding keeps float16 sums inside its range
/// whenever the average is. The residual lives on the bucket's device; it is not
/// checkpointed (a restart begins with none, as DDP's hooks do).
class CompressedAllreduce : public BucketCompression {
 public:
  /// For a float32 bucket of `numel` values on `device`; `compression` is kFloat16 or kBFloat16.
  CompressedAllreduce(GradientCompression compression, int64_t numel, const at::TensorOptions& options);
  void allreduce(Collective& collective, at::Tensor& bucket, int divisor) override;

 private:
  at::Tensor wire_;      ///< the 16-bit values sent
  at::Tensor residual_;  ///< float32: what rounding dropped last time, in scaled units
};

}  // namespace est::distribute
