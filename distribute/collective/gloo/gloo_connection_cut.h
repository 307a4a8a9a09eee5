#pragma once
/// Cutting one of Gloo's TCP connections from outside Gloo, so that the operations waiting
/// on it fail at once rather than at Gloo's timeout.

#include <string>

namespace est::distribute::detail {

/// Shuts down, in both directions, this process's TCP connection from `local` to `peer`
/// (addresses as Gloo's tcp::Address writes them, "[10.0.0.2]:41234"; `local` is the
/// address of a connected pair's own end, `peer` that of the other end), which Gloo's event
/// loop then reads as closed by the peer: every operation waiting on the pair, and every later
/// one, fails with Gloo's "Connection closed by peer <address>". False when no such
/// connection is open. An empty `peer` matches any peer of `local`.
bool CutTcpConnection(const std::string& local, const std::string& peer);

}  // namespace est::distribute::detail
