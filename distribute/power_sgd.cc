#include "distribute/power_sgd.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/accumulate.h>

#include <cmath>

#include "common/error.h"
#include "distribute/collective/collective.h"

namespace est::distribute {
namespace {

// The seed of every rank's first Q: equal everywhere, so the ranks' first factors agree.
constexpr uint64_t kFirstQSeed = 0x506f776572534744;  // "PowerSGD"

// Makes the columns of `matrix` ([rows, columns], float32) orthonormal, in order (modified
// Gram-Schmidt); a column that is all zeros after the earlier ones are taken out stays zero.
// On the CPU the loops run in a fixed order on one thread, so that every rank, given the same
// bits, gets the same bits back whatever its thread count.
void Orthonormalize(at::Tensor matrix) {
  const int64_t rows = matrix.size(0), columns = matrix.size(1);
  if (!matrix.is_cpu()) {
    for (int64_t j = 0; j < columns; ++j) {
      at::Tensor column = matrix.select(1, j);
      const at::Tensor norm = column.norm();
      column.div_(at::where(norm > 0, norm, at::ones_like(norm)));
      for (int64_t k = j + 1; k < columns; ++k) {
        at::Tensor other = matrix.select(1, k);
        other.sub_(column * (column * other).sum());
      }
    }
    return;
  }
  float* data = matrix.data_ptr<float>();
  for (int64_t j = 0; j < columns; ++j) {
    double squares = 0;
    for (int64_t i = 0; i < rows; ++i) squares += static_cast<double>(data[i * columns + j]) * data[i * columns + j];
    const float norm = static_cast<float>(std::sqrt(squares));
    if (norm > 0)
      for (int64_t i = 0; i < rows; ++i) data[i * columns + j] /= norm;
    for (int64_t k = j + 1; k < columns; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += static_cast<double>(data[i * columns + j]) * data[i * columns + k];
      const float projection = static_cast<float>(dot);
      for (int64_t i = 0; i < rows; ++i) data[i * columns + k] -= projection * data[i * columns + j];
    }
  }
}

// out ([rows, columns]) = p ([rows, r]) times the transpose of q ([columns, r]). On the CPU in a
// fixed order (a sum over r per value), so that every rank gets the same bits.
void Reconstruct(const at::Tensor& p, const at::Tensor& q, at::Tensor out) {
  if (!out.is_cpu()) {
    at::mm_out(out, p, q.t());
    return;
  }
  const int64_t rows = p.size(0), rank = p.size(1), columns = q.size(0);
  const at::Tensor q_rows = q.t().contiguous();  // [r, columns]: each factor's column as a row
  const float* p_data = p.data_ptr<float>();
  const float* q_data = q_rows.data_ptr<float>();
  float* out_data = out.data_ptr<float>();
  for (int64_t i = 0; i < rows; ++i) {
    float* row = out_data + i * columns;
    const float first = p_data[i * rank];
    for (int64_t c = 0; c < columns; ++c) row[c] = first * q_data[c];
    for (int64_t k = 1; k < rank; ++k) {
      const float weight = p_data[i * rank + k];
      const float* factor = q_data + k * columns;
      for (int64_t c = 0; c < columns; ++c) row[c] += weight * factor[c];
    }
  }
}

}  // namespace

PowerSgdAllreduce::PowerSgdAllreduce(const std::vector<std::vector<int64_t>>& shapes, const PowerSgdOptions& power_sgd,
                                     const at::TensorOptions& options)
    : rank_(power_sgd.rank()), warmup_steps_(power_sgd.warmup_steps()) {
  power_sgd.validate();
  int64_t offset = 0, p_numel = 0, q_numel = 0, error_numel = 0;
  for (const auto& shape : shapes) {
    const int64_t numel = c10::multiply_integers(shape);
    const int64_t rows = shape.size() >= 2 && numel > 0 ? shape[0] : 0;
    const int64_t columns = rows > 0 ? numel / rows : 0;
    if (rows > 0 && (rows + columns) * rank_ * 2 <= numel) {
      matrices_.push_back(Matrix{offset, rows, columns, p_numel, q_numel, error_numel});
      p_numel += rows * rank_;
      q_numel += columns * rank_;
      error_numel += numel;
    } else {
      plain_.push_back(Plain{offset, numel, 0});
    }
    offset += numel;
  }
  for (Plain& plain : plain_) {
    plain.p_offset = p_numel;
    p_numel += plain.numel;
  }
  const at::TensorOptions floats = options.dtype(at::kFloat);
  p_ = at::zeros({p_numel}, floats);
  q_ = at::zeros({q_numel}, floats);
  error_ = at::zeros({error_numel}, floats);
  auto generator = at::detail::createCPUGenerator(kFirstQSeed);
  for (const Matrix& matrix : matrices_) {
    at::Tensor first = at::randn({matrix.cols, rank_}, generator, at::kFloat);
    Orthonormalize(first);
    q_.narrow(0, matrix.q_offset, matrix.cols * rank_).copy_(first.view(-1));
  }
}

void PowerSgdAllreduce::allreduce(Collective& collective, at::Tensor& bucket, int divisor) {
  EST_ASSERT(bucket.scalar_type() == at::kFloat && bucket.is_contiguous(), "PowerSGD: expected a float32 bucket");
  if (steps_++ < warmup_steps_ || matrices_.empty()) {
    collective.allreduce(bucket, ReduceOp::kSum);  // as the uncompressed reducer: the sum, then the share
    bucket.div_(divisor);
    return;
  }
  const double share = 1.0 / divisor;
  auto factor = [&](const at::Tensor& of, int64_t at, int64_t rows) {
    return of.narrow(0, at, rows * rank_).view({rows, rank_});
  };
  // M (kept in error_ for this step) and the first factors; the plain values beside them.
  for (const Matrix& matrix : matrices_) {
    at::Tensor m = error_.narrow(0, matrix.error_offset, matrix.rows * matrix.cols).view({matrix.rows, matrix.cols});
    m.add_(bucket.narrow(0, matrix.offset, matrix.rows * matrix.cols).view({matrix.rows, matrix.cols}), share);
    at::Tensor p = factor(p_, matrix.p_offset, matrix.rows);
    at::mm_out(p, m, factor(q_, matrix.q_offset, matrix.cols));
  }
  for (const Plain& plain : plain_) p_.narrow(0, plain.p_offset, plain.numel).copy_(bucket.narrow(0, plain.offset, plain.numel));
  collective.allreduce(p_, ReduceOp::kSum);
  // The second factors, from the orthonormal first ones.
  for (const Matrix& matrix : matrices_) {
    at::Tensor p = factor(p_, matrix.p_offset, matrix.rows);
    Orthonormalize(p);
    at::Tensor q = factor(q_, matrix.q_offset, matrix.cols);
    at::mm_out(q, error_.narrow(0, matrix.error_offset, matrix.rows * matrix.cols).view({matrix.rows, matrix.cols}).t(), p);
  }
  collective.allreduce(q_, ReduceOp::kSum);
  // The average, and what this rank's share of it left out.
  const double per_rank = 1.0 / collective.world_size();
  for (const Matrix& matrix : matrices_) {
    at::Tensor average = bucket.narrow(0, matrix.offset, matrix.rows * matrix.cols).view({matrix.rows, matrix.cols});
    Reconstruct(factor(p_, matrix.p_offset, matrix.rows), factor(q_, matrix.q_offset, matrix.cols), average);
    error_.narrow(0, matrix.error_offset, matrix.rows * matrix.cols).sub_(average.view(-1), per_rank);
  }
  for (const Plain& plain : plain_) {
    at::Tensor average = bucket.narrow(0, plain.offset, plain.numel);
    at::div_out(average, p_.narrow(0, plain.p_offset, plain.numel), divisor);
  }
}

}  // namespace est::distribute
