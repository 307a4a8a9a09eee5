#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "distribute/rendezvous/c10d_store.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {

std::shared_ptr<Store> CreateInMemoryStore() {
  return detail::WrapC10dStore(c10::make_intrusive<c10d::HashStore>(), "in-memory store");
}

}  // namespace est::distribute
