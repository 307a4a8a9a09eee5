#include "kernels/blocked_max_pool_internal.h"

#include "kernels/cpu_vectors.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace est::kernels::detail {
namespace {

// The lane operations of the kernels below for one vector width: a block's lanes are its
// channels. Each `Floats` holds one position's `kBlock` channels, `Mask` one bit a lane.
#if defined(__x86_64__)
EST_BEGIN_AVX512_KERNELS
struct Lanes512 {
  static constexpr int kBlock = 16;
  using Floats = __m512;
  using Codes = __m512i;
  using Mask = __mmask16;
  EST_TARGET_AVX512 static Floats Load(const float* from) { return _mm512_loadu_ps(from); }
  EST_TARGET_AVX512 static void Store(float* to, Floats v) { _mm512_storeu_ps(to, v); }
  EST_TARGET_AVX512 static Floats Zero() { return _mm512_setzero_ps(); }
  EST_TARGET_AVX512 static Floats Fill(float v) { return _mm512_set1_ps(v); }
  EST_TARGET_AVX512 static Mask Less(Floats a, Floats b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  EST_TARGET_AVX512 static Mask LessEqual(Floats a, Floats b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
  EST_TARGET_AVX512 static Mask GreaterOrNaN(Floats a, Floats best) {
    return _mm512_cmp_ps_mask(a, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
  }
  // Lanes of `mask` from `b`, the others from `a`.
  EST_TARGET_AVX512 static Floats Select(Mask mask, Floats a, Floats b) { return _mm512_mask_blend_ps(mask, a, b); }
  EST_TARGET_AVX512 static Codes SelectCode(Mask mask, Codes a, int32_t b) {
    return _mm512_mask_blend_epi32(mask, a, _mm512_set1_epi32(b));
  }
  EST_TARGET_AVX512 static Codes NoCodes() { return _mm512_setzero_si512(); }
  // `code` with kWinnerFlows added outside `stopped`.
  EST_TARGET_AVX512 static Codes FlagFlowing(Mask stopped, Codes code) {
    return _mm512_mask_or_epi32(code, static_cast<Mask>(~stopped), code, _mm512_set1_epi32(kWinnerFlows));
  }
  EST_TARGET_AVX512 static void StoreCodes(uint8_t* to, Codes c) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to), _mm512_cvtepi32_epi8(c));
  }
  EST_TARGET_AVX512 static Codes LoadCodes(const uint8_t* from) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
  }
  EST_TARGET_AVX512 static Mask Equal(Codes c, int32_t value) {
    return _mm512_cmpeq_epi32_mask(c, _mm512_set1_epi32(value));
  }
  // `sum` with `add` added in the lanes of `mask`.
  EST_TARGET_AVX512 static Floats AddWhere(Mask mask, Floats sum, Floats add) {
    return _mm512_mask_add_ps(sum, mask, sum, add);
  }
  // Lanes of `mask` from `b`, zero in the others.
  EST_TARGET_AVX512 static Floats Where(Mask mask, Floats b) { return _mm512_maskz_mov_ps(mask, b); }
  // The first `count` values at `from` (zeros after them); the first `count` lanes to `to`.
  EST_TARGET_AVX512 static Floats LoadFirst(const float* from, int count) {
    return _mm512_maskz_loadu_ps(static_cast<Mask>((1u << count) - 1), from);
  }
  EST_TARGET_AVX512 static void StoreFirst(float* to, int count, Floats v) {
    _mm512_mask_storeu_ps(to, static_cast<Mask>((1u << count) - 1), v);
  }
  // Rows become columns: rows[j][l] goes to rows[l][j].
  EST_TARGET_AVX512 static void Transpose(Floats (&r)[16]) {
    Floats t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
      r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 16; i += 8)
      for (int j = 0; j < 4; ++j) {
        t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
        t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xDD);
      }
    for (int j = 0; j < 8; ++j) {
      r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
      r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xDD);
    }
  }
};
EST_END_AVX512_KERNELS

