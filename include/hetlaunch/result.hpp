// SPDX-License-Identifier: MIT
// hetlaunch: result<T>, a value or an error, usable with and without exceptions.
#ifndef HETLAUNCH_RESULT_HPP
#define HETLAUNCH_RESULT_HPP

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "detail/config.hpp"
#include "errc.hpp"
#include "detail/text.hpp"

#if HETLAUNCH_USE_EXCEPTIONS
#include <stdexcept>
#endif

namespace hetlaunch {

/// The error every fallible function returns that is not a topology's or the launch options'
/// problem (those are `diagnostic`s, which the core builds without allocating): where and why an
/// input was refused. `line` and `column` count from 1; both are 0 when the input has no lines
/// (an environment variable, a file of a sysfs tree, a worker's binding) and the message names
/// the place. `code` says what kind of problem it is: bad_syntax, limit_exceeded, count_mismatch,
/// unknown_host, no_devices, env_missing, env_not_a_number, the CPU binding's codes
/// (bad_cpu_topology, bad_visible_devices, no_binding), or the topology's own (bad_nproc,
/// bad_host, duplicate_host, world_size_overflow) for a topology read from text.
struct parse_error {
  std::size_t line = 0;
  std::size_t column = 0;
  std::string message;
  errc code = errc::bad_syntax;

  parse_error() = default;
  /// At a place of a text.
  parse_error(std::size_t at_line, std::size_t at_column, std::string why,
              errc kind = errc::bad_syntax)
      : line(at_line), column(at_column), message(std::move(why)), code(kind) {}
  /// Without a place in lines: the message names where.
  explicit parse_error(std::string why, errc kind = errc::bad_syntax)
      : message(std::move(why)), code(kind) {}

  /// "line 3, column 11: slots must be a positive integer, got '0'" (or just the message).
  template <class Unused = void>
  [[nodiscard]] std::string to_string() const {
    if (line == 0) return message;
    return detail::concat("line ", line, ", column ", column, ": ", message);
  }
  friend bool operator==(const parse_error& a, const parse_error& b) {
    return a.line == b.line && a.column == b.column && a.message == b.message && a.code == b.code;
  }
  friend bool operator!=(const parse_error& a, const parse_error& b) { return !(a == b); }
};

namespace detail {
template <class Unused = void>
std::string describe_error(const parse_error& e) {
  return e.to_string();
}
template <class E>
auto describe_error(const E& e) -> decltype(e.message()) {
  return e.message();
}
// A list of problems (make_plan's): every message, one a line.
template <class E>
auto describe_error(const std::vector<E>& problems) -> decltype(problems.front().message()) {
  std::string out;
  for (const E& e : problems) {
    if (!out.empty()) out += '\n';
    out += e.message();
  }
  return out;
}
}  // namespace detail

#if HETLAUNCH_USE_EXCEPTIONS
/// Thrown by result<T>::value() on an error when exceptions are enabled.
class bad_result_access : public std::runtime_error {
 public:
  explicit bad_result_access(const std::string& what) : std::runtime_error(what) {}
};
#endif

namespace detail {
template <class E>
[[noreturn]] void bad_access(const E& error) {
#if HETLAUNCH_USE_EXCEPTIONS
  throw bad_result_access(describe_error(error));
#else
  const std::string text = describe_error(error);
  precondition_violated(text.c_str());
#endif
}
}  // namespace detail

/// Holds a T or an error E (by default a parse_error): the subset of std::expected that C++17
/// can have. Literal, and so usable in constant expressions, when T and E are.
///
/// Example:
///   auto r = hetlaunch::parse_hostfile(text);
///   if (!r) { std::cerr << r.error().to_string() << '\n'; return 1; }
///   hetlaunch::cluster c = *std::move(r);
template <class T, class E = parse_error>
class [[nodiscard]] result {
  static_assert(!std::is_same<T, E>::value,
                "hetlaunch::result requires distinct value and error types");
  std::variant<T, E> storage_;

 public:
  using value_type = T;
  using error_type = E;

  constexpr result(const T& value) : storage_(std::in_place_index<0>, value) {}        // NOLINT
  constexpr result(T&& value) : storage_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  constexpr result(const E& error) : storage_(std::in_place_index<1>, error) {}        // NOLINT
  constexpr result(E&& error) : storage_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  [[nodiscard]] constexpr bool has_value() const noexcept { return storage_.index() == 0; }
  constexpr explicit operator bool() const noexcept { return has_value(); }

  /// The value; on an error throws bad_result_access, or without exceptions reports through
  /// HETLAUNCH_ON_FAILURE (which aborts by default). Not usable on an error in a constant
  /// expression.
  constexpr const T& value() const& {
    if (!has_value()) detail::bad_access(std::get<1>(storage_));
    return std::get<0>(storage_);
  }
  constexpr T& value() & {
    if (!has_value()) detail::bad_access(std::get<1>(storage_));
    return std::get<0>(storage_);
  }
  constexpr T&& value() && { return std::move(value()); }

  /// The error. Precondition: !has_value().
  constexpr const E& error() const& {
    detail::expects(!has_value(), "result::error() called on a result that holds a value");
    return std::get<1>(storage_);
  }

  /// Precondition: has_value(); checked like value().
  constexpr const T& operator*() const& { return value(); }
  constexpr T& operator*() & { return value(); }
  constexpr T&& operator*() && { return std::move(value()); }
  constexpr const T* operator->() const { return &value(); }
  constexpr T* operator->() { return &value(); }

  /// The value, or `fallback` on an error.
  template <class U>
  [[nodiscard]] constexpr T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(storage_) : static_cast<T>(std::forward<U>(fallback));
  }
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_RESULT_HPP
