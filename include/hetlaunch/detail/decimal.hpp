// SPDX-License-Identifier: MIT
// hetlaunch: the one reader of decimal numbers: counts, indexes, ranks, weights, the parts of an
// IPv4 address and the numbers of a Slurm host list all go through read_digits.
#ifndef HETLAUNCH_DETAIL_DECIMAL_HPP
#define HETLAUNCH_DETAIL_DECIMAL_HPP

#include <cstddef>
#include <string_view>

namespace hetlaunch {
namespace detail {

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// A run of ASCII digits: its value, where it ends, and whether it passed the limit it was read
// against (the value then stops at the last one that fit, and the run is still read to its end).
struct digit_run {
  unsigned long long value = 0;
  std::size_t end = 0;
  bool too_large = false;
};

// Reads the digits at text[start] (none is a run that ends at `start`): no sign, blanks or
// locale, leading zeros allowed. Never wraps, whatever the length; O(length).
constexpr digit_run read_digits(std::string_view text, std::size_t start,
                                unsigned long long limit = ~0ull) noexcept {
  digit_run run{};
  run.end = start;
  for (; run.end < text.size() && is_digit(text[run.end]); ++run.end) {
    const auto d = static_cast<unsigned>(text[run.end] - '0');
    if (run.too_large) continue;
    if (d > limit || run.value > (limit - d) / 10)
      run.too_large = true;
    else
      run.value = run.value * 10 + d;
  }
  return run;
}

// A whole text that is a decimal number of at most `max`; `value` is left alone otherwise.
constexpr bool parse_decimal(std::string_view text, long long max, long long& value) noexcept {
  if (text.empty() || max < 0) return false;
  const digit_run run = read_digits(text, 0, static_cast<unsigned long long>(max));
  if (run.end != text.size() || run.too_large) return false;
  value = static_cast<long long>(run.value);
  return true;
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_DECIMAL_HPP
