// SPDX-License-Identifier: MIT
// hetlaunch: host names: the constexpr check that one is an RFC 1123 name or an IPv4/IPv6
// literal, and how two compare (case-insensitively, RFC 4343).
#ifndef HETLAUNCH_DETAIL_HOST_NAME_HPP
#define HETLAUNCH_DETAIL_HOST_NAME_HPP

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../host_issue.hpp"
#include "decimal.hpp"

namespace hetlaunch {

namespace detail {

struct host_check {
  host_issue issue = host_issue::none;
  std::size_t position = 0;
};

constexpr bool is_alpha(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_hex(char c) noexcept {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
constexpr char to_lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// A dotted quad with four decimal parts 0..255 and no leading zeros (inet_aton reads "010" as
// octal 8, so such text names a different address than it seems to).
template <class Unused = void>
constexpr host_check check_ipv4(std::string_view s, std::size_t base) noexcept {
  std::size_t parts = 0;
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    const digit_run part = read_digits(s, start, 255);
    i = part.end;
    const std::size_t len = i - start;
    if (len == 0 || len > 3 || part.too_large || (len > 1 && s[start] == '0'))
      return {host_issue::bad_ipv4, base + start};
    ++parts;
    if (i == s.size()) break;
    if (s[i] != '.' || parts == 4) return {host_issue::bad_ipv4, base + i};
    ++i;
  }
  if (parts != 4) return {host_issue::bad_ipv4, base + s.size()};
  return {};
}

// RFC 4291 text form: eight groups of 1-4 hex digits, one "::" for a run of zero groups, and an
// optional dotted quad in place of the last two groups. Zone ids ("%eth0") and brackets are
// refused: torchrun's endpoint parser rejects zone ids, and brackets belong to endpoints.
template <class Unused = void>
constexpr host_check check_ipv6(std::string_view s) noexcept {
  std::size_t groups = 0;
  bool compressed = false;
  std::size_t i = 0;
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
    compressed = true;
    i = 2;
    if (i == s.size()) return {};
  } else if (!s.empty() && s[0] == ':') {
    return {host_issue::bad_ipv6, 0};
  }
  while (true) {
    const std::size_t start = i;
    while (i < s.size() && is_hex(s[i]) && i - start < 5) ++i;
    if (i < s.size() && s[i] == '.') {  // embedded IPv4 ends the address
      const host_check v4 = check_ipv4(s.substr(start), start);
      if (v4.issue != host_issue::none) return {host_issue::bad_ipv6, v4.position};
      groups += 2;
      break;
    }
    if (i == start || i - start > 4) return {host_issue::bad_ipv6, i == start ? i : start};
    ++groups;
    if (i == s.size()) break;
    if (s[i] != ':') return {host_issue::bad_ipv6, i};
    if (i + 1 < s.size() && s[i + 1] == ':') {
      if (compressed) return {host_issue::bad_ipv6, i};
      compressed = true;
      i += 2;
      if (i == s.size()) break;
    } else {
      ++i;
      if (i == s.size()) return {host_issue::bad_ipv6, i};
    }
  }
  if (compressed ? groups > 7 : groups != 8) return {host_issue::bad_ipv6, s.size()};
  return {};
}

template <class Unused = void>
constexpr bool is_numeric_label(std::string_view label) noexcept {
  std::size_t i = 0;
  if (label.size() > 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X')) {
    for (i = 2; i < label.size(); ++i)
      if (!is_hex(label[i])) return false;
    return true;
  }
  for (; i < label.size(); ++i)
    if (!is_digit(label[i])) return false;
  return !label.empty();
}

// Character classes for host names, looked up rather than computed: constant evaluation is
// charged per call and per statement, and this keeps a host to about four steps a character.
enum : unsigned char {
  host_char_name = 1,        // letter, digit, '-'
  host_char_dot = 2,         // '.'
  host_char_underscore = 4,  // '_'
  host_char_colon = 8,       // ':'
  host_char_bad = 16,        // anything else
};
struct host_char_table {
  unsigned char cls[256] = {};
  constexpr host_char_table() noexcept {
    for (int c = 0; c < 256; ++c) {
      const char ch = static_cast<char>(c);
      cls[c] = (is_alpha(ch) || is_digit(ch) || ch == '-') ? host_char_name
               : ch == '.'                                 ? host_char_dot
               : ch == '_'                                 ? host_char_underscore
               : ch == ':'                                 ? host_char_colon
                                                           : host_char_bad;
    }
  }
};
inline constexpr host_char_table host_chars{};

template <class Unused = void>
constexpr std::size_t first_of_class(const char* p, std::size_t n, unsigned mask) noexcept {
  std::size_t i = 0;
  while (i < n && (host_chars.cls[static_cast<unsigned char>(p[i])] & mask) == 0) ++i;
  return i;
}

/// Checks `host` as an RFC 1123 host name (letters, digits, '-', labels of 1..63 separated by
/// '.', 253 at most, no '-' at a label's edge; '_' only when `allow_underscore`), an IPv4 dotted
/// quad, or an IPv6 literal without brackets. Every shell metacharacter and blank is refused.
template <class Unused = void>
constexpr host_check check_host(std::string_view host, bool allow_underscore = false) noexcept {
  const char* p = host.data();
  const std::size_t n = host.size();
  if (n == 0) return {host_issue::empty, 0};
  unsigned seen = 0;
  for (std::size_t i = 0; i < n; ++i) seen |= host_chars.cls[static_cast<unsigned char>(p[i])];
  if (seen & host_char_colon) {
    for (std::size_t j = 0; j < n; ++j) {
      const char c = p[j];
      if (!is_hex(c) && c != ':' && c != '.') return {host_issue::bad_character, j};
    }
    return check_ipv6(host);
  }
  const unsigned bad = host_char_bad | (allow_underscore ? 0u : unsigned{host_char_underscore});
  if (seen & bad) return {host_issue::bad_character, first_of_class(p, n, bad)};
  if (n > 253) return {host_issue::too_long, 253};
  bool all_numeric = true;
  std::size_t labels = 0;
  std::size_t start = 0;
  while (true) {
    std::size_t end = start;
    while (end < n && p[end] != '.') ++end;
    const std::size_t len = end - start;
    if (len == 0) return {host_issue::empty_label, end};
    if (len > 63) return {host_issue::label_too_long, start};
    if (p[start] == '-') return {host_issue::hyphen_at_label_edge, start};
    if (p[end - 1] == '-') return {host_issue::hyphen_at_label_edge, end - 1};
    if (all_numeric && !is_numeric_label(host.substr(start, len))) all_numeric = false;
    ++labels;
    if (end == n) break;
    start = end + 1;
  }
  if (all_numeric) {
    if (labels != 4) return {host_issue::numeric_not_ipv4, 0};
    return check_ipv4(host, 0);
  }
  return {};
}

/// True when `host` is an IPv6 literal (it contains ':'); such hosts need brackets in endpoints.
template <class Unused = void>
constexpr bool is_ipv6_literal(std::string_view host) noexcept {
  return host.find(':') != std::string_view::npos;
}

// FNV-1a of the lower-cased host: host names compare case-insensitively (RFC 4343).
constexpr std::uint64_t host_hash(std::string_view host) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  const char* p = host.data();
  for (std::size_t i = 0, n = host.size(); i < n; ++i)
    h = (h ^ static_cast<unsigned char>(to_lower(p[i]))) * 1099511628211ull;
  return h;
}

// string_view's operator== goes through char_traits, which costs several constexpr steps a
// character; this is the same comparison in one.
constexpr bool same_text(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  const char* x = a.data();
  const char* y = b.data();
  std::size_t i = 0;
  const std::size_t n = a.size();
  while (i < n && x[i] == y[i]) ++i;
  return i == n;
}

constexpr int compare_host(std::string_view a, std::string_view b) noexcept {
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char x = to_lower(a[i]);
    const char y = to_lower(b[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

// A variable name a shell can set: letters, digits and '_', not starting with a digit.
constexpr bool is_env_name(std::string_view name) noexcept {
  if (name.empty() || is_digit(name[0])) return false;
  for (char c : name)
    if (!is_alpha(c) && !is_digit(c) && c != '_') return false;
  return true;
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_HOST_NAME_HPP
