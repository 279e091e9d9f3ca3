// SPDX-License-Identifier: MIT
// The rank queries fixed_cluster and cluster share (topology_queries.hpp): what torchrun's
// elastic agent assigns with the static rendezvous, computed ahead of time.
#include <doctest/doctest.h>

#include <hetlaunch/cluster.hpp>

using hetlaunch::cluster;
using hetlaunch::make_cluster;
using hetlaunch::rank_location;

namespace {

// The worked example of the design: 8 + 4 + 2 workers.
constexpr auto mixed = make_cluster({{"node0", 8}, {"node1", 4}, {"node2", 2}});

constexpr bool worked_example_holds() {
  return mixed.node_count() == 3 && mixed.world_size() == 14 && mixed.rank_offset(0) == 0 &&
         mixed.rank_offset(1) == 8 && mixed.rank_offset(2) == 12 && mixed.nproc(1) == 4 &&
         mixed.global_rank(1, 3) == 11 && mixed.locate(13) == rank_location{2, 1} &&
         mixed.locate(8) == rank_location{1, 0} && mixed.locate(7) == rank_location{0, 7} &&
         mixed.node(2).host == "node2" && mixed.node(2).role == "default";
}
static_assert(worked_example_holds(), "8 + 4 + 2: world 14, offsets 0/8/12, rank 13 on node 2");

// Two roles, interleaved: role ranks are prefix sums over the nodes of the same role.
constexpr auto two_roles =
    make_cluster({{"t0", 2, "trainer"}, {"p0", 3, "ps"}, {"t1", 4, "trainer"}, {"p1", 1, "ps"}});

constexpr bool role_ranks_follow_torchrun() {
  return two_roles.role_world_size(0) == 6 && two_roles.role_world_size(2) == 6 &&
         two_roles.role_world_size(1) == 4 && two_roles.role_world_size(3) == 4 &&
         two_roles.role_rank(0, 1) == 1 && two_roles.role_rank(2, 0) == 2 &&
         two_roles.role_rank(2, 3) == 5 && two_roles.role_rank(1, 0) == 0 &&
         two_roles.role_rank(3, 0) == 3 && two_roles.global_rank(3, 0) == 9 &&
         two_roles.world_size() == 10;
}
static_assert(role_ranks_follow_torchrun(), "role ranks count within a role, in node order");

constexpr bool checked_variants_report_out_of_range() {
  return !mixed.try_nproc(3) &&
         mixed.try_nproc(3).error().code == hetlaunch::errc::node_out_of_range &&
         mixed.try_global_rank(1, 4).error().code == hetlaunch::errc::local_rank_out_of_range &&
         mixed.try_global_rank(1, -1).error().code == hetlaunch::errc::local_rank_out_of_range &&
         mixed.try_locate(14).error().code == hetlaunch::errc::global_rank_out_of_range &&
         mixed.try_locate(-1).error().code == hetlaunch::errc::global_rank_out_of_range &&
         *mixed.try_global_rank(2, 1) == 13 && *mixed.try_locate(12) == rank_location{2, 0} &&
         *mixed.try_rank_offset(2) == 12 && mixed.try_node(0)->host == "node0" &&
         *mixed.try_role_rank(1, 2) == 10 && *mixed.try_role_world_size(0) == 14 &&
         mixed.try_role_rank(0, 8).error().code == hetlaunch::errc::local_rank_out_of_range &&
         mixed.try_role_world_size(9).error().code == hetlaunch::errc::node_out_of_range;
}
static_assert(checked_variants_report_out_of_range(), "try_* return a diagnostic, never UB");

static_assert(noexcept(mixed.locate(0)) && noexcept(mixed.global_rank(0, 0)) && noexcept(
                  mixed.try_locate(99)),
              "rank math never throws");

}  // namespace

TEST_SUITE("topology_queries") {
  TEST_CASE("the worked example holds at compile time and at run time") {
    CHECK(worked_example_holds());
    const cluster c(mixed);
    CHECK(c.world_size() == 14);
    CHECK(c.rank_offset(1) == 8);
    CHECK(c.rank_offset(2) == 12);
    CHECK(c.locate(13) == rank_location{2, 1});
  }

  TEST_CASE("role ranks are prefix sums within a role") {
    CHECK(role_ranks_follow_torchrun());
    const cluster c(two_roles);
    CHECK(c.role_rank(2, 3) == 5);
    CHECK(c.role_world_size(1) == 4);
    CHECK(c.role_rank(3, 0) == 3);
  }

  TEST_CASE("with one role, role ranks equal global ranks") {
    for (std::size_t i = 0; i < mixed.node_count(); ++i)
      for (int l = 0; l < mixed.nproc(i); ++l) {
        CHECK(mixed.role_rank(i, l) == mixed.global_rank(i, l));
        CHECK(mixed.role_world_size(i) == mixed.world_size());
      }
  }

  TEST_CASE("checked variants report the argument that is out of range") {
    CHECK(checked_variants_report_out_of_range());
    const cluster c(mixed);
    CHECK(c.try_nproc(7).error().message() ==
          "node index 7 is out of range: the cluster has 3 nodes");
    CHECK(c.try_global_rank(1, 4).error().message() ==
          "node 1 ('node1'): local rank 4 is out of range: the node runs 4 workers");
    CHECK(c.try_locate(14).error().message() ==
          "global rank 14 is out of range: the world size is 14");
    CHECK(*c.try_global_rank(2, 1) == 13);
  }

  TEST_CASE("an empty cluster has world size 0 and no nodes") {
    const cluster empty;
    CHECK(empty.node_count() == 0);
    CHECK(empty.world_size() == 0);
    CHECK(empty.try_locate(0).error().code == hetlaunch::errc::global_rank_out_of_range);
    CHECK(empty.try_node(0).error().code == hetlaunch::errc::node_out_of_range);
  }

  TEST_CASE("a single node holds every rank") {
    constexpr auto one = make_cluster({{"solo", 3}});
    static_assert(one.world_size() == 3 && one.locate(2) == rank_location{0, 2}, "");
    CHECK(one.rank_offset(0) == 0);
  }
}
