#pragma once
/// How a re-formed training group deals its logical input shards among its members.

#include <vector>

namespace est::distribute {

/// The logical shards each of `workers` members reads after a change of members, from
/// `holders` (for each logical shard, the rank that holds it, or -1 where none does, as for a
/// lost member's): a member keeps what it holds; the unheld shards go in ascending order to
/// the member holding fewest (the lowest rank of those); then, while a member holds two more
/// than another (a newcomer holds none), its highest shard moves to the one holding fewest.
/// Each member's shards in ascending order. Throws InternalError for a holder out of range.
std::vector<std::vector<int>> DealLogicalShards(const std::vector<int>& holders, int workers);

}  // namespace est::distribute
