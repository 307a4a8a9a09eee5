#include "data/ops/autotune.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include "common/thread_scheduling.h"
#include "data/dataset.h"

namespace est::data {

size_t AutotunedThreads() { return AutotunedThreads(AllowedCpus(), at::get_num_threads()); }

size_t AutotunedThreads(int allowed_cpus, int intra_op_threads) {
  return static_cast<size_t>(std::max(1, allowed_cpus - intra_op_threads));
}

size_t ResolveThreads(int64_t value) {
  return value == kAutotune ? AutotunedThreads() : static_cast<size_t>(value);
}

}  // namespace est::data
