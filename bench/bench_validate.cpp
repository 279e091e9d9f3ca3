// SPDX-License-Identifier: MIT
// validate() against sorting the host names, the floor for finding duplicates, from 1 000 to
// 1 000 000 nodes.
#include <benchmark/benchmark.h>
#include <hetlaunch/cluster.hpp>

#include "fixture_cache.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct fixture {
  std::vector<std::string> names;
  hetlaunch::cluster nodes;
  explicit fixture(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
      names.push_back("gpu-node-" + std::to_string(i * 7919 % n) + ".rack" +
                      std::to_string(i % 64));
    std::vector<hetlaunch::node_spec> specs;
    for (const auto& h : names) specs.push_back({h, 8});
    nodes = hetlaunch::cluster(specs);
  }
};

const fixture& get(std::size_t n) { return cached_fixture<fixture>(n); }

void validate(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(hetlaunch::validate(f.nodes));
  state.SetComplexityN(state.range(0));
}

void sort_host_names(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  std::vector<std::string_view> views;
  for (auto _ : state) {
    views.assign(f.names.begin(), f.names.end());
    std::sort(views.begin(), views.end());
    benchmark::DoNotOptimize(std::adjacent_find(views.begin(), views.end()));
  }
  state.SetComplexityN(state.range(0));
}

}  // namespace

BENCHMARK(validate)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
BENCHMARK(sort_host_names)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
