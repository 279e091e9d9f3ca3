// SPDX-License-Identifier: MIT
// filter_devices: the input's first byte picks include or exclude; the rest is the filter. A
// result only ever holds devices the pool had, one worker per device.
#include <hetlaunch/hostfile.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const hetlaunch::cluster pool{{"worker-0", 4}, {"worker-1", 2}, {"w2", 8}};
  const std::string_view filter(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto r = (data[0] & 1) ? hetlaunch::filter_devices(pool, filter)
                               : hetlaunch::filter_devices(pool, "", filter);
  if (!r) return 0;
  FUZZ_CHECK(hetlaunch::validate(*r).empty());
  for (std::size_t i = 0; i < r->node_count(); ++i) {
    FUZZ_CHECK(static_cast<std::size_t>(r->nproc(i)) == r->devices(i).size());
    for (int d : r->devices(i)) FUZZ_CHECK(d >= 0 && d < 8);
    FUZZ_CHECK(std::is_sorted(r->devices(i).begin(), r->devices(i).end()));
  }
  return 0;
}
