// SPDX-License-Identifier: MIT
// text.hpp and the one decimal reader behind it: counts, weights and IPv4 parts are read the
// same way (ASCII digits only, leading zeros allowed, never wrapping), and text is quoted and
// written as JSON as the library's own messages and outputs do.
#include <doctest/doctest.h>

#include <hetlaunch/cluster.hpp>
#include <hetlaunch/text.hpp>

#include "../support/text_properties.hpp"

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

using test_support::for_all_texts;
using test_support::reference_count;

TEST_SUITE("text") {
  TEST_CASE("parse_count reads digits only, up to its limit, whatever the length") {
    static_assert(*hetlaunch::parse_count("0042", 100) == 42);
    static_assert(!hetlaunch::parse_count("101", 100));
    for (unsigned long long max : {0ull, 1ull, 9ull, 10ull, 99ull, 100ull, 1009ull})
      for_all_texts("0190 -+x", 4, [&](std::string_view text) {
        CAPTURE(text);
        CAPTURE(max);
        CHECK(hetlaunch::parse_count(text, max) == reference_count(text, max));
      });
    CHECK(*hetlaunch::parse_count("18446744073709551615", ~0ull) == ~0ull);
    CHECK(!hetlaunch::parse_count("18446744073709551616", ~0ull));
    CHECK(*hetlaunch::parse_count(std::string(10000, '0') + "7", 7) == 7);
    CHECK(!hetlaunch::parse_count(std::string(10000, '9'), ~0ull));
  }

  TEST_CASE("parse_integer is parse_count with an optional '-', within its range") {
    static_assert(*hetlaunch::parse_integer("-9", -128, 127) == -9);
    for (long long bound : {0LL, 1LL, 9LL, 10LL, 100LL})
      for_all_texts("01-9 +", 4, [&](std::string_view text) {
        CAPTURE(text);
        CAPTURE(bound);
        const bool negative = !text.empty() && text[0] == '-';
        const auto magnitude = reference_count(text.substr(negative ? 1 : 0), ~0ull);
        std::optional<long long> want;
        if (magnitude && *magnitude <= static_cast<unsigned long long>(bound))
          want =
              negative ? -static_cast<long long>(*magnitude) : static_cast<long long>(*magnitude);
        CHECK(hetlaunch::parse_integer(text, -bound, bound) == want);
      });
    CHECK(*hetlaunch::parse_integer("-9223372036854775807", LLONG_MIN, 0) == -LLONG_MAX);
    CHECK(!hetlaunch::parse_integer("-9223372036854775808", LLONG_MIN, 0));
    CHECK(!hetlaunch::parse_integer("--1", LLONG_MIN, LLONG_MAX));
    CHECK(!hetlaunch::parse_integer("-", LLONG_MIN, LLONG_MAX));
    CHECK(!hetlaunch::parse_integer("5", 6, 9));
  }

  TEST_CASE("quote and json_string write text as the library's messages and outputs do") {
    CHECK(hetlaunch::quote("a\nb") == "'a\\nb'");
    CHECK(hetlaunch::quote("it's") == "'it\\'s'");
    CHECK(hetlaunch::quote(std::string(100, 'x'), 4) == "'xxxx'... (100 bytes)");
    CHECK(hetlaunch::quote("\xff") == "'\\xff'");
    CHECK(hetlaunch::json_string("a\"b\\\n") == "\"a\\\"b\\\\\\n\"");
    CHECK(hetlaunch::json_string("\xff") == "\"\\udcff\"");
    CHECK(hetlaunch::json_string("\xe2\x80\xa8") == "\"\\u2028\"");
  }

  TEST_CASE("an environment name is one a POSIX shell can set") {
    static_assert(hetlaunch::is_environment_name("NCCL_DEBUG"));
    CHECK(hetlaunch::is_environment_name("_x1"));
    CHECK(!hetlaunch::is_environment_name(""));
    CHECK(!hetlaunch::is_environment_name("1X"));
    CHECK(!hetlaunch::is_environment_name("A-B"));
    CHECK(!hetlaunch::is_environment_name("A=B"));
  }
}
