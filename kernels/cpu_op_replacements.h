#pragma once
// Kernels of est::kernels put in the place of slow LibTorch CPU kernels, for every model.

#include <string>
#include <vector>

namespace est::kernels {

/// Registers with LibTorch's dispatcher, for the CPU and for the whole process, the kernels of
/// est::kernels that compute these ops faster than LibTorch's own CPU kernels (ReplacedCpuOps
/// lists them): max-pooling to LibTorch's bits; float32 matrix products on oneDNN's brgemm
/// kernel where the CPU gets it (OneDnnMatmulRuns), within float32 rounding of LibTorch's, their
/// sums taken in another order. Every call of the op from then on, direct or through
/// autograd, torch::nn's modules and a traced program alike, runs ours, and ours hand the inputs
/// they do not speed up to LibTorch's kernel. Once per process; later calls do nothing. LibTorch's
/// "Overriding a previously registered kernel" warning is not shown.
void ReplaceSlowCpuOps();

/// The ops whose CPU kernels ReplaceSlowCpuOps replaces (on this CPU), as LibTorch names them.
std::vector<std::string> ReplacedCpuOps();

}  // namespace est::kernels
