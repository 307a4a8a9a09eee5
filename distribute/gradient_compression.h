#pragma once
/// GradientCompression: what float32 gradients become on the wire of the all-reduce
/// (DDP's fp16/bf16 compression hooks, with error feedback).

#include <ATen/core/Tensor.h>

#include <string>

namespace est::distribute {

class Collective;

/// The form in which float32 gradient buckets are all-reduced.
enum class GradientCompression {
  kNone,      ///< float32, as computed (the default)
  kFloat16,   ///< IEEE float16: half the bytes; range ±65504, 11 significant bits
  kBFloat16,  ///< bfloat16: half the bytes; float32's range, 8 significant bits
};

/// "none", "fp16" or "bf16".
const char* GradientCompressionName(GradientCompression compression);
/// The compression named `name` ("none", "fp16" or "bf16"); ConfigError naming `what`
/// (the flag or option) and the names accepted otherwise.
GradientCompression ParseGradientCompression(const std::string& name, const std::string& what);

/// One float32 bucket's all-reduce in a 16-bit type, with error feedback: each rank
/// scales its bucket by 1/divisor, adds what rounding dropped from its previous step
/// (the residual), rounds the result to the 16-bit type, keeps the new rounding error as
/// the next residual, and all-reduces the 16-bit values (summed pairwise in float32 and
/// rounded, as NCCL sums them). Nothing a rank computes is lost: what one step does not
/// send, a later step does. Scaling before rounding keeps float16 sums inside its range
/// whenever the average is. The residual lives on the bucket's device; it is not
/// checkpointed (a restart begins with none, as DDP's hooks do).
class CompressedAllreduce {
 public:
  /// For a float32 bucket of `numel` values on `device`; `compression` is not kNone.
  CompressedAllreduce(GradientCompression compression, int64_t numel, const at::TensorOptions& options);
  /// Replaces `bucket` (float32, `numel` values) by the average over the ranks of the
  /// collective: each rank's value divided by `divisor`, summed.
  void allreduce(Collective& collective, at::Tensor& bucket, int divisor);

 private:
  at::Tensor wire_;      ///< the 16-bit values sent
  at::Tensor residual_;  ///< float32: what rounding dropped last time, in scaled units
};

}  // namespace est::distribute
