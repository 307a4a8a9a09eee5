#pragma once
/// HostIdentity: what tells whether two processes run on one host, as far as sharing
/// memory and seeing each other's processes go.

#include <string>

namespace est::distribute::detail {

/// This process's host: the boot id and the IPC, PID and mount namespaces. Two processes
/// with the same identity can map one shared-memory segment and see each other's /proc.
/// Processes in different network namespaces started separately (simulated hosts) differ
/// in their mount namespace.
std::string HostIdentity();

}  // namespace est::distribute::detail
