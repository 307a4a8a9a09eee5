#pragma once
/// BackwardOverlap: whether gradient buckets are all-reduced while backward still runs, or
/// once it has ended.

#include <string>

namespace est::distribute {

class Collective;

/// When the GradientReducer all-reduces a full bucket.
enum class BackwardOverlap {
  kAuto,    ///< while backward runs, unless that takes backward's own cores (OverlapsBackward)
  kAlways,  ///< while backward runs, as soon as the bucket is full (DDP's way)
  kNever,   ///< after backward, every bucket in order
};

/// "auto", "always" or "never".
const char* BackwardOverlapName(BackwardOverlap overlap);
/// The setting named `name`; ConfigError naming `what` (the flag or option) and the names
/// accepted otherwise.
BackwardOverlap ParseBackwardOverlap(const std::string& name, const std::string& what);

/// Whether a rank has a core beside its intra-op threads: the cores it may run on
/// (`cpus_of_process`, its affinity), at most its share of the machine's `machine_cpus`
/// among the `ranks_on_host`, are more than `intra_op_threads`.
bool HasSpareCore(int cpus_of_process, int machine_cpus, int ranks_on_host, int intra_op_threads);

/// Whether buckets go while backward runs. kAuto overlaps unless the all-reduce is copies
/// and sums on the CPU (Collective::allreduce_computes_on_cpu, all ranks on this host) and
/// this rank has no spare core (HasSpareCore with this process's affinity, the machine's
/// CPUs, the collective's ranks and LibTorch's intra-op threads): then the communication
/// thread and backward would take turns on the same cores, the step would be no shorter
/// and the all-reduce would run at a fraction of its speed.
bool OverlapsBackward(BackwardOverlap overlap, const Collective& collective);

}  // namespace est::distribute
