#pragma once
/// ListenerFilter: what a listening TCP socket that its owner binds to every interface lets
/// through: the connections addressed to one host, as binding that host's address would,
/// and requests that arrive whole within a time limit. Its user: the c10d TCPStore server
/// behind the chief's StoreFront, which binds every interface, confined to loopback (the
/// time limit matters before LibTorch 2.4, whose server serves requests one at a time).

#include <chrono>
#include <cstdint>
#include <string>

namespace est::distribute {

/// Finds this process's listening TCP socket on `port` that is bound to every interface
/// and attaches a socket filter that drops every packet not addressed to an address of
/// `host` (all of them, when `host` resolves to several): a connection to another address
/// of this machine is never established (its connect times out, as behind a firewall that
/// drops it). Connections accepted before the call are not affected. Does nothing when
/// `host` is a wildcard ("0.0.0.0", "::"). Throws CommunicationError naming the port and
/// host when `host` does not resolve, no such socket exists, or the kernel refuses the filter.
void ConfineListenerToHost(uint16_t port, const std::string& host);

/// Sets the receive and send timeouts of this process's listening TCP socket on `port`
/// bound to every interface to `limit`; the connections it accepts from then on inherit
/// them. A server that blocks on one client at a time (c10d's store daemon) then gives up,
/// after `limit`, on a client that sent part of a request and stalled, or that does not read
/// its replies, instead of waiting for it forever while every other client waits. Throws
/// CommunicationError naming the port when there is no such socket or the kernel refuses.
void LimitListenerIoTime(uint16_t port, std::chrono::milliseconds limit);

}  // namespace est::distribute
