// SPDX-License-Identifier: MIT
// expand_tasks_per_node: bounded, non-negative counts, or a positioned error.
#include <hetlaunch/slurm.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = hetlaunch::expand_tasks_per_node(text, 4096);
  if (!r) return 0;
  FUZZ_CHECK(!r->empty() && r->size() <= 4096);
  for (int c : *r) FUZZ_CHECK(c >= 0);
  return 0;
}
