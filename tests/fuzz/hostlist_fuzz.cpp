// SPDX-License-Identifier: MIT
// expand_hostlist: bounded by max_hosts whatever the input; when every host is a plain name,
// compressing and expanding again gives the same list.
#include <hetlaunch/slurm.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr std::size_t cap = 4096;
  const auto r = hetlaunch::expand_hostlist(text, cap);
  if (!r) {
    FUZZ_CHECK(r.error().column >= 1 && r.error().column <= size + 1);
    return 0;
  }
  FUZZ_CHECK(!r->empty() && r->size() <= cap);
  for (const auto& h : *r)
    if (h.empty() || h.find_first_of("[], \t\n") != std::string::npos) return 0;
  const auto again = hetlaunch::expand_hostlist(hetlaunch::compress_hostlist(*r), cap);
  FUZZ_CHECK(again && *again == *r);
  return 0;
}
