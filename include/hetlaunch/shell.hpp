// SPDX-License-Identifier: MIT
// hetlaunch: quoting arguments for POSIX sh, so that `sh -c` (and ssh's remote shell) sees
// exactly the argv.
#ifndef HETLAUNCH_SHELL_HPP
#define HETLAUNCH_SHELL_HPP

#include <string>
#include <string_view>
#include <vector>

#include "detail/host_name.hpp"

namespace hetlaunch {

namespace detail {

inline bool safe_for_shell(std::string_view arg) noexcept {
  if (arg.empty()) return false;
  for (char c : arg) {
    const bool plain = is_alpha(c) || is_digit(c) || c == '_' || c == '-' || c == '.' || c == '/' ||
                       c == ',' || c == ':' || c == '=' || c == '+' || c == '@' || c == '%';
    if (!plain) return false;
  }
  return true;
}

}  // namespace detail

/// Quotes one argument for POSIX sh: unchanged when it is made only of characters sh never
/// interprets, else in single quotes with each ' written as '\''. Empty gives ''.
/// Precondition: no NUL byte (no process argument can hold one).
[[nodiscard]] inline std::string shell_quote(std::string_view arg) {
  if (detail::safe_for_shell(arg)) return std::string(arg);
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

/// Joins an argv into one line for POSIX sh: `sh -c "$(shell_join(argv))"` runs exactly argv,
/// whatever bytes the arguments hold (quotes, $(), backticks, newlines, globs, blanks, '').
[[nodiscard]] inline std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i) out += ' ';
    out += shell_quote(argv[i]);
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SHELL_HPP
