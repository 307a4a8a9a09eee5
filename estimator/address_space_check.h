#pragma once
// Training under an address-space limit (ulimit -v). OpenBLAS, LibTorch's BLAS on Debian,
// takes a 129 MiB buffer for each of its threads' matrix products, and when malloc refuses
// one it retries for ever at 100 % CPU, deaf to stop signals. So the room left is checked
// before training starts, and a limit too small for it is an error that says how much to allow.

#include <cstdint>
#include <optional>

namespace est {

/// OpenBLAS 0.3's buffer for one thread's matrix products (BUFFER_SIZE), with its guard
/// pages and alignment, as it asks malloc for it; its initializer takes one before main().
inline constexpr uint64_t kOpenBlasBufferBytes = 135266304;

/// The address space training needs beyond what the process has mapped when it starts.
struct AddressSpaceNeed {
  uint64_t blas_buffer_bytes = 0;  ///< one BLAS thread's buffer (OpenBLAS's: 129 MiB)
  int blas_threads = 0;            ///< threads that may each take one (0: not OpenBLAS)
  uint64_t margin_bytes = 0;       ///< threads' stacks and arenas, batches, checkpoints
  /// All of it, in bytes.
  uint64_t total() const { return blas_buffer_bytes * static_cast<uint64_t>(blas_threads) + margin_bytes; }
};

/// This process's need: OpenBLAS's buffers for its thread count, where OpenBLAS is loaded,
/// and a 256 MiB margin.
AddressSpaceNeed TrainingAddressSpaceNeed();

/// ConfigError naming the limit, what is mapped and what is needed, when `limit` (bytes; none:
/// no limit) leaves less than `need` beyond `in_use` (bytes).
void CheckAddressSpaceRoom(std::optional<uint64_t> limit, uint64_t in_use, const AddressSpaceNeed& need);

/// CheckAddressSpaceRoom for this process: its ulimit -v, what it has mapped now, and
/// TrainingAddressSpaceNeed(). Estimator's constructor calls it; a program may call it
/// earlier, before it starts threads of its own.
void CheckAddressSpaceForTraining();

}  // namespace est
