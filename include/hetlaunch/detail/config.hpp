// SPDX-License-Identifier: MIT
// hetlaunch: configuration macros and the one place that reports a broken contract.
#ifndef HETLAUNCH_DETAIL_CONFIG_HPP
#define HETLAUNCH_DETAIL_CONFIG_HPP

#include <cstdio>
#include <cstdlib>

// HETLAUNCH_USE_EXCEPTIONS (0/1): whether result<T>::value() throws bad_result_access on an
// error. Defaults to whether the compiler has exceptions enabled; every translation unit of a
// program must agree on it.
#ifndef HETLAUNCH_USE_EXCEPTIONS
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define HETLAUNCH_USE_EXCEPTIONS 1
#else
#define HETLAUNCH_USE_EXCEPTIONS 0
#endif
#endif

#if HETLAUNCH_USE_EXCEPTIONS && \
    !(defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND))
#error "hetlaunch: HETLAUNCH_USE_EXCEPTIONS is 1 but exceptions are disabled in this build"
#endif

// HETLAUNCH_ON_FAILURE(message): what happens when a precondition is broken at run time (an
// out-of-range node index passed to an unchecked accessor), or when result<T>::value() is called
// on an error without exceptions. It must not return. The default prints the message and aborts.
#ifndef HETLAUNCH_ON_FAILURE
#define HETLAUNCH_ON_FAILURE(message)                                                          \
  (std::fputs("hetlaunch: ", stderr), std::fputs((message), stderr), std::fputc('\n', stderr), \
   std::abort())
#endif

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
