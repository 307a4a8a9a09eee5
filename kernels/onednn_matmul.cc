#include "kernels/onednn_matmul.h"

#include <ATen/Parallel.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm_cpu_dispatch.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#if EST_ONEDNN_MATMUL
#include "kernels/onednn_internal.h"
#endif

namespace est::kernels {

#if EST_ONEDNN_MATMUL
namespace {

// oneDNN's strides of a dense matrix, its rows or its columns one after the other with no gap
// (oneDNN's brgemm kernel takes no other), or nullopt. A dimension of size 1 takes whichever
// stride makes the other layout fit.
std::optional<std::array<int64_t, 2>> DenseStrides(const at::Tensor& matrix) {
  const int64_t rows = matrix.size(0), cols = matrix.size(1);
  int64_t row_stride = matrix.stride(0), col_stride = matrix.stride(1);
  if (rows == 1) row_stride = col_stride == 1 ? cols : 1;
  if (cols == 1) col_stride = row_stride == 1 ? rows : 1;
  if (col_stride == 1 && row_stride == cols) return std::array<int64_t, 2>{cols, 1};
  if (row_stride == 1 && col_stride == rows) return std::array<int64_t, 2>{1, rows};
  return std::nullopt;
}

using detail::IsCpuFloat;

bool IsFloatMatrix(const at::Tensor& t) { return IsCpuFloat(t) && t.dim() == 2; }

// One product's shape, layouts, bias and thread count: what a oneDNN primitive is made for.
struct MatmulKey {
  int64_t m, n, k;
  std::array<int64_t, 2> a_strides, b_strides;
  bool bias;
  int threads;
  bool operator<(const MatmulKey& other) const {
    return std::tie(m, n, k, a_strides, b_strides, bias, threads) <
           std::tie(other.m, other.n, other.k, other.a_strides, other.b_strides, other.bias, other.threads);
  }
};

// A primitive for a MatmulKey, or none where oneDNN's choice is not its brgemm kernel.
struct MatmulPrimitive {
  std::optional<dnnl::matmul> primitive;
  dnnl::memory::desc a, b, bias, c, scratchpad;
};

// The primitives made so far. A training step makes a handful of products, each again at every
// step; the cache starts over past kMaxProducts (programs whose shapes keep changing).
class MatmulCache {
 public:
  static MatmulCache& Get() {
    static auto* cache = new MatmulCache;  // never destroyed: other threads may run products at exit
    return *cache;
  }

  // Shared: a product another thread is running outlives the cache's clearing.
  std::shared_ptr<const MatmulPrimitive> Find(const MatmulKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = products_.find(key);
    if (found != products_.end()) return found->second;
    if (products_.size() >= kMaxProducts) products_.clear();
    return products_.emplace(key, std::make_shared<const MatmulPrimitive>(Make(key))).first->second;
  }

 private:
  static constexpr size_t kMaxProducts = 256;

