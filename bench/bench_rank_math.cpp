// SPDX-License-Identifier: MIT
// Rank math on large clusters: locate against a bare std::upper_bound over the same offsets (the
// floor for a lookup by global rank), and global_rank / rank_offset, which are O(1).
#include <benchmark/benchmark.h>
#include <hetlaunch/cluster.hpp>

#include "fixture_cache.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {

struct fixture {
  std::vector<std::string> names;
  hetlaunch::cluster nodes;
  std::vector<long long> ends;  // node i's ranks end before ends[i]
  std::vector<int> queries;
  explicit fixture(std::size_t n) {
    std::vector<hetlaunch::node_spec> specs;
    names.reserve(n);
    for (std::size_t i = 0; i < n; ++i) names.push_back("node" + std::to_string(i));
    for (std::size_t i = 0; i < n; ++i) specs.push_back({names[i], 1 + static_cast<int>(i % 8)});
    nodes = hetlaunch::cluster(specs);
    long long sum = 0;
    for (const auto& s : specs) ends.push_back(sum += s.nproc);
    std::uint64_t state = 7;
    for (int k = 0; k < 4096; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      queries.push_back(
          static_cast<int>((state >> 33) % static_cast<std::uint64_t>(nodes.world_size())));
    }
  }
};

const fixture& get(std::size_t n) { return cached_fixture<fixture>(n); }

void locate(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.nodes.locate(f.queries[k++ & 4095]));
  }
}

void upper_bound_floor(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  std::size_t k = 0;
  for (auto _ : state) {
    const long long g = f.queries[k++ & 4095];
    const auto it = std::upper_bound(f.ends.begin(), f.ends.end(), g);
    const std::size_t node = static_cast<std::size_t>(it - f.ends.begin());
    benchmark::DoNotOptimize(node);
    benchmark::DoNotOptimize(g - (node ? f.ends[node - 1] : 0));
  }
}

void global_rank(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  const std::size_t n = f.nodes.node_count();
  std::size_t k = 0;
  for (auto _ : state) {
    const std::size_t i = (k++ * 2654435761u) % n;
    benchmark::DoNotOptimize(f.nodes.global_rank(i, 0));
    benchmark::DoNotOptimize(f.nodes.rank_offset(i));
  }
}

}  // namespace

BENCHMARK(locate)->RangeMultiplier(10)->Range(1000, 1000000);
BENCHMARK(upper_bound_floor)->RangeMultiplier(10)->Range(1000, 1000000);
BENCHMARK(global_rank)->RangeMultiplier(10)->Range(1000, 1000000);
