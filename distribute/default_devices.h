#pragma once
/// The devices a strategy takes when none are given, as TensorFlow's: every GPU of the host
/// for one process, and one GPU per task for tasks a launcher started with a local rank.

#include <string>
#include <vector>

namespace est::distribute {

/// How many CUDA devices LibTorch sees on this host; 0 where it has no CUDA.
int CudaDeviceCount();

/// MirroredStrategy's devices when none are given (tf.distribute.MirroredStrategy()): every
/// CUDA device, "cuda:0" to "cuda:<n - 1>", or {"cpu"} where there is none.
std::vector<std::string> EveryLocalDevice(int cuda_devices);

/// The device of a task that is `local_rank` among the tasks of its host (LOCAL_RANK,
/// SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, the order of est-launch's tasks) when none is
/// given: "cuda:<local_rank>", or "cpu" where there is no CUDA device. ConfigError when the
/// host has GPUs but fewer than local_rank + 1: two tasks on one GPU would fail in NCCL.
std::string DeviceOfLocalRank(int local_rank, int cuda_devices);

}  // namespace est::distribute
