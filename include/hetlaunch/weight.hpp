// SPDX-License-Identifier: MIT
// hetlaunch: node weights, exact decimals read without floating point.
#ifndef HETLAUNCH_WEIGHT_HPP
#define HETLAUNCH_WEIGHT_HPP

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "detail/decimal.hpp"

namespace hetlaunch {

/// The most a node weight may be, and the most fractional digits it may have.
inline constexpr std::int64_t max_weight = 1000000;
inline constexpr int max_weight_fraction_digits = 6;
/// A weight in millionths: "2.5" is 2500000.
inline constexpr std::int64_t weight_scale = 1000000;

/// What is wrong with a weight's text.
enum class weight_issue : unsigned char {
  none,
  empty,     // ""
  negative,  // "-1"
  // a character other than digits and one '.' between digits ("nan", "1e3", "+2", ".5")
  not_a_decimal,
  too_many_digits,  // more than 6 fractional digits
  zero,             // "0", "0.000"
  too_large,        // more than 1000000
};

/// A weight read: its value in millionths, or what is wrong and where (a byte offset).
struct weight_check {
  std::int64_t micros = 0;
  weight_issue issue = weight_issue::none;
  std::size_t position = 0;
  constexpr explicit operator bool() const noexcept { return issue == weight_issue::none; }
};

/// Whether `text` is the default weight "1", which needs no reading: checked before every other
/// weight, since most nodes have it.
constexpr bool is_default_weight(std::string_view text) noexcept {
  return text.size() == 1 && text[0] == '1';
}

/// Reads a node weight: a positive decimal, digits with at most one '.' followed by 1 to 6
/// digits, at most 1000000. Exact: "0.1" is 100000 millionths, nothing is rounded. O(length);
/// usable in constant expressions.
///   static_assert(hetlaunch::check_weight("2.5").micros == 2500000);
[[nodiscard]] constexpr weight_check check_weight(std::string_view text) noexcept {
  weight_check out{};
  const auto fail = [&out](weight_issue issue, std::size_t position) {
    out.issue = issue;
    out.position = position;
    out.micros = 0;
    return out;
  };
  if (text.empty()) return fail(weight_issue::empty, 0);
  if (text[0] == '-') return fail(weight_issue::negative, 0);
  const detail::digit_run whole =
      detail::read_digits(text, 0, static_cast<unsigned long long>(max_weight));
  std::size_t i = whole.end;
  if (i == 0) return fail(weight_issue::not_a_decimal, 0);
  std::int64_t fraction = 0;
  int digits = 0;
  if (i < text.size() && text[i] == '.') {
    const std::size_t dot = i++;
    const detail::digit_run part = detail::read_digits(text, i);
    const std::size_t length = part.end - i;
    if (length > static_cast<std::size_t>(max_weight_fraction_digits)) {
      // The digits past the sixth are a problem only when the text is a decimal to its end.
      if (part.end < text.size()) return fail(weight_issue::not_a_decimal, part.end);
      return fail(weight_issue::too_many_digits,
                  i + static_cast<std::size_t>(max_weight_fraction_digits));
    }
    if (length == 0) return fail(weight_issue::not_a_decimal, i < text.size() ? i : dot);
    digits = static_cast<int>(length);
    fraction = static_cast<std::int64_t>(part.value);
    i = part.end;
  }
  if (i < text.size()) return fail(weight_issue::not_a_decimal, i);
  for (int d = digits; d < max_weight_fraction_digits; ++d) fraction *= 10;
  if (whole.too_large) return fail(weight_issue::too_large, 0);
  const std::int64_t micros = static_cast<std::int64_t>(whole.value) * weight_scale + fraction;
  if (micros > max_weight * weight_scale) return fail(weight_issue::too_large, 0);
  if (micros == 0) return fail(weight_issue::zero, 0);
  out.micros = micros;
  return out;
}

/// Why a weight was refused, for messages: "it has more than 6 fractional digits".
constexpr std::string_view describe(weight_issue issue) noexcept {
  switch (issue) {
    case weight_issue::none:
      return "no problem";
    case weight_issue::empty:
      return "it is empty";
    case weight_issue::negative:
      return "it is negative; a weight must be above 0";
    case weight_issue::not_a_decimal:
      return "it is not a decimal number (digits, with at most one '.' between them)";
    case weight_issue::too_many_digits:
      return "it has more than 6 fractional digits";
    case weight_issue::zero:
      return "it is 0; a weight must be above 0";
    case weight_issue::too_large:
      return "it is more than 1000000, the largest weight";
  }
  return "unknown";
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_WEIGHT_HPP
