// SPDX-License-Identifier: MIT
// result<T>: a value or an error, with the std::expected subset C++17 can have.
#include <doctest/doctest.h>

#include <hetlaunch/cluster.hpp>
#include <hetlaunch/result.hpp>

#include <string>
#include <type_traits>

using hetlaunch::parse_error;
using hetlaunch::result;

namespace {
constexpr result<int, hetlaunch::diagnostic> constant_value = 7;
static_assert(constant_value.has_value() && *constant_value == 7 && constant_value.value_or(1) == 7,
              "result is a literal type when T and E are");
}  // namespace

TEST_SUITE("result") {
  TEST_CASE("holds a value") {
    const result<std::string> r = std::string("x");
    CHECK(r.has_value());
    CHECK(static_cast<bool>(r));
    CHECK(*r == "x");
    CHECK(r->size() == 1);
    CHECK(r.value() == "x");
  }

  TEST_CASE("holds an error with line and column") {
    const result<std::string> r = parse_error{3, 11, "slots must be a positive integer, got '0'"};
    CHECK_FALSE(r.has_value());
    CHECK(r.error().line == 3);
    CHECK(r.error().to_string() == "line 3, column 11: slots must be a positive integer, got '0'");
    CHECK(r.value_or("fallback") == "fallback");
    CHECK(parse_error{0, 0, "SLURM_NODEID is not set"}.to_string() == "SLURM_NODEID is not set");
  }

  TEST_CASE("one error for texts, variables and bindings: with a place or without") {
    // Without a place, the message names where; the code says what kind of problem it is.
    const parse_error unread{"the CPU topology's cpulist cannot be read",
                             hetlaunch::errc::bad_cpu_topology};
    CHECK(unread.line == 0);
    CHECK(unread.column == 0);
    CHECK(unread.code == hetlaunch::errc::bad_cpu_topology);
    CHECK(unread.to_string() == "the CPU topology's cpulist cannot be read");
    CHECK(parse_error{"no line"}.code == hetlaunch::errc::bad_syntax);
    CHECK(parse_error{2, 5, "too big", hetlaunch::errc::limit_exceeded}.code ==
          hetlaunch::errc::limit_exceeded);
    CHECK(parse_error{}.to_string().empty());
    // A text is never taken for an error: a result of a string still holds the string.
    static_assert(!std::is_convertible<std::string, parse_error>::value,
                  "an error is made on purpose, never from a string by accident");
    const result<std::string> text = std::string("a message-like value");
    CHECK(text.has_value());
  }

#if HETLAUNCH_USE_EXCEPTIONS
  TEST_CASE("value() on an error throws bad_result_access with the message") {
    const result<int> r = parse_error{1, 2, "bad"};
    CHECK_THROWS_WITH_AS(r.value(), "line 1, column 2: bad", hetlaunch::bad_result_access);
    const hetlaunch::cluster c{{"a", 1}};
    CHECK_THROWS_WITH_AS(c.try_nproc(5).value(),
                         "node index 5 is out of range: the cluster has 1 nodes",
                         hetlaunch::bad_result_access);
  }
#endif
}
