// SPDX-License-Identifier: MIT
// hetlaunch: the one place that reports a broken contract (through HETLAUNCH_ON_FAILURE).
#ifndef HETLAUNCH_DETAIL_CONFIG_HPP
#define HETLAUNCH_DETAIL_CONFIG_HPP

#include "../config.hpp"

namespace hetlaunch {
namespace detail {

// Deliberately not constexpr: reaching it during constant evaluation makes the expression
// non-constant, so a broken precondition in a constant expression is a compile error whose
// diagnostic shows the literal message on the calling line.
[[noreturn]] inline void precondition_violated(const char* message) noexcept {
  HETLAUNCH_ON_FAILURE(message);
#if defined(__GNUC__) || defined(__clang__)
  __builtin_unreachable();
#endif
}

// Checks a documented precondition. Unlike assert() it stays on in release builds: the cost is a
// predictable branch, and the alternative is undefined behaviour on user input. In a constant
// expression a broken precondition is a compile error that quotes `message`.
constexpr void expects(bool condition, const char* message) noexcept {
  if (!condition) precondition_violated(message);
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_CONFIG_HPP
