#pragma once
/// Slurm host lists: the compressed node lists of SLURM_NODELIST ("node[03-05,09],gpu7").

#include <string>
#include <vector>

namespace est::distribute {

/// Expands a Slurm host list in its order, keeping the zero padding of each range's lower
/// bound: "node[03-05,09],gpu7" -> node03 node04 node05 node09 gpu7; "r[1-2]n[1-2]" -> r1n1
/// r1n2 r2n1 r2n2. Throws ConfigError quoting `nodelist` when it is empty or malformed
/// (unbalanced or nested brackets, an empty item, a range that is not "N" or "N-M" with
/// N <= M) or names more than 1048576 hosts.
std::vector<std::string> ExpandSlurmNodelist(const std::string& nodelist);

}  // namespace est::distribute
