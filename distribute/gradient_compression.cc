#include "distribute/gradient_compression.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "distribute/collective/collective.h"
#include "distribute/collective/kernels_16_bit.h"
#include "distribute/power_sgd.h"

namespace est::distribute {

const char* GradientCompressionName(GradientCompression compression) {
  switch (compression) {
    case GradientCompression::kNone: return "none";
    case GradientCompression::kFloat16: return "fp16";
    case GradientCompression::kBFloat16: return "bf16";
    case GradientCompression::kPowerSgd: return "powersgd";
  }
  return "unknown";
}

GradientCompression ParseGradientCompression(const std::string& name, const std::string& what) {
  for (GradientCompression compression : {GradientCompression::kNone, GradientCompression::kFloat16,
                                          GradientCompression::kBFloat16, GradientCompression::kPowerSgd}) {
    if (name == GradientCompressionName(compression)) return compression;
  }
  EST_THROW(ConfigError, what, ": unknown gradient compression '", name, "'; expected none, fp16, bf16 or powersgd");
}

void PowerSgdOptions::validate() const {
  EST_CHECK(rank() >= 1 && rank() <= 64, ConfigError, "PowerSgdOptions: rank must be in [1, 64], got ", rank());
  EST_CHECK(warmup_steps() >= 0, ConfigError, "PowerSgdOptions: warmup_steps must not be negative, got ",
            warmup_steps());
}

std::unique_ptr<BucketCompression> MakeBucketCompression(GradientCompression compression,
                                                         const PowerSgdOptions& power_sgd,
                                                         const std::vector<std::vector<int64_t>>& shapes,
                                                         const at::TensorOptions& options) {
  EST_ASSERT(compression != GradientCompression::kNone, "MakeBucketCompression without a compression");
  if (compression == GradientCompression::kPowerSgd) return std::make_unique<PowerSgdAllreduce>(shapes, power_sgd, options);
  int64_t numel = 0;
  for (const auto& shape : shapes) numel += c10::multiply_integers(shape);
  return std::make_unique<CompressedAllreduce>(compression, numel, options);
}

CompressedAllreduce::CompressedAllreduce(GradientCompression compression, int64_t numel,
                                         const at::TensorOptions& options) {
  EST_ASSERT(compression == GradientCompression::kFloat16 || compression == GradientCompression::kBFloat16,
             "CompressedAllreduce needs a 16-bit compression");
  const at::ScalarType wire = compression == GradientCompression::kFloat16 ? at::kHalf : at::kBFloat16;
  wire_ = at::empty({numel}, options.dtype(wire));
  residual_ = at::zeros({numel}, options.dtype(at::kFloat));
}

void CompressedAllreduce::allreduce(Collective& collective, at::Tensor& bucket, int divisor) {
  EST_ASSERT(bucket.scalar_type() == at::kFloat && bucket.numel() == residual_.numel(),
             "CompressedAllreduce: expected a float32 bucket of ", residual_.numel(), " values");
  // residual_ becomes this rank's share plus what rounding dropped last time; the 16-bit
  // copy of it is sent, and what that rounding drops is kept for the next step. A value
  // that overflowed float16 leaves no residual (an infinite one would stay forever).
  const float scale = 1.0f / static_cast<float>(divisor);
  if (bucket.device().is_cpu() && bucket.is_contiguous()) {  // one pass
    const auto round = wire_.scalar_type() == at::kHalf ? RoundToFloat16WithResidual
                                                        : RoundToBFloat16WithResidual;
    round(bucket.data_ptr<float>(), scale, residual_.data_ptr<float>(), static_cast<uint16_t*>(wire_.data_ptr()),
          static_cast<size_t>(bucket.numel()));
  } else {
    residual_.add_(bucket, scale);
    wire_.copy_(residual_);
    bucket.copy_(wire_);
    residual_.sub_(bucket).nan_to_num_(0.0, 0.0, 0.0);
  }
  collective.allreduce(wire_, ReduceOp::kSum);
  bucket.copy_(wire_);
}

}  // namespace est::distribute