  static MatmulPrimitive Make(const MatmulKey& key) {
    using dnnl::memory;
    MatmulPrimitive product;
    const auto f32 = memory::data_type::f32;
    product.a = memory::desc({key.m, key.k}, f32, {key.a_strides[0], key.a_strides[1]});
    product.b = memory::desc({key.k, key.n}, f32, {key.b_strides[0], key.b_strides[1]});
    product.c = memory::desc({key.m, key.n}, f32, memory::format_tag::ab);
    if (key.bias) product.bias = memory::desc({1, key.n}, f32, memory::format_tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    try {
      const dnnl::matmul::desc desc = key.bias ? dnnl::matmul::desc(product.a, product.b, product.bias, product.c)
                                               : dnnl::matmul::desc(product.a, product.b, product.c);
      const dnnl::matmul::primitive_desc pd(desc, attr, detail::OneDnnEngine());
      if (std::string(pd.impl_info_str()).rfind("brg", 0) != 0) return product;
      product.scratchpad = pd.scratchpad_desc();
      product.primitive.emplace(pd);
    } catch (const dnnl::error&) {
      // Not implemented for this layout here: LibTorch's kernel computes it.
    }
    return product;
  }

  std::mutex mutex_;
  std::map<MatmulKey, std::shared_ptr<const MatmulPrimitive>> products_;
};

// The primitive that computes a @ b (+ a bias row), or nullptr where oneDNN does not take it.
std::shared_ptr<const MatmulPrimitive> FindMatmul(const at::Tensor& a, const at::Tensor& b, bool bias) {
  if (!IsFloatMatrix(a) || !IsFloatMatrix(b) || a.size(1) != b.size(0)) return nullptr;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (m == 0 || n == 0 || k == 0 || m * n * k < kOneDnnMatmulMinMacs) return nullptr;
  const auto a_strides = DenseStrides(a), b_strides = DenseStrides(b);
  if (!a_strides || !b_strides) return nullptr;
  auto product = MatmulCache::Get().Find({m, n, k, *a_strides, *b_strides, bias, at::get_num_threads()});
  return product->primitive ? product : nullptr;
}

// a @ b (+ bias row) on oneDNN, or nullopt where it does not take it.
std::optional<at::Tensor> Multiply(const at::Tensor& a, const at::Tensor& b, const at::Tensor* bias) {
  const std::shared_ptr<const MatmulPrimitive> found = FindMatmul(a, b, bias != nullptr);
  if (!found) return std::nullopt;
  const MatmulPrimitive& product = *found;
  const int64_t m = a.size(0), n = b.size(1);
  at::Tensor c = at::empty({m, n}, a.options());
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, detail::OneDnnMemory(product.a, a.data_ptr())},
                                              {DNNL_ARG_WEIGHTS, detail::OneDnnMemory(product.b, b.data_ptr())},
                                              {DNNL_ARG_DST, detail::OneDnnMemory(product.c, c.data_ptr())}};
  if (bias) args.emplace(DNNL_ARG_BIAS, detail::OneDnnMemory(product.bias, bias->data_ptr()));
  detail::RunOneDnn(*product.primitive, product.scratchpad, std::move(args));
  return c;
}

// A float32 [N] or [1, N] contiguous row: a bias oneDNN adds to each row of the product.
bool IsBiasRow(const at::Tensor& self, int64_t n) {
  if (!IsCpuFloat(self) || !self.is_contiguous()) return false;
  return (self.dim() == 1 && self.size(0) == n) || (self.dim() == 2 && self.size(0) == 1 && self.size(1) == n);
}

}  // namespace

bool OneDnnMatmulRuns() {
  // oneDNN picks its kernel by the CPU: a plain product tells which one this CPU gets.
  static const bool runs =
      MatmulCache::Get().Find({64, 64, 64, {64, 1}, {64, 1}, false, at::get_num_threads()})->primitive.has_value();
  return runs;
}

bool OneDnnMatmulTakes(const at::Tensor& a, const at::Tensor& b) { return FindMatmul(a, b, false) != nullptr; }

at::Tensor OneDnnMm(const at::Tensor& self, const at::Tensor& mat2) {
  if (auto product = Multiply(self, mat2, nullptr)) return *std::move(product);
  return at::cpu::mm(self, mat2);
}

at::Tensor OneDnnAddmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                       const at::Scalar& alpha) {
  const bool plain = !beta.isComplex() && !alpha.isComplex() && beta.toDouble() == 1.0 && alpha.toDouble() == 1.0;
  if (plain && mat2.dim() == 2 && IsBiasRow(self, mat2.size(1))) {
    if (auto product = Multiply(mat1, mat2, &self)) return *std::move(product);
  }
  return at::cpu::addmm(self, mat1, mat2, beta, alpha);
}

#else  // !EST_ONEDNN_MATMUL

bool OneDnnMatmulRuns() { return false; }

bool OneDnnMatmulTakes(const at::Tensor&, const at::Tensor&) { return false; }

at::Tensor OneDnnMm(const at::Tensor& self, const at::Tensor& mat2) { return at::cpu::mm(self, mat2); }

at::Tensor OneDnnAddmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                       const at::Scalar& alpha) {
  return at::cpu::addmm(self, mat1, mat2, beta, alpha);
}

#endif

}  // namespace est::kernels
