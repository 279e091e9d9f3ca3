// SPDX-License-Identifier: MIT
// expand_hostlist: bounded by its limits whatever the input. The first byte picks the limits (a
// handful of names and bytes, or the default max_hosts); short inputs must expand exactly as the
// naive recursive expansion does (itself capped at the limits), or be refused when that one
// refuses or passes the limits; plain names compress and expand back to themselves.
#include <hetlaunch/slurm.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../support/naive_hostlist.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool small = data[0] & 1;
  const std::size_t max_hosts = small ? 1 + data[0] % 16 : std::size_t{1} << 20;
  // The default max_hosts, with a byte cap that keeps a million names under the fuzzer's RSS limit
  // once AddressSanitizer's redzones and quarantine are added.
  const std::size_t max_bytes = small ? 4 + data[0] % 64 : std::size_t{1} << 22;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto r = hetlaunch::expand_hostlist(text, max_hosts, max_bytes);
  if (text.size() <= 48) {
    std::vector<std::string> naive;
    hetlaunch_test::naive_hostlist reference;
    reference.max_names = max_hosts;  // past the limits the answer is a refusal, whatever follows
    reference.max_bytes = max_bytes;
    bool fits = reference.expand(text, naive) && naive.size() <= max_hosts;
    std::size_t bytes = 0;
    for (const auto& h : naive) bytes += h.size();
    fits = fits && bytes <= max_bytes;
    // The naive reference does not model numbers of 19 digits and more; those are ours alone.
    std::size_t run = 0, longest = 0;
    for (char c : text) longest = std::max(longest, run = (c >= '0' && c <= '9') ? run + 1 : 0);
    if (longest < 19) FUZZ_CHECK(r.has_value() == fits);
    if (r && fits) FUZZ_CHECK(*r == naive);
  }
  if (!r) {
    FUZZ_CHECK(r.error().column >= 1 && r.error().column <= text.size() + 1);
    return 0;
  }
  std::size_t bytes = 0;
  for (const auto& h : *r) bytes += h.size();
  FUZZ_CHECK(!r->empty() && r->size() <= max_hosts && bytes <= max_bytes);
  for (const auto& h : *r)
    if (h.empty() || h.find_first_of("[], \t\n") != std::string::npos) return 0;
  // Names whose trailing number passes 2^64 - 1 are text to compress_hostlist but refused as
  // plain names, so they cannot go round.
  for (const auto& h : *r) {
    std::size_t digits = 0;
    while (digits < h.size() && h[h.size() - 1 - digits] >= '0' && h[h.size() - 1 - digits] <= '9')
      ++digits;
    if (digits >= 20) return 0;
  }
  const auto again =
      hetlaunch::expand_hostlist(hetlaunch::compress_hostlist(*r), SIZE_MAX, SIZE_MAX);
  FUZZ_CHECK(again && *again == *r);
  return 0;
}
