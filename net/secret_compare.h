#pragma once
/// Comparing secrets (job tokens, bearer tokens) without telling an attacker, by the time
/// taken, where a guess first differs.

#include <string>

namespace est::net {

/// True when `a` equals `b`, in a time that depends on the longer one's length only.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace est::net
