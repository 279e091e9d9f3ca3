// SPDX-License-Identifier: MIT
// shares.hpp: the split of a global batch over nodes and ranks by weight, checked against an
// independent reference of the rule for random topologies, its properties, its limits, and how
// the plan, the environments and check_worker_env carry it.
#include <doctest/doctest.h>

#include <hetlaunch/hostfile.hpp>
#include <hetlaunch/plan.hpp>
#include <hetlaunch/shares.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

__extension__ typedef unsigned __int128 u128;

// The rule as written, by another route: weights read digit by digit into millionths, every
// node's exact share E * d_i / D as (quotient, remainder), the leftovers by sorting all nodes.
std::vector<hetlaunch::node_batch> reference_split(const std::vector<int>& nproc,
                                                   const std::vector<std::string>& weight,
                                                   long long global_batch) {
  const std::size_t n = nproc.size();
  std::vector<u128> d(n);
  u128 total = 0;
  long long world = 0;
  for (std::size_t i = 0; i < n; ++i) {
    u128 micros = 0;
    int fraction = -1;
    for (char c : weight[i]) {
      if (c == '.') {
        fraction = 0;
        continue;
      }
      micros = micros * 10 + static_cast<u128>(c - '0');
      if (fraction >= 0) ++fraction;
    }
    for (int k = fraction < 0 ? 0 : fraction; k < 6; ++k) micros *= 10;
    d[i] = micros * static_cast<u128>(nproc[i]);
    total += d[i];
    world += nproc[i];
  }
  const u128 extra = static_cast<u128>(global_batch - world);
  std::vector<hetlaunch::node_batch> out(n);
  std::vector<std::pair<u128, std::size_t>> remainders;
  long long given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const u128 q = extra * d[i] / total;
    out[i].batch = nproc[i] + static_cast<int>(q);
    given += static_cast<long long>(q);
    remainders.emplace_back(extra * d[i] % total, i);
  }
  std::sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (long long k = 0; k < global_batch - world - given; ++k)
    ++out[remainders[static_cast<std::size_t>(k)].second].batch;
  long long offset = 0;
  for (auto& b : out) {
    b.offset = static_cast<int>(offset);
    offset += b.batch;
  }
  return out;
}

struct weighted_topology {
  std::vector<int> nproc;
  std::vector<std::string> weight;
  hetlaunch::cluster make() const {
    hetlaunch::cluster_builder b;
    for (std::size_t i = 0; i < nproc.size(); ++i)
      b.add(std::string("n").append(std::to_string(i)), nproc[i], "default", weight[i]);
    return b.finish();
  }
  int world() const {
    int w = 0;
    for (int p : nproc) w += p;
    return w;
  }
};

const char* const some_weights[] = {"1",        "2",       "3",        "0.5", "2.5", "1.000001",
                                    "0.000001", "1000000", "7.123456", "1.5", "03"};

weighted_topology random_topology(std::mt19937& rng, std::size_t max_nodes) {
  weighted_topology t;
  const std::size_t n = 1 + rng() % max_nodes;
  for (std::size_t i = 0; i < n; ++i) {
    t.nproc.push_back(1 + static_cast<int>(rng() % 8));
    t.weight.emplace_back(some_weights[rng() % (sizeof some_weights / sizeof *some_weights)]);
  }
  return t;
}

}  // namespace

