// SPDX-License-Identifier: MIT
// What the property tests of text readers share: every text over an alphabet, and the value of a
// digit string by long arithmetic on its text.
#ifndef HETLAUNCH_TESTS_SUPPORT_TEXT_PROPERTIES_HPP
#define HETLAUNCH_TESTS_SUPPORT_TEXT_PROPERTIES_HPP

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace test_support {

// Every text of up to `length` characters over `alphabet`, shortest first.
template <class Visit>
inline void for_all_texts(std::string_view alphabet, std::size_t length, Visit visit) {
  std::string text;
  const auto extend = [&](const auto& self, std::size_t left) -> void {
    visit(std::string_view(text));
    if (left == 0) return;
    for (char c : alphabet) {
      text.push_back(c);
      self(self, left - 1);
      text.pop_back();
    }
  };
  extend(extend, length);
}

// The value of a text of digits by long arithmetic on its text: digits after leading zeros,
// compared by length and then lexicographically.
inline std::optional<unsigned long long> reference_count(std::string_view text,
                                                         unsigned long long max) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  std::size_t first = text.find_first_not_of('0');
  const std::string digits =
      first == std::string_view::npos ? "0" : std::string(text.substr(first));
  const std::string limit = std::to_string(max);
  if (digits.size() > limit.size() || (digits.size() == limit.size() && digits > limit))
    return std::nullopt;
  return std::stoull(digits);
}

}  // namespace test_support

#endif  // HETLAUNCH_TESTS_SUPPORT_TEXT_PROPERTIES_HPP
