// SPDX-License-Identifier: MIT
// hetlaunch: text as the library reads and writes it, for programs that print beside it.
#ifndef HETLAUNCH_TEXT_HPP
#define HETLAUNCH_TEXT_HPP

#include <climits>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "detail/decimal.hpp"
#include "detail/host_name.hpp"
#include "detail/json_string.hpp"
#include "detail/text.hpp"

namespace hetlaunch {

/// Quotes text as the library's messages do: whole UTF-8 characters are kept, other bytes and
/// characters that would garble a terminal are escaped, and text longer than `limit` bytes is
/// cut at a character, followed by its length: quote("a\nb") is 'a\nb'.
[[nodiscard]] inline std::string quote(std::string_view text,
                                       std::size_t limit = detail::quote_limit) {
  return detail::quoted(text, limit);
}

/// `text` as a JSON string (also a YAML double-quoted scalar), as the library's JSON and YAML
/// outputs write it: valid UTF-8 whatever the bytes; a byte that is not part of a UTF-8
/// character is written \udcXX (Python's surrogateescape gives it back), and invisible
/// characters are written \uXXXX.
[[nodiscard]] inline std::string json_string(std::string_view text) {
  std::string out;
  detail::append_json_string(out, text);
  return out;
}

/// Reads a count as the library reads every number of its input: ASCII digits only (no sign,
/// blanks or locale), at most `max`. Empty when the text is anything else; never wraps.
///   static_assert(*hetlaunch::parse_count("0042", 100) == 42);
[[nodiscard]] constexpr std::optional<unsigned long long> parse_count(
    std::string_view text, unsigned long long max) noexcept {
  unsigned long long value = 0;
  if (!detail::parse_unsigned(text, max, value)) return std::nullopt;
  return value;
}

/// Reads an integer from `low` to `high`: an optional '-', then a count as parse_count reads it.
///   static_assert(*hetlaunch::parse_integer("-9", -128, 127) == -9);
[[nodiscard]] constexpr std::optional<long long> parse_integer(std::string_view text, long long low,
                                                               long long high) noexcept {
  long long value = 0;
  if (!detail::parse_signed(text, LLONG_MAX, value) || value < low || value > high)
    return std::nullopt;
  return value;
}

/// A name a POSIX shell can set as a variable: letters, digits and '_', not starting with a digit.
[[nodiscard]] constexpr bool is_environment_name(std::string_view name) noexcept {
  return detail::is_env_name(name);
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_TEXT_HPP
