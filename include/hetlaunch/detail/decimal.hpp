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
constexpr bool parse_unsigned(std::string_view text, unsigned long long max,
                              unsigned long long& value) noexcept {
  const digit_run run = read_digits(text, 0, max);
  if (text.empty() || run.end != text.size() || run.too_large) return false;
  value = run.value;
  return true;
}
constexpr bool parse_decimal(std::string_view text, long long max, long long& value) noexcept {
  unsigned long long v = 0;
  if (max < 0 || !parse_unsigned(text, static_cast<unsigned long long>(max), v)) return false;
  value = static_cast<long long>(v);
  return true;
}
// An optional '-', then a decimal number of at most `max_magnitude` (at most LLONG_MAX).
constexpr bool parse_signed(std::string_view text, long long max_magnitude,
                            long long& value) noexcept {
  const bool negative = !text.empty() && text[0] == '-';
  if (!parse_decimal(text.substr(negative ? 1 : 0), max_magnitude, value)) return false;
  if (negative) value = -value;
  return true;
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_DECIMAL_HPP