#define EST_TARGET_AVX2 __attribute__((target("avx2,fma")))
struct Lanes256 {
  static constexpr int kBlock = 8;
  using Floats = __m256;
  using Codes = __m256i;
  using Mask = __m256;
  EST_TARGET_AVX2 static Floats Load(const float* from) { return _mm256_loadu_ps(from); }
  EST_TARGET_AVX2 static void Store(float* to, Floats v) { _mm256_storeu_ps(to, v); }
  EST_TARGET_AVX2 static Floats Zero() { return _mm256_setzero_ps(); }
  EST_TARGET_AVX2 static Floats Fill(float v) { return _mm256_set1_ps(v); }
  EST_TARGET_AVX2 static Mask Less(Floats a, Floats b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  EST_TARGET_AVX2 static Mask LessEqual(Floats a, Floats b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  EST_TARGET_AVX2 static Mask GreaterOrNaN(Floats a, Floats best) {
    return _mm256_or_ps(_mm256_cmp_ps(a, best, _CMP_GT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  EST_TARGET_AVX2 static Floats Select(Mask mask, Floats a, Floats b) { return _mm256_blendv_ps(a, b, mask); }
  EST_TARGET_AVX2 static Codes SelectCode(Mask mask, Codes a, int32_t b) {
    return _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(_mm256_set1_epi32(b)), mask));
  }
  EST_TARGET_AVX2 static Codes NoCodes() { return _mm256_setzero_si256(); }
  EST_TARGET_AVX2 static Codes FlagFlowing(Mask stopped, Codes code) {
    return _mm256_or_si256(code, _mm256_andnot_si256(_mm256_castps_si256(stopped), _mm256_set1_epi32(kWinnerFlows)));
  }
  EST_TARGET_AVX2 static void StoreCodes(uint8_t* to, Codes c) {
    const __m256i bytes = _mm256_shuffle_epi8(c, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                   -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1,
                                                                   -1, -1, -1, -1, -1));
    const uint32_t low = static_cast<uint32_t>(_mm256_extract_epi32(bytes, 0));
    const uint32_t high = static_cast<uint32_t>(_mm256_extract_epi32(bytes, 4));
    std::memcpy(to, &low, 4);
    std::memcpy(to + 4, &high, 4);
  }
  EST_TARGET_AVX2 static Codes LoadCodes(const uint8_t* from) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(from)));
  }
  EST_TARGET_AVX2 static Mask Equal(Codes c, int32_t value) {
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(c, _mm256_set1_epi32(value)));
  }
  EST_TARGET_AVX2 static Floats AddWhere(Mask mask, Floats sum, Floats add) {
    return _mm256_blendv_ps(sum, _mm256_add_ps(sum, add), mask);
  }
  EST_TARGET_AVX2 static Floats Where(Mask mask, Floats b) { return _mm256_and_ps(mask, b); }
  EST_TARGET_AVX2 static __m256i First(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  EST_TARGET_AVX2 static Floats LoadFirst(const float* from, int count) {
    return _mm256_maskload_ps(from, First(count));
  }
  EST_TARGET_AVX2 static void StoreFirst(float* to, int count, Floats v) { _mm256_maskstore_ps(to, First(count), v); }
  EST_TARGET_AVX2 static void Transpose(Floats (&r)[8]) {
    Floats t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {
      r[j] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x20);
      r[j + 4] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x31);
    }
  }
};
#endif

