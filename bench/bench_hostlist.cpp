// SPDX-License-Identifier: MIT
// Expanding a 100 000-host Slurm host list: hetlaunch against Slurm's own C implementation
// (slurm_hostlist_create + slurm_hostlist_shift, libslurm), each producing every name.
#include <benchmark/benchmark.h>
#include <hetlaunch/slurm.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#if HETLAUNCH_BENCH_LIBSLURM
#include <slurm/slurm.h>
#endif

namespace {

// Two ranges of 50 000 (Slurm refuses more than 65 536 hosts in one range), zero-padded.
const char* const expression = "node[000000-049999],node[050000-099999]";

void expand_hostlist(benchmark::State& state) {
  std::size_t hosts = 0;
  for (auto _ : state) {
    auto r = hetlaunch::expand_hostlist(expression);
    hosts = r->size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["hosts"] = static_cast<double>(hosts);
}
BENCHMARK(expand_hostlist)->Unit(benchmark::kMillisecond);

#if HETLAUNCH_BENCH_LIBSLURM
void slurm_hostlist(benchmark::State& state) {
  static const bool configured = [] {
    // libslurm reads its configuration when it creates a host list.
    const char* path = "/tmp/hetlaunch-bench-slurm.conf";
    std::ofstream(path) << "ClusterName=x\nSlurmctldHost=localhost\n";
    setenv("SLURM_CONF", path, 1);
    return true;
  }();
  (void)configured;
  std::size_t hosts = 0;
  for (auto _ : state) {
    hostlist_t list = slurm_hostlist_create(expression);
    hosts = 0;
    while (char* host = slurm_hostlist_shift(list)) {
      benchmark::DoNotOptimize(host);
      std::free(host);
      ++hosts;
    }
    slurm_hostlist_destroy(list);
  }
  state.counters["hosts"] = static_cast<double>(hosts);
}
BENCHMARK(slurm_hostlist)->Unit(benchmark::kMillisecond);
#endif

}  // namespace
