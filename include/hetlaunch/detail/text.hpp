// SPDX-License-Identifier: MIT
// hetlaunch: building message text.
#ifndef HETLAUNCH_DETAIL_TEXT_HPP
#define HETLAUNCH_DETAIL_TEXT_HPP

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "decimal.hpp"
#include "deferred.hpp"

namespace hetlaunch {
namespace detail {

// The functions that build text are templates (most with an unused parameter) so that they are
// compiled only where a message is made, not by every program that includes cluster.hpp.

inline void append_piece(std::string& out, std::string_view text) {
  out.append(text.data(), text.size());
}
template <class Int,
          std::enable_if_t<std::is_integral<Int>::value && !std::is_same<Int, char>::value &&
                               !std::is_same<Int, bool>::value,
                           int> = 0>
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

template <class Unused = void>
std::string to_hex(unsigned value) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  do {
    out.insert(out.begin(), digits[value & 15u]);
    value >>= 4;
  } while (value != 0);
  while (out.size() < 4) out.insert(out.begin(), '0');
  return out;
}

// "0,2,3": device ids as CUDA_VISIBLE_DEVICES lists them.
template <class Unused = void>
std::string join_ids(const deferred<std::vector<int>, Unused>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

// The length of the well-formed UTF-8 sequence at text[i], or 0 when the byte there does not
// start one (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
template <class Unused = void>
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c == 0xe0)
    n = 3, lo = 0xa0;
  else if (c == 0xed)
    n = 3, hi = 0x9f;
  else if (c >= 0xe1 && c <= 0xef)
    n = 3;
  else if (c == 0xf0)
    n = 4, lo = 0x90;
  else if (c == 0xf4)
    n = 4, hi = 0x8f;
  else if (c >= 0xf1 && c <= 0xf3)
    n = 4;
  else
    return 0;
  if (text.size() - i < n) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return n;
}

// The code point of a well-formed sequence of `n` bytes at text[i].
template <class Unused = void>
unsigned utf8_code_point(std::string_view text, std::size_t i, std::size_t n) noexcept {
  const auto byte = [&](std::size_t k) {
    return static_cast<unsigned>(static_cast<unsigned char>(text[i + k]));
  };
  if (n == 1) return byte(0);
  unsigned cp = byte(0) & (0x7fu >> n);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (byte(k) & 0x3fu);
  return cp;
}

// Characters that are valid but would garble or disguise a message on a terminal: C1 controls,
// the byte order mark, line and paragraph separators, and bidirectional overrides.
constexpr bool invisible_code_point(unsigned cp) noexcept {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0xfeff || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200b;
}

constexpr std::size_t quote_limit = 80;  // bytes of input shown before a long text is cut

// Quotes text for an error message. Whole UTF-8 characters are kept; bytes that are not UTF-8
// are shown as \xNN, and characters that would garble a terminal as \n, \xNN or \u{FEFF}.
// Text longer than `limit` bytes is cut at a character and followed by its length:
// 'aaaa'... (10485760 bytes). `full_size` is the length of the whole text when `text` is only
// its first bytes (a bounded_string that was cut).
// (`out` is named through Unused: its many appends are then resolved only where a message is made.)
template <class Unused = void>
void append_quoted(deferred<std::string, Unused>& out, std::string_view text,
                   std::size_t limit = quote_limit,
                   std::size_t full_size = std::string_view::npos) {
  if (full_size == std::string_view::npos || full_size < text.size()) full_size = text.size();
  static constexpr char hex[] = "0123456789abcdef";
  out += '\'';
  std::size_t i = 0;
  while (i < text.size() && i < limit) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_sequence_length(text, i);
    if (n > 1) {
      const unsigned cp = utf8_code_point(text, i, n);
      if (invisible_code_point(cp)) {
        out += "\\u{";
        out += to_hex(cp);
        out += '}';
      } else {
        out.append(text.data() + i, n);
      }
      i += n;
      continue;
    }
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else
      out += static_cast<char>(c);
    ++i;
  }
  out += '\'';
  if (i < full_size) {
    out += "... (";
    out += std::to_string(full_size);
    out += " bytes)";
  }
}
template <class Unused = void>
std::string quoted(std::string_view text, std::size_t limit = quote_limit) {
  std::string out;
  append_quoted(out, text, limit);
  return out;
}
// Quotes an owned copy of a text, which may have been cut: bounded_string.
template <class Bounded>
auto quoted(const Bounded& text) -> decltype(text.full_size(), std::string()) {
  std::string out;
  append_quoted(out, text.view(), quote_limit, text.full_size());
  return out;
}

// The character at text[i] for a message: the whole UTF-8 sequence when one starts there.
template <class Unused = void>
std::string_view character_at(std::string_view text, std::size_t i) noexcept {
  if (i >= text.size()) return {};
  const std::size_t n = utf8_sequence_length(text, i);
  return text.substr(i, n ? n : 1);
}

// Names a character for a message: 'x', or "a byte order mark (U+FEFF)" for the one character
// that editors add unseen at the start of a file.
template <class Unused = void>
std::string describe_character(std::string_view text, std::size_t i) {
  const std::string_view ch = character_at(text, i);
  if (ch == "\xef\xbb\xbf") return "a UTF-8 byte order mark (U+FEFF)";
  return concat("character ", quoted(ch));
}

// Overflow-checked arithmetic on counts from the input: false instead of a wrapped result.
template <class T>
constexpr bool checked_add(T a, T b, T& sum) noexcept {
  static_assert(std::is_unsigned<T>::value, "unsigned only");
  if (b > static_cast<T>(~T{0}) - a) return false;
  sum = a + b;
  return true;
}
template <class T>
constexpr bool checked_mul(T a, T b, T& product) noexcept {
  static_assert(std::is_unsigned<T>::value, "unsigned only");
  if (a != 0 && b > static_cast<T>(~T{0}) / a) return false;
  product = a * b;
  return true;
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_TEXT_HPP
