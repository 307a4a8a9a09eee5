#pragma once
/// Our Store over one of LibTorch's c10d stores (TCPStore, HashStore); used by the store
/// factories. No c10d header here: c10d::Store is only named.

#include <c10/util/intrusive_ptr.h>

#include <memory>
#include <string>

#include "distribute/rendezvous/store.h"

namespace c10d {
class Store;
}  // namespace c10d

namespace est::distribute::detail {

/// `store` as a Store described as `description`. c10d's errors (c10::Error, and
/// std::system_error from a lost connection) become CommunicationError naming the store and
/// the keys. Waits poll c10d's check() instead of calling c10d's wait(): a TCPStore client
/// whose wait timed out reads the server's late answer as the reply to its next request
/// (LibTorch 1.13), so a timed-out wait must leave nothing pending on the server.
std::shared_ptr<Store> WrapC10dStore(c10::intrusive_ptr<c10d::Store> store, std::string description);

/// Raises LibTorch's C++ log level to errors, once per process, unless TORCH_CPP_LOG_LEVEL
/// sets it: c10d logs a warning with a LibTorch backtrace when a peer's connection drops
/// (LibTorch 2.x), which every store call here reports as a CommunicationError instead.
void QuietC10dWarnings();

}  // namespace est::distribute::detail
