#include "estimator/address_space_check.h"

#include <dlfcn.h>

#include <algorithm>

#include "common/error.h"
#include "common/memory_limit.h"

namespace est {
namespace {

constexpr uint64_t kMarginBytes = uint64_t{256} << 20;

/// OpenBLAS's thread count where OpenBLAS is this process's BLAS, else nullopt.
std::optional<int> OpenBlasThreads() {
  using ThreadCount = int (*)();
  auto count = reinterpret_cast<ThreadCount>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (count == nullptr) return std::nullopt;
  return std::max(1, count());
}

}  // namespace

AddressSpaceNeed TrainingAddressSpaceNeed() {
  AddressSpaceNeed need;
  need.margin_bytes = kMarginBytes;
  if (std::optional<int> threads = OpenBlasThreads()) {
    need.blas_buffer_bytes = kOpenBlasBufferBytes;
    need.blas_threads = *threads;
  }
  return need;
}

void CheckAddressSpaceRoom(std::optional<uint64_t> limit, uint64_t in_use, const AddressSpaceNeed& need) {
  if (!limit || (*limit > in_use && *limit - in_use >= need.total())) return;
  const uint64_t left = *limit > in_use ? *limit - in_use : 0;
  const std::string blas =
      need.blas_threads == 0
          ? std::string()
          : est::Concat(": OpenBLAS, LibTorch's BLAS, takes a ", DescribeBytes(double(need.blas_buffer_bytes)),
                        " buffer for each of its ", need.blas_threads,
                        " threads' matrix products and retries for ever when it cannot; threads, batches "
                        "and checkpoints take the rest");
  EST_THROW(ConfigError, "the address-space limit (ulimit -v ", *limit / 1024, ") leaves ", DescribeBytes(double(left)),
            " beyond the ", DescribeBytes(double(in_use)), " this process has mapped, and training needs ",
            DescribeBytes(double(need.total())), blas, ". Allow at least ",
            (in_use + need.total() + 1023) / 1024, " KiB (ulimit -v), or lift the limit (ulimit -v unlimited)",
            need.blas_threads > 1 ? "; with OPENBLAS_NUM_THREADS=1 OpenBLAS takes one buffer" : "");
}

void CheckAddressSpaceForTraining() {
  const std::optional<uint64_t> limit = AddressSpaceLimitBytes();
  if (!limit) return;
  CheckAddressSpaceRoom(limit, AddressSpaceInUseBytes(), TrainingAddressSpaceNeed());
}

}  // namespace est
