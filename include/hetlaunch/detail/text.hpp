// SPDX-License-Identifier: MIT
// hetlaunch: building message text.
#ifndef HETLAUNCH_DETAIL_TEXT_HPP
#define HETLAUNCH_DETAIL_TEXT_HPP

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace hetlaunch {
namespace detail {

inline void append_piece(std::string& out, std::string_view text) { out.append(text.data(), text.size()); }
template <class Int, std::enable_if_t<std::is_integral<Int>::value && !std::is_same<Int, char>::value &&
                                          !std::is_same<Int, bool>::value, int> = 0>
void append_piece(std::string& out, Int value) {
  out += std::to_string(value);
}

// Joins text and integers by appending. Not `"a" + std::string(...)`: GCC 12 at -O3 reports a
// false -Wrestrict on that pattern, which would break users who build with -Werror.
template <class... Pieces>
std::string concat(const Pieces&... pieces) {
  std::string out;
  (append_piece(out, pieces), ...);
  return out;
}

// A decimal number of ASCII digits only (no sign, blanks or locale), at most `max`.
inline bool parse_decimal(std::string_view text, long long max, long long& value) {
  if (text.empty() || text.size() > 18) return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  return value <= max;
}

// "0,2,3": device ids as CUDA_VISIBLE_DEVICES lists them.
inline std::string join_ids(const std::vector<int>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

// Quotes text for an error message; bytes that would garble a terminal are shown as escapes.
inline void append_quoted(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '\'';
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\' || c == '\'') { out += '\\'; out += ch; }
    else if (c < 0x20 || c == 0x7f) { out += "\\x"; out += hex[c >> 4]; out += hex[c & 15]; }
    else out += ch;
  }
  out += '\'';
}
inline std::string quoted(std::string_view text) {
  std::string out;
  append_quoted(out, text);
  return out;
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_TEXT_HPP
