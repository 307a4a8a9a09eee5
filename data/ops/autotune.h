#pragma once
/// Internal: the thread count kAutotune stands for in a map or an interleave.

#include <cstddef>
#include <cstdint>

#include "data/dataset.h"

namespace est::data {

/// AutotunedThreads() (data/dataset.h) of a thread allowed `allowed_cpus` CPUs in a process
/// that runs `intra_op_threads`: the difference, at least one. More would take turns with
/// the step on its own cores and slow it (the input pipeline benchmark).
size_t AutotunedThreads(int allowed_cpus, int intra_op_threads);

/// `value` as a thread count, AutotunedThreads() for kAutotune; counted when an iterator is
/// made, so that it sees the intra-op threads the run set.
size_t ResolveThreads(int64_t value);

}  // namespace est::data
