#pragma once
/// Task addresses: the "host:port" strings of TF_CONFIG, torchrun, MPI and Slurm.

#include <optional>
#include <string>

#include "distribute/cluster/cluster_environment.h"

namespace est::distribute {

/// A task address split into its parts.
struct HostPort {
  /// Host name or IP address; an IPv6 literal without its brackets.
  std::string host;
  /// TCP port in [1, 65535].
  int port = 0;
};

/// Splits "host:port" (IPv6 as "[::1]:2222"). Throws ConfigError naming `what` (e.g.
/// `job "worker" task 1`) and quoting `address` unless the host is non-empty and the port is
/// a number in [1, 65535].
HostPort ParseHostPort(const std::string& address, const std::string& what);

/// Parses a TCP port; throws ConfigError naming `what` and quoting `text` unless it is a
/// number in [1, 65535].
int ParsePort(const std::string& text, const std::string& what);

/// The chief's port where a launcher names only its host (Slurm, MPI): MASTER_PORT; else,
/// inside a Slurm job, 15000 + the last four digits of SLURM_JOB_ID (PyTorch Lightning's rule,
/// so that two jobs sharing a node do not share a port); else 29500, torch.distributed's
/// default. ConfigError quoting a bad value.
int DefaultMasterPort(const Environment& env);

/// "host:port", with an IPv6 host in brackets.
std::string JoinHostPort(const std::string& host, int port);

/// True for "localhost", 127.0.0.0/8 and "::1".
bool IsLoopbackHost(const std::string& host);

/// The local IP address from which this machine reaches `host`: the address a UDP socket
/// connected toward it is bound to (connecting sends nothing). nullopt when `host` does not
/// resolve or no route leads there.
std::optional<std::string> LocalAddressToward(const std::string& host, int port);

}  // namespace est::distribute
