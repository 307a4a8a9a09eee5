// CreateNcclCollective in a build without the NCCL collective, which needs a CUDA LibTorch, the
// CUDA toolkit and NCCL (distribute/collective/nccl/nccl_collective.cc defines it where they are).

#include "common/config.h"

#if !(EST_WITH_NCCL && EST_WITH_CUDA)

#include "common/error.h"
#include "distribute/collective/nccl/nccl_collective.h"

namespace est::distribute {

std::unique_ptr<Collective> CreateNcclCollective(std::shared_ptr<Store>, int rank, int world_size, c10::Device device,
                                                 const NcclCollectiveOptions&) {
  EST_THROW(ConfigError, "NCCL collective of rank ", rank, " of ", world_size, " on ", device.str(),
            ": this build has no NCCL collective (EST_WITH_NCCL=", EST_WITH_NCCL, ", EST_WITH_CUDA=", EST_WITH_CUDA,
            "; it needs a CUDA LibTorch, the CUDA toolkit and NCCL: see docs/cuda.md, \"Building with CUDA\"); "
            "use the Gloo collective");
}

}  // namespace est::distribute

#endif
