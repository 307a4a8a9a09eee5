#include "distribute/cluster/cluster_slurm_nodelist.h"

#include <string>
#include <vector>

#include "common/error.h"
#include "tests/test_util.h"

using est::ConfigError;
using est::distribute::ExpandSlurmNodelist;
using est::testing::MessageMatches;

TEST_CASE("ExpandSlurmNodelist expands Slurm host lists in order", "[distribute]") {
  using Hosts = std::vector<std::string>;
  CHECK(ExpandSlurmNodelist("node07") == Hosts{"node07"});
  CHECK(ExpandSlurmNodelist("node[03-05,09],gpu7") == Hosts{"node03", "node04", "node05", "node09", "gpu7"});
  CHECK(ExpandSlurmNodelist("a,b.example.com,c") == Hosts{"a", "b.example.com", "c"});
  CHECK(ExpandSlurmNodelist("n[8-10]") == Hosts{"n8", "n9", "n10"});
  CHECK(ExpandSlurmNodelist("n[098-101]") == Hosts{"n098", "n099", "n100", "n101"});
  CHECK(ExpandSlurmNodelist("n[1-2]-ib") == Hosts{"n1-ib", "n2-ib"});
  CHECK(ExpandSlurmNodelist("r[1-2]n[1-2]") == Hosts{"r1n1", "r1n2", "r2n1", "r2n2"});
  CHECK(ExpandSlurmNodelist("x[1],y[2-3]") == Hosts{"x1", "y2", "y3"});
  CHECK(ExpandSlurmNodelist("[1-2]") == Hosts{"1", "2"});
  CHECK(ExpandSlurmNodelist("n[0-99999]").size() == 100000);
}

TEST_CASE("ExpandSlurmNodelist rejects malformed host lists, quoting them", "[distribute]") {
  for (const std::string nodelist :
       {"node[03-05", "node03]", "node[[1]]", "node[1]]", "node[]", "node[5-3]", "node[a-b]", "node[1-]", "node[-1]",
        "node[1,]", "a,,b", "a,", "n[1-2000000]", "n[1-1024]m[1-1025]"}) {
    CAPTURE(nodelist);
    CHECK_THROWS_MATCHES(ExpandSlurmNodelist(nodelist), ConfigError,
                         MessageMatches(Catch::Contains("\"" + nodelist + "\"")));
  }
  CHECK_THROWS_MATCHES(ExpandSlurmNodelist(""), ConfigError, MessageMatches(Catch::Contains("empty")));
  // A host name of 70 000 characters: refused, quoted once and shortened.
  const std::string long_name(70000, 'n');
  CHECK_THROWS_MATCHES(ExpandSlurmNodelist("a," + long_name), ConfigError,
                       MessageMatches(Catch::Equals("Slurm node list \"a," + long_name.substr(0, 62) +
                                                    "...\" (70002 characters) names a host of 70000 characters; a "
                                                    "host name has at most 253")));
}
