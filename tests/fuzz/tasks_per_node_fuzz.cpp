// SPDX-License-Identifier: MIT
// expand_tasks_per_node: bounded by max_nodes (a handful, or the default, picked by the first
// byte), non-negative counts, or a positioned error; equal to a naive expansion when that one
// can hold the answer.
#include <hetlaunch/slurm.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"

namespace {
// "2(x3),1" the obvious way; false on anything else, or past `cap` values.
bool naive(std::string_view t, std::size_t cap, std::vector<int>& out) {
  std::size_t i = 0;
  const auto number = [&](unsigned long long limit, unsigned long long& v) {
    const std::size_t start = i;
    v = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9' && v <= limit)
      v = v * 10 + static_cast<unsigned>(t[i++] - '0');
    return i > start && v <= limit;
  };
  if (t.empty()) return false;
  while (true) {
    unsigned long long count = 0, repeat = 1;
    if (!number(0x7fffffff, count)) return false;
    if (i < t.size() && t[i] == '(') {
      if (i + 1 >= t.size() || t[i + 1] != 'x') return false;
      i += 2;
      if (!number(1ull << 40, repeat) || repeat == 0 || i >= t.size() || t[i] != ')') return false;
      ++i;
    }
    if (repeat > cap || out.size() + repeat > cap) return false;
    out.insert(out.end(), static_cast<std::size_t>(repeat), static_cast<int>(count));
    if (i == t.size()) return true;
    if (t[i++] != ',') return false;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t cap = (data[0] & 1) ? 1 + data[0] % 16 : 4096;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto r = hetlaunch::expand_tasks_per_node(text, cap);
  std::vector<int> expected;
  const bool ok = naive(text, cap, expected);
  if (ok) FUZZ_CHECK(r && *r == expected);
  if (!r) {
    FUZZ_CHECK(r.error().column >= 1 && r.error().column <= text.size() + 1);
    return 0;
  }
  FUZZ_CHECK(!r->empty() && r->size() <= cap);
  for (int c : *r) FUZZ_CHECK(c >= 0);
  return 0;
}
