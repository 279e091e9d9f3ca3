// SPDX-License-Identifier: MIT
// cluster_from_slurm: the input is split at NUL bytes into the values of the Slurm variables; a
// job either has as many counts as hosts and a node id in range, or is a clean error.
#include <hetlaunch/slurm.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const char* const names[] = {"SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE", "SLURM_NODEID",
                                      "SLURM_GPUS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"};
  std::vector<std::string> values(1);
  for (std::size_t i = 0; i < size && values.size() <= 5; ++i) {
    if (data[i] == 0)
      values.emplace_back();
    else
      values.back() += static_cast<char>(data[i]);
  }
  const auto get = [&](const char* name) -> const char* {
    for (std::size_t k = 0; k < 5 && k < values.size(); ++k)
      if (std::strcmp(name, names[k]) == 0) return values[k].c_str();
    return nullptr;
  };
  const auto job = hetlaunch::cluster_from_slurm(get);
  if (!job) return 0;
  FUZZ_CHECK(job->nodes.node_count() >= 1);
  if (job->this_node) FUZZ_CHECK(*job->this_node < job->nodes.node_count());
  return 0;
}