TEST_SUITE("shares") {
  TEST_CASE(
      "the split follows the rule exactly, for random topologies, weights and global batches") {
    std::mt19937 rng(2026);
    for (int trial = 0; trial < 3000; ++trial) {
      const weighted_topology t = random_topology(rng, trial < 2000 ? 6 : 200);
      const int world = t.world();
      const int global_batch = trial % 10 == 0 ? INT_MAX : world + static_cast<int>(rng() % 500);
      const auto split = hetlaunch::split_batch(t.make(), global_batch);
      REQUIRE(split);
      const auto want = reference_split(t.nproc, t.weight, global_batch);
      REQUIRE(*split == want);
      long long sum = 0;
      for (std::size_t i = 0; i < t.nproc.size(); ++i) {
        const auto node = (*split)[i];
        CHECK(node.batch >= t.nproc[i]);  // every rank at least one sample
        long long ranks_sum = 0;
        int next = node.offset;
        for (int l = 0; l < t.nproc[i]; ++l) {
          const auto r = hetlaunch::batch_of_rank(node, t.nproc[i], l);
          CHECK(r.batch >= 1);
          CHECK(r.offset == next);  // ranks tile their node's samples in local-rank order
          next += r.batch;
          ranks_sum += r.batch;
        }
        CHECK(ranks_sum == node.batch);
        sum += node.batch;
      }
      CHECK(sum == global_batch);
    }
  }

  TEST_CASE(
      "equal nodes get equal shares, the lower index the one left over; a heavier node never gets less") {
    std::mt19937 rng(17);
    for (int trial = 0; trial < 1500; ++trial) {
      weighted_topology t = random_topology(rng, 8);
      const int global_batch = t.world() + static_cast<int>(rng() % 300);
      const auto split = hetlaunch::split_batch(t.make(), global_batch).value();
      for (std::size_t i = 0; i < t.nproc.size(); ++i)
        for (std::size_t j = i + 1; j < t.nproc.size(); ++j)
          if (t.nproc[i] == t.nproc[j] && hetlaunch::check_weight(t.weight[i]).micros ==
                                              hetlaunch::check_weight(t.weight[j]).micros) {
            CHECK(split[i].batch - split[j].batch >= 0);
            CHECK(split[i].batch - split[j].batch <= 1);
          }
      // Monotone: raising one node's weight, the others fixed, never lowers its share.
      const std::size_t k = rng() % t.nproc.size();
      weighted_topology heavier = t;
      heavier.weight[k] = std::to_string(
          std::min<std::int64_t>(hetlaunch::check_weight(t.weight[k]).micros / 1000000 + 1 +
                                     static_cast<std::int64_t>(rng() % 5),
                                 1000000));
      const auto after = hetlaunch::split_batch(heavier.make(), global_batch).value();
      CHECK(after[k].batch >= split[k].batch);
    }
  }

  TEST_CASE(
      "the largest inputs: a world of INT_MAX workers, INT_MAX samples, weights at both ends") {
    const hetlaunch::cluster c{
        {"a", 1, "default", "1000000"}, {"b", INT_MAX - 2, "default", "0.000001"}, {"c", 1}};
    const auto split = hetlaunch::split_batch(c, INT_MAX).value();
    CHECK(split == reference_split({1, INT_MAX - 2, 1}, {"1000000", "0.000001", "1"}, INT_MAX));
    const hetlaunch::cluster two{{"a", 1, "default", "1000000"}, {"b", 1, "default", "0.000001"}};
    const auto far = hetlaunch::split_batch(two, INT_MAX).value();
    CHECK(far == reference_split({1, 1}, {"1000000", "0.000001"}, INT_MAX));
    CHECK(far[1].batch ==
          1);  // (2^31 - 3) / (10^12 + 1) of a sample: less than the other's remainder
    const hetlaunch::cluster big{{"a", INT_MAX / 2, "default", "999999.999999"},
                                 {"b", INT_MAX / 2 + 1, "default", "1000000"}};
    CHECK(hetlaunch::split_batch(big, INT_MAX).value() ==
          reference_split({INT_MAX / 2, INT_MAX / 2 + 1}, {"999999.999999", "1000000"}, INT_MAX));
    CHECK(hetlaunch::split_batch(big, INT_MAX - 1).error().code ==
          hetlaunch::errc::global_batch_too_small);
  }

  TEST_CASE(
      "usable in constant expressions on a fixed topology, with the run-time split's result") {
    constexpr auto c = hetlaunch::make_cluster(
        {{"a100", 8, "default", "3"}, {"t4", 4}, {"v100", 2, "default", "1.5"}});
    constexpr auto s = hetlaunch::split_batch(c, 1000);
    static_assert(!s.error, "a valid split");
    static_assert(s.node(0).batch + s.node(1).batch + s.node(2).batch == 1000, "all samples");
    static_assert(s.node(1).offset == s.node(0).batch, "offsets are prefix sums");
    static_assert(hetlaunch::batch_of_rank(s.node(0), 8, 7).offset +
                          hetlaunch::batch_of_rank(s.node(0), 8, 7).batch ==
                      s.node(1).offset,
                  "ranks tile the node");
    const auto runtime = hetlaunch::split_batch(hetlaunch::cluster(c), 1000).value();
    for (std::size_t i = 0; i < 3; ++i) CHECK(runtime[i] == s.node(i));
    constexpr auto bad =
        hetlaunch::split_batch(hetlaunch::make_cluster({{"a", 2}, {"b", 2, "default", "0"}}), 10);
    static_assert(bad.error.code == hetlaunch::errc::bad_weight && bad.error.node == 1,
                  "the node is named");
    static_assert(
        hetlaunch::split_batch(c, 13).error.code == hetlaunch::errc::global_batch_too_small,
        "B < W");
    static_assert(
        hetlaunch::first_error(hetlaunch::make_cluster({{"a", 2, "default", "1e3"}})).code ==
            hetlaunch::errc::bad_weight,
        "validation refuses a bad weight");
  }

  TEST_CASE(
      "a weight is a positive decimal of at most 6 fractional digits, at most 1000000, read exactly") {
    using hetlaunch::weight_issue;
    const auto issue = [](const char* text) { return hetlaunch::check_weight(text).issue; };
    CHECK(hetlaunch::check_weight("1").micros == 1000000);
    CHECK(hetlaunch::check_weight("0.1").micros == 100000);
    CHECK(hetlaunch::check_weight("000.000001").micros == 1);
    CHECK(hetlaunch::check_weight("1000000").micros == 1000000000000);
    CHECK(hetlaunch::check_weight("1000000.000000").micros == 1000000000000);
    CHECK(issue("1000000.000001") == weight_issue::too_large);
    CHECK(issue("99999999999999999999999") == weight_issue::too_large);
    CHECK(issue("0") == weight_issue::zero);
    CHECK(issue("0.000000") == weight_issue::zero);
    CHECK(issue("-1") == weight_issue::negative);
    CHECK(issue("1.0000001") == weight_issue::too_many_digits);
    CHECK(hetlaunch::check_weight("1.0000001").position == 8);
    for (const char* text :
         {"nan", "inf", "1e3", "+2", ".5", "1.", "1..2", "1,5", "0x10", " 1", "1 ", "１"})
      CHECK_MESSAGE(issue(text) == weight_issue::not_a_decimal, text);
    CHECK(issue("") == weight_issue::empty);
    CHECK(hetlaunch::check_weight("12a").position == 2);
  }

  TEST_CASE("bad input names the node, or the line and column of a hostfile") {
    const auto problems =
        hetlaunch::validate(hetlaunch::cluster{{"a", 2}, {"b", 2, "default", "-1"}});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].message() ==
          "node 1 ('b'): weight '-1' is not valid: it is negative; a weight must be above 0");
    const auto parsed = hetlaunch::parse_hostfile("a slots=2\nb slots=2 weight=2.5x\n");
    REQUIRE(!parsed);
    CHECK(parsed.error().line == 2);
    CHECK(parsed.error().column == 21);  // the x
    CHECK(parsed.error().code == hetlaunch::errc::bad_weight);
    const auto twice = hetlaunch::parse_hostfile("a weight=2 weight=3\n");
    REQUIRE(!twice);
    CHECK(twice.error().to_string() == "line 1, column 12: weight is given twice for host 'a'");
    const auto read = hetlaunch::parse_hostfile("a slots=8 weight=2.50\nb:4\n").value();
    CHECK(read.node(0).weight == "2.50");  // as given
    CHECK(read.node(1).weight == "1");
    hetlaunch::launch_options o;
    o.global_batch = 3;
    const auto plan = hetlaunch::make_plan(hetlaunch::cluster{{"a", 2}, {"b", 2}}, o);
    REQUIRE(!plan);
    CHECK(
        plan.error().front().message() ==
        "the global batch 3 is smaller than the world size 4: every worker needs at least one sample a step");
    o.global_batch = -5;
    CHECK(hetlaunch::make_plan(hetlaunch::cluster{{"a", 2}}, o).error().front().code ==
          hetlaunch::errc::bad_global_batch);
  }

  TEST_CASE(
      "a cluster keeps its weights through copies, filters and set_weight, at a few bytes a node") {
    hetlaunch::cluster c{{"a", 2}, {"b", 4, "default", "2.5"}, {"c", 1}};
    CHECK(c.has_weights());
    c.set_weight(2, "0.5");
    c.set_weight(0, "1");
    const hetlaunch::cluster copy = c;
    CHECK(copy.node(0).weight == "1");
    CHECK(copy.node(1).weight == "2.5");
    CHECK(copy.node(2).weight == "0.5");
    hetlaunch::cluster plain{{"a", 2}};
    CHECK(!plain.has_weights());
    plain.set_weight(0, "1");
    CHECK(!plain.has_weights());
    const auto kept = hetlaunch::filter_devices(c, "b@c", "").value();
    CHECK(kept.node(0).weight == "2.5");
    CHECK(kept.node(1).weight == "0.5");
  }

  TEST_CASE("the plan carries the split to every environment, and check_worker_env checks it") {
    hetlaunch::launch_options o;
    o.global_batch = 13;
    o.script = "train.py";
    const hetlaunch::cluster c{{"a", 3}, {"b", 1, "default", "3"}};
    const auto plan = hetlaunch::make_plan(c, o).value();
    CHECK(plan.has_shares());
    CHECK(plan.node_batch_of(0) == hetlaunch::node_batch{8, 0});
    CHECK(plan.node_batch_of(1) == hetlaunch::node_batch{5, 8});
    CHECK(plan.rank_batch_of(0, 2) == hetlaunch::rank_batch{2, 6});
    CHECK(plan.try_rank_batch(0, 3).error().code == hetlaunch::errc::local_rank_out_of_range);
    const hetlaunch::environment agent{{"HETLAUNCH_GLOBAL_BATCH", "13"},
                                       {"HETLAUNCH_NODE_BATCH", "5"},
                                       {"HETLAUNCH_NODE_BATCH_OFFSET", "8"},
                                       {"HETLAUNCH_NODE_HOST", "b"}};
    CHECK(plan.agent_env(1) == agent);
    CHECK(hetlaunch::try_agent_env(c, 1, o).value() == agent);
    const auto env = plan.worker_env(1, 0);
    CHECK(std::equal(agent.begin(), agent.end(), env.end() - 4));
    CHECK(hetlaunch::worker_env(c, 1, 0, o) == env);
    CHECK(plan.direct_worker_env(1, 0).back() == agent.back());
    CHECK(hetlaunch::check_worker_env(plan, env).empty());
    // The host the sampler keeps its rates by: another, or none, is named with the node's.
    hetlaunch::environment moved(env.begin(), env.end() - 1);
    moved.emplace_back("HETLAUNCH_NODE_HOST", "a");
    REQUIRE(hetlaunch::check_worker_env(plan, moved).size() == 1);
    CHECK(hetlaunch::check_worker_env(plan, moved)[0].code == hetlaunch::errc::host_mismatch);
    CHECK(hetlaunch::check_worker_env(plan, moved)[0].message() ==
          "node 1 ('b'): HETLAUNCH_NODE_HOST is 'a' but the plan gives 'b'");
    moved.pop_back();
    CHECK(hetlaunch::check_worker_env(plan, moved).at(0).message() ==
          "node 1 ('b'): HETLAUNCH_NODE_HOST is not set; the plan gives 'b'");
    hetlaunch::environment wrong(env.begin(), env.end() - 2);
    wrong.emplace_back("HETLAUNCH_NODE_HOST", "b");
    wrong.emplace_back("HETLAUNCH_NODE_BATCH_OFFSET", "7");
    const auto problems = hetlaunch::check_worker_env(plan, wrong);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].message() ==
          "node 1 ('b'): HETLAUNCH_NODE_BATCH_OFFSET is '7' but the plan gives 8");
    // A batch is a count: "-8" is no number, where a negative rank is one (out of range).
    wrong.back().second = "-8";
    REQUIRE(hetlaunch::check_worker_env(plan, wrong).size() == 1);
    CHECK(hetlaunch::check_worker_env(plan, wrong).at(0).message() ==
          "HETLAUNCH_NODE_BATCH_OFFSET='-8' is not an integer");
    wrong.pop_back();
    CHECK(hetlaunch::check_worker_env(plan, wrong).at(0).code == hetlaunch::errc::env_missing);
    // Without a global batch: no variable, and the split is refused with a reason.
    o.global_batch = 0;
    const auto none = hetlaunch::make_plan(c, o).value();
    CHECK(none.agent_env(1).empty());
    CHECK(none.try_node_batch(0).error().message() ==
          "the plan has no global batch (global_batch is 0), so it has no work shares");
    for (const auto& v : none.worker_env(0, 0)) CHECK(v.first.find("BATCH") == std::string::npos);
  }

  TEST_CASE("a split of many nodes hands out every sample") {
    hetlaunch::cluster_builder b;
    for (int i = 0; i < 200000; ++i)
      b.add(std::string("n").append(std::to_string(i)), 1 + i % 8, "default",
            i % 3 == 0 ? "2.5" : "1");
    const hetlaunch::cluster c = b.finish();
    const auto split = hetlaunch::split_batch(c, INT_MAX).value();
    long long sum = 0;
    for (const auto& s : split) sum += s.batch;
    CHECK(sum == INT_MAX);
  }
}