// One lane at a time, for CPUs without AVX2: the same rules on scalars.
template <int kLanes>
struct ScalarLanes {
  static constexpr int kBlock = kLanes;
  struct Floats {
    float v[kLanes];
  };
  struct Codes {
    int32_t v[kLanes];
  };
  struct Mask {
    bool v[kLanes];
  };
  template <typename Op>
  static Mask Each(const Op& op) {
    Mask m;
    for (int l = 0; l < kLanes; ++l) m.v[l] = op(l);
    return m;
  }
  static Floats Load(const float* from) {
    Floats f;
    std::memcpy(f.v, from, sizeof f.v);
    return f;
  }
  static void Store(float* to, const Floats& f) { std::memcpy(to, f.v, sizeof f.v); }
  static Floats Zero() { return Fill(0.0f); }
  static Floats Fill(float value) {
    Floats f;
    for (float& v : f.v) v = value;
    return f;
  }
  static Mask Less(const Floats& a, const Floats& b) { return Each([&](int l) { return a.v[l] < b.v[l]; }); }
  static Mask LessEqual(const Floats& a, const Floats& b) { return Each([&](int l) { return a.v[l] <= b.v[l]; }); }
  static Mask GreaterOrNaN(const Floats& a, const Floats& best) {
    return Each([&](int l) { return a.v[l] > best.v[l] || std::isnan(a.v[l]); });
  }
  static Floats Select(const Mask& m, const Floats& a, const Floats& b) {
    Floats f;
    for (int l = 0; l < kLanes; ++l) f.v[l] = m.v[l] ? b.v[l] : a.v[l];
    return f;
  }
  static Codes SelectCode(const Mask& m, const Codes& a, int32_t b) {
    Codes c;
    for (int l = 0; l < kLanes; ++l) c.v[l] = m.v[l] ? b : a.v[l];
    return c;
  }
  static Codes NoCodes() { return Codes{}; }
  static Codes FlagFlowing(const Mask& stopped, const Codes& code) {
    Codes c = code;
    for (int l = 0; l < kLanes; ++l) c.v[l] |= stopped.v[l] ? 0 : kWinnerFlows;
    return c;
  }
  static void StoreCodes(uint8_t* to, const Codes& c) {
    for (int l = 0; l < kLanes; ++l) to[l] = static_cast<uint8_t>(c.v[l]);
  }
  static Codes LoadCodes(const uint8_t* from) {
    Codes c;
    for (int l = 0; l < kLanes; ++l) c.v[l] = from[l];
    return c;
  }
  static Mask Equal(const Codes& c, int32_t value) { return Each([&](int l) { return c.v[l] == value; }); }
  static Floats AddWhere(const Mask& m, const Floats& sum, const Floats& add) {
    Floats f = sum;
    for (int l = 0; l < kLanes; ++l)
      if (m.v[l]) f.v[l] += add.v[l];
    return f;
  }
  static Floats Where(const Mask& m, const Floats& b) { return Select(m, Zero(), b); }
  static Floats LoadFirst(const float* from, int count) {
    Floats f = Zero();
    std::memcpy(f.v, from, sizeof(float) * count);
    return f;
  }
  static void StoreFirst(float* to, int count, const Floats& v) { std::memcpy(to, v.v, sizeof(float) * count); }
  static void Transpose(Floats (&r)[kLanes]) {
    for (int j = 0; j < kLanes; ++j)
      for (int l = j + 1; l < kLanes; ++l) std::swap(r[j].v[l], r[l].v[j]);
  }
};

// Whether each input position lies in one window at most, every window's positions side by side
// (stride = window, no dilation, no padding): then a window's gradient is written, not added.
inline bool WindowsTile(const PoolGeometry& g) {
  return g.stride_h == g.kernel_h && g.stride_w == g.kernel_w && g.dilation_h == 1 && g.dilation_w == 1 &&
         g.pad_h == 0 && g.pad_w == 0;
}

// The kernels for each width (kernels/blocked_max_pool_kernels.inc).
#if defined(__x86_64__)
#define EST_BLOCKED_POOL_TARGET EST_TARGET_AVX512
namespace avx512 {
#include "kernels/blocked_max_pool_kernels.inc"
}  // namespace avx512
#undef EST_BLOCKED_POOL_TARGET
#define EST_BLOCKED_POOL_TARGET EST_TARGET_AVX2
namespace avx2 {
#include "kernels/blocked_max_pool_kernels.inc"
}  // namespace avx2
#undef EST_BLOCKED_POOL_TARGET
#endif
#define EST_BLOCKED_POOL_TARGET
namespace plain {
#include "kernels/blocked_max_pool_kernels.inc"
}  // namespace plain
#undef EST_BLOCKED_POOL_TARGET

using PoolBlockKernel = void (*)(const float*, const PoolGeometry&, int, float*, uint8_t*);
using PoolBlockBackwardKernel = void (*)(const float*, int, const uint8_t*, const PoolGeometry&, float*);

