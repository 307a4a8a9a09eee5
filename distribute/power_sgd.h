#pragma once
/// PowerSGD (Vogels, Karimireddy and Jaggi, NeurIPS 2019): a bucket's weight matrices
/// all-reduced as low-rank factors found by one step of power iteration, with error feedback
/// and warm start, as PyTorch DDP's powerSGD_hook does. Internal to the distribute folder.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "distribute/gradient_compression.h"

namespace est::distribute {

/// One float32 bucket's all-reduce, PowerSGD's way. A gradient of the bucket with two or more
/// dimensions is an n × m matrix M (its first dimension by the product of the others); it goes
/// as two factors of r = options.rank() columns when (n + m) · r · 2 <= n · m, as DDP's default
/// minimum compression rate of 2 has it. Every other gradient (biases, small matrices) goes
/// as float32 values beside the first factors. Each step, on every rank:
///
///   M = gradient / divisor + error      (this rank's share, and what it did not send before)
///   P = sum over ranks of M Q           (the first all-reduce, with the plain values)
///   P = P with orthonormal columns      (Gram-Schmidt: the same bits on every rank)
///   Q = sum over ranks of Mᵀ P          (the second all-reduce; kept for the next step)
///   average = P Qᵀ                      (written into the bucket)
///   error = M - average / ranks
///
/// The errors of all ranks add up to what the approximation left out of the average, and the
/// next step sends it: nothing is lost, only delayed. Q starts from the same random values,
/// orthonormalized, on every rank. For the first options.warmup_steps() steps the bucket goes
/// uncompressed. Errors and Q are not checkpointed: a restart begins without them, as DDP's
/// state does.
class PowerSgdAllreduce : public BucketCompression {
 public:
  /// For a float32 bucket on `options`' device holding the gradients of `shapes`, one after
  /// another; `power_sgd` is valid.
  PowerSgdAllreduce(const std::vector<std::vector<int64_t>>& shapes, const PowerSgdOptions& power_sgd,
                    const at::TensorOptions& options);
  void allreduce(Collective& collective, at::Tensor& bucket, int divisor) override;

  /// The values each all-reduce of a compressed step carries: the first (the P factors and
  /// the plain values), then the second (the Q factors).
  std::pair<int64_t, int64_t> wire_numel() const { return {p_.numel(), q_.numel()}; }
  /// How many of the bucket's gradients go as factors.
  size_t compressed_matrices() const { return matrices_.size(); }

 private:
  struct Matrix {
    int64_t offset;  ///< in the bucket
    int64_t rows, cols;
    int64_t p_offset, q_offset, error_offset;
  };
  struct Plain {
    int64_t offset, numel;  ///< in the bucket
    int64_t p_offset;       ///< in p_, after the factors
  };

  int64_t rank_;
  int64_t warmup_steps_;
  int64_t steps_ = 0;
  std::vector<Matrix> matrices_;
  std::vector<Plain> plain_;
  at::Tensor p_;      ///< the first factors, then the plain values
  at::Tensor q_;      ///< the second factors, all-reduced: the next step's start (warm start)
  at::Tensor error_;  ///< this rank's error of each compressed matrix
};

}  // namespace est::distribute
