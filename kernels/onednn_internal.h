#pragma once
// What the kernels on oneDNN share: its CPU engine and running a primitive with scratch memory
// of our own. Internal to the kernels; only for sources built with EST_ONEDNN_MATMUL.

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <dnnl.hpp>

#include <unordered_map>

namespace est::kernels::detail {

/// oneDNN's CPU engine, made once.
inline const dnnl::engine& OneDnnEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// A strided float32 tensor in CPU memory: what oneDNN's f32 memory descriptors describe.
inline bool IsCpuFloat(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.layout() == c10::kStrided && t.scalar_type() == at::kFloat;
}

/// oneDNN memory of `desc` over `data` (not owned).
inline dnnl::memory OneDnnMemory(const dnnl::memory::desc& desc, void* data) {
  return dnnl::memory(desc, OneDnnEngine(), data);
}

/// Uninitialized bytes for a oneDNN memory of `desc`, from LibTorch's CPU allocator.
inline at::Tensor EmptyFor(const dnnl::memory::desc& desc) {
  return at::empty({static_cast<int64_t>(desc.get_size())}, at::TensorOptions().dtype(at::kByte));
}

/// Runs `primitive` on `args`, with scratch memory of `scratchpad` (made with
/// scratchpad_mode::user) from LibTorch's allocator: oneDNN's own shared one is not for
/// primitives that other threads may run at the same time.
inline void RunOneDnn(const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
                      std::unordered_map<int, dnnl::memory> args) {
  at::Tensor scratch;
  if (scratchpad.get_size() > 0) {
    scratch = EmptyFor(scratchpad);
    args.emplace(DNNL_ARG_SCRATCHPAD, OneDnnMemory(scratchpad, scratch.data_ptr()));
  }
  dnnl::stream stream(OneDnnEngine());
  primitive.execute(stream, args);
  stream.wait();
}

/// Copies `from` into `to` through oneDNN's reorder (between layouts of the same values).
inline void Reorder(const dnnl::memory& from, const dnnl::memory& to) {
  dnnl::stream stream(OneDnnEngine());
  dnnl::reorder(from, to).execute(stream, const_cast<dnnl::memory&>(from), const_cast<dnnl::memory&>(to));
  stream.wait();
}

}  // namespace est::kernels::detail
