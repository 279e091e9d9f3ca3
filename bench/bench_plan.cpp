// SPDX-License-Identifier: MIT
// The primitives behind `hetlaunch check` and `hetlaunch plan`, from 1 000 to 1 000 000 nodes:
// parsing a hostfile (against splitting the same text into lines, the floor of any parser),
// every node's torchrun command from a plan validated once, and a plan with work shares (a
// global batch split by weight) against the same plan without.
#include <benchmark/benchmark.h>
#include <hetlaunch/hostfile.hpp>
#include <hetlaunch/plan.hpp>

#include "fixture_cache.hpp"

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct fixture {
  std::string text;
  hetlaunch::cluster nodes;
  explicit fixture(std::size_t n) {
    char line[64];
    for (std::size_t i = 0; i < n; ++i) {
      std::snprintf(line, sizeof line, "worker-%07zu slots=%zu\n", i, 1 + i % 8);
      text += line;
    }
    nodes = *hetlaunch::parse_hostfile(text);
  }
};

const fixture& get(std::size_t n) { return cached_fixture<fixture>(n); }

void parse_hostfile(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(hetlaunch::parse_hostfile(f.text));
  state.SetComplexityN(state.range(0));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * f.text.size()));
}

void split_lines(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  std::vector<std::string_view> lines;
  for (auto _ : state) {
    lines.clear();
    std::string_view rest = f.text;
    for (std::size_t end; (end = rest.find('\n')) != std::string_view::npos;
         rest.remove_prefix(end + 1))
      lines.push_back(rest.substr(0, end));
    benchmark::DoNotOptimize(lines.data());
  }
  state.SetComplexityN(state.range(0));
}

void plan_commands(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  hetlaunch::launch_options o;
  o.script = "train.py";
  for (auto _ : state) {
    const auto plan = hetlaunch::make_plan(f.nodes, o);
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < f.nodes.node_count(); ++i)
      bytes += hetlaunch::shell_join(plan->torchrun_argv(i)).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetComplexityN(state.range(0));
}

// The plan alone (validation and copies), without and with a global batch over weighted nodes
// (a third of them weighing 2.5): the split's cost is the difference.
hetlaunch::cluster weighted(const hetlaunch::cluster& c) {
  hetlaunch::cluster out = c;
  for (std::size_t i = 0; i < out.node_count(); i += 3) out.set_weight(i, "2.5");
  return out;
}

void make_plan(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  const hetlaunch::cluster nodes = weighted(f.nodes);
  hetlaunch::launch_options o;
  o.script = "train.py";
  for (auto _ : state) benchmark::DoNotOptimize(hetlaunch::make_plan(nodes, o));
  state.SetComplexityN(state.range(0));
}

void make_plan_with_shares(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  const hetlaunch::cluster nodes = weighted(f.nodes);
  hetlaunch::launch_options o;
  o.script = "train.py";
  o.global_batch = 2147483647;
  for (auto _ : state) benchmark::DoNotOptimize(hetlaunch::make_plan(nodes, o));
  state.SetComplexityN(state.range(0));
}

void split_batch(benchmark::State& state) {
  const fixture& f = get(static_cast<std::size_t>(state.range(0)));
  const hetlaunch::cluster nodes = weighted(f.nodes);
  for (auto _ : state) benchmark::DoNotOptimize(hetlaunch::split_batch(nodes, 2147483647));
  state.SetComplexityN(state.range(0));
}

}  // namespace

BENCHMARK(make_plan)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
BENCHMARK(make_plan_with_shares)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
BENCHMARK(split_batch)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
BENCHMARK(parse_hostfile)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
BENCHMARK(split_lines)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
BENCHMARK(plan_commands)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