#if defined(__x86_64__)
EST_TARGET_AVX512 void PoolBlock16Avx512(const float* y, const PoolGeometry& g, int lanes, float* pooled,
                                         uint8_t* codes) {
  avx512::PoolBlock<Lanes512>(y, g, lanes, pooled, codes);
}
EST_TARGET_AVX512 void PoolBlockBackward16Avx512(const float* grad, int lanes, const uint8_t* codes,
                                                 const PoolGeometry& g, float* grad_y) {
  avx512::PoolBlockBackward<Lanes512>(grad, lanes, codes, g, grad_y);
}
EST_TARGET_AVX2 void PoolBlock8Avx2(const float* y, const PoolGeometry& g, int lanes, float* pooled, uint8_t* codes) {
  avx2::PoolBlock<Lanes256>(y, g, lanes, pooled, codes);
}
EST_TARGET_AVX2 void PoolBlockBackward8Avx2(const float* grad, int lanes, const uint8_t* codes, const PoolGeometry& g,
                                            float* grad_y) {
  avx2::PoolBlockBackward<Lanes256>(grad, lanes, codes, g, grad_y);
}
#endif

template <int kBlock>
void PoolBlockPlain(const float* y, const PoolGeometry& g, int lanes, float* pooled, uint8_t* codes) {
  plain::PoolBlock<ScalarLanes<kBlock>>(y, g, lanes, pooled, codes);
}
template <int kBlock>
void PoolBlockBackwardPlain(const float* grad, int lanes, const uint8_t* codes, const PoolGeometry& g,
                            float* grad_y) {
  plain::PoolBlockBackward<ScalarLanes<kBlock>>(grad, lanes, codes, g, grad_y);
}

// The widest kernels for this block on this CPU.
std::pair<PoolBlockKernel, PoolBlockBackwardKernel> KernelsFor(int block) {
  TORCH_INTERNAL_ASSERT(block == 8 || block == 16, "blocked max-pool: a block of ", block, " channels");
#if defined(__x86_64__)
  const int bits = UsableVectorBits();
  if (block == 16 && bits >= 512) return {&PoolBlock16Avx512, &PoolBlockBackward16Avx512};
  if (block == 8 && bits >= 256) return {&PoolBlock8Avx2, &PoolBlockBackward8Avx2};
#endif
  if (block == 16) return {&PoolBlockPlain<16>, &PoolBlockBackwardPlain<16>};
  return {&PoolBlockPlain<8>, &PoolBlockBackwardPlain<8>};
}

// Runs `body(n, block_index)` over every plane-block, spread over LibTorch's intra-op threads.
template <typename Body>
void ForEachBlock(const BlockedShape& shape, const PoolGeometry& g, const Body& body) {
  const int64_t work = g.out_height * g.out_width * g.kernel_h * g.kernel_w * shape.block;
  at::parallel_for(0, shape.batch * shape.blocks(), ParallelGrain(work, 1 << 16), [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) body(item / shape.blocks(), item % shape.blocks());
  });
}

}  // namespace

void ReluMaxPoolBlocked(const float* y, const BlockedShape& shape, const PoolGeometry& g, float* pooled,
                        uint8_t* codes) {
  const PoolBlockKernel kernel = KernelsFor(shape.block).first;
  const int64_t in_block = g.height * g.width * shape.block, out_plane = g.out_height * g.out_width;
  ForEachBlock(shape, g, [&](int64_t n, int64_t b) {
    const int64_t item = n * shape.blocks() + b, first = b * shape.block;
    kernel(y + item * in_block, g, static_cast<int>(std::min<int64_t>(shape.block, shape.channels - first)),
           pooled + (n * shape.channels + first) * out_plane, codes + item * out_plane * shape.block);
  });
}

void ReluMaxPoolBlockedBackward(const float* grad_pooled, const uint8_t* codes, const BlockedShape& shape,
                                const PoolGeometry& g, float* grad_y) {
  const PoolBlockBackwardKernel kernel = KernelsFor(shape.block).second;
  const int64_t in_block = g.height * g.width * shape.block, out_plane = g.out_height * g.out_width;
  ForEachBlock(shape, g, [&](int64_t n, int64_t b) {
    const int64_t item = n * shape.blocks() + b, first = b * shape.block;
    kernel(grad_pooled + (n * shape.channels + first) * out_plane,
           static_cast<int>(std::min<int64_t>(shape.block, shape.channels - first)),
           codes + item * out_plane * shape.block, g, grad_y + item * in_block);
  });
}

}  // namespace est::kernels::detail
