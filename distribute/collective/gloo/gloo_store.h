#pragma once
/// Our Store seen through Gloo's rendezvous::Store interface, which Gloo's full-mesh
/// connection uses to exchange the ranks' addresses. No Gloo header here.

#include <chrono>
#include <memory>

#include "distribute/rendezvous/store.h"

namespace gloo::rendezvous {
class Store;
}  // namespace gloo::rendezvous

namespace est::distribute::detail {

/// `store` as a gloo::rendezvous::Store. Gloo's get() and wait() without a timeout wait at
/// most `timeout`; every wait throws our TimeoutError naming the missing keys.
std::unique_ptr<gloo::rendezvous::Store> CreateGlooStore(std::shared_ptr<Store> store,
                                                         std::chrono::milliseconds timeout);

}  // namespace est::distribute::detail
