#include "data/ops/stack_tensors.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>
#include <vector>

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace stack_tensors_test {
using est::data::StackTensors;

namespace {

/// Equal dtype, shape and bytes (NaN payloads and signed zeros included).
bool SameBytes(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const at::Tensor a_bytes = a.resolve_conj().resolve_neg().contiguous();
  const at::Tensor b_bytes = b.resolve_conj().resolve_neg().contiguous();
  return a_bytes.nbytes() == b_bytes.nbytes() &&
         (a_bytes.nbytes() == 0 ||
          std::memcmp(a_bytes.data_ptr(), b_bytes.data_ptr(), a_bytes.nbytes()) == 0);
}

/// Five tensors of `shape` and `dtype` with varied values.
std::vector<at::Tensor> Tensors(at::IntArrayRef shape, at::ScalarType dtype) {
  std::vector<at::Tensor> tensors;
  for (int i = 0; i < 5; ++i) tensors.push_back((at::randn(shape) * 100).to(dtype));
  return tensors;
}

}  // namespace

TEST_CASE("StackTensors equals at::stack bit for bit", "[data]") {
  SECTION("every dtype and shape, contiguous elements") {
    const at::ScalarType dtypes[] = {at::kFloat, at::kDouble, at::kHalf,  at::kBFloat16,
                                     at::kByte,  at::kChar,   at::kShort, at::kInt,
                                     at::kLong,  at::kBool,   at::kComplexFloat};
    const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {3}, {2, 3}, {0}, {2, 0, 4}};
    for (at::ScalarType dtype : dtypes) {
      for (const auto& shape : shapes) {
        INFO("dtype " << dtype << ", shape " << at::IntArrayRef(shape));
        const auto tensors = Tensors(shape, dtype);
        const at::Tensor stacked = StackTensors(tensors);
        CHECK(SameBytes(stacked, at::stack(tensors)));
        CHECK(stacked.is_contiguous());
      }
    }
  }

  SECTION("NaN, infinities and signed zeros keep their bits") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<at::Tensor> tensors = {at::tensor({nan, -0.0f}), at::tensor({inf, 0.0f}),
                                       at::tensor({-inf, -nan})};
    CHECK(SameBytes(StackTensors(tensors), at::stack(tensors)));
  }

  SECTION("views: slices of one tensor, non-contiguous, conjugate and negative views") {
    at::Tensor base = at::arange(60, at::kFloat).reshape({5, 3, 4});
    std::vector<at::Tensor> slices = {base[0], base[3], base[1]};
    CHECK(SameBytes(StackTensors(slices), at::stack(slices)));
    std::vector<at::Tensor> transposed = {base[0].t(), base[2].t()};
    CHECK(SameBytes(StackTensors(transposed), at::stack(transposed)));
    at::Tensor complex = at::randn({2, 3}, at::kComplexFloat);
    std::vector<at::Tensor> conjugates = {complex[0].conj(), complex[1].conj()};
    REQUIRE(conjugates[0].is_conj());
    CHECK(SameBytes(StackTensors(conjugates), at::stack(conjugates)));
    std::vector<at::Tensor> negatives = {at::_neg_view(base[0]), at::_neg_view(base[4])};
    REQUIRE(negatives[0].is_neg());
    CHECK(SameBytes(StackTensors(negatives), at::stack(negatives)));
  }

  SECTION("tensors that require grad give a batch that tracks them, as at::stack does") {
    std::vector<at::Tensor> tensors = {at::ones({2}).requires_grad_(), at::zeros({2})};
    const at::Tensor stacked = StackTensors(tensors);
    CHECK(stacked.requires_grad());
    CHECK(SameBytes(stacked.detach(), at::stack(tensors).detach()));
  }
}

}  // namespace stack_tensors_test
