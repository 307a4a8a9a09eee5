#pragma once
// The private directory that holds a connection gate's Unix socket, and the removal of those
// that gates killed before they could remove their own (SIGKILL, the OOM killer) left behind.

#include <chrono>
#include <string>

namespace est::net {

/// Where gates make their directories: TMPDIR when its path leaves room for a socket's name
/// (108 bytes in all), else /tmp.
std::string GateDirectoryBase();

/// Makes a directory only this user can enter under `base`, named est-gate-XXXXXX. First
/// removes the est-gate- directories of `base` that are abandoned: this user's, unchanged for
/// `abandoned_after`, and holding nothing but a socket that no process listens on.
std::string MakeGateSocketDirectory(const std::string& base,
                                    std::chrono::seconds abandoned_after = std::chrono::seconds(60));

}  // namespace est::net
