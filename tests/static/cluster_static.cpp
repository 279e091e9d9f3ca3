// SPDX-License-Identifier: MIT
// Compile-time facts: this file passes when it compiles.
#include <hetlaunch/cluster.hpp>

namespace {
constexpr auto c = hetlaunch::make_cluster({{"node0", 8}, {"node1", 4}, {"node2", 2}});
static_assert(c.world_size() == 14, "");
static_assert(c.rank_offset(0) == 0 && c.rank_offset(1) == 8 && c.rank_offset(2) == 12, "");
static_assert(c.locate(13) == hetlaunch::rank_location{2, 1}, "");
HETLAUNCH_STATIC_VALIDATE(c);

void block_scope_use() {
  constexpr auto local = hetlaunch::make_cluster({{"a", 1}});
  HETLAUNCH_STATIC_VALIDATE(local);
}

struct in_a_class {
  static constexpr auto topology = hetlaunch::make_cluster({{"a", 2}, {"b", 2}});
  HETLAUNCH_STATIC_VALIDATE(topology);
};

// The results of constant evaluation can size arrays and pick template arguments.
int per_rank[c.world_size()];
template <int World>
struct job {};
job<c.world_size()> j;
}  // namespace

void hetlaunch_static_anchor();
void hetlaunch_static_anchor() {
  block_scope_use();
  (void)per_rank;
  (void)j;
  (void)in_a_class::topology;
}
