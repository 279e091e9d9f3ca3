// SPDX-License-Identifier: MIT
// text.hpp and the one decimal reader behind it: counts, weights and IPv4 parts are read the
// same way (ASCII digits only, leading zeros allowed, never wrapping), and text is quoted and
// written as JSON as the library's own messages and outputs do.
#include <doctest/doctest.h>

#include <hetlaunch/cluster.hpp>
#include <hetlaunch/text.hpp>
#include <hetlaunch/weight.hpp>

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace {

// Every text of up to `length` characters over `alphabet`, shortest first.
template <class Visit>
void for_all_texts(std::string_view alphabet, std::size_t length, Visit visit) {
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
std::optional<unsigned long long> reference_count(std::string_view text, unsigned long long max) {
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

}  // namespace

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

  TEST_CASE(
      "a weight is the exact value of a decimal of at most 6 fractional digits up to 1000000") {
    const auto reference = [](std::string_view text) -> std::int64_t {
      const std::size_t dot = text.find('.');
      const std::string_view whole = text.substr(0, dot);
      const std::string_view fraction =
          dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
      const auto w = reference_count(whole, 1000000);
      if (!w || (dot != std::string_view::npos && (fraction.empty() || fraction.size() > 6)))
        return 0;
      std::int64_t micros = static_cast<std::int64_t>(*w) * 1000000;
      if (!fraction.empty()) {
        const auto f = reference_count(fraction, 999999);
        if (!f) return 0;
        std::int64_t scaled = static_cast<std::int64_t>(*f);
        for (std::size_t d = fraction.size(); d < 6; ++d) scaled *= 10;
        micros += scaled;
      }
      return micros > 1000000LL * 1000000 ? 0 : micros;
    };
    for_all_texts("019.", 6, [&](std::string_view text) {
      CAPTURE(text);
      CHECK(hetlaunch::check_weight(text).micros == reference(text));
    });
    CHECK(hetlaunch::check_weight("1000000.000000").micros == 1000000LL * 1000000);
    CHECK(hetlaunch::check_weight("1000000.000001").issue == hetlaunch::weight_issue::too_large);
    CHECK(hetlaunch::check_weight(std::string(5000, '9')).issue ==
          hetlaunch::weight_issue::too_large);
    CHECK(hetlaunch::check_weight("1.1234567").issue == hetlaunch::weight_issue::too_many_digits);
    CHECK(hetlaunch::check_weight("1.1234567").position == 8);
    CHECK(hetlaunch::check_weight("1.1234567x").issue == hetlaunch::weight_issue::not_a_decimal);
    CHECK(hetlaunch::check_weight("1.1234567x").position == 9);
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

  TEST_CASE("an IPv4 part is 0 to 255 without leading zeros, however many digits follow") {
    using hetlaunch::host_issue;
    static_assert(hetlaunch::detail::check_host("198.18.0.255").issue == host_issue::none);
    CHECK(hetlaunch::detail::check_host("198.18.0.256").issue == host_issue::bad_ipv4);
    CHECK(hetlaunch::detail::check_host("198.18.0.256").position == 9);
    CHECK(hetlaunch::detail::check_host("198.18.00.1").position == 7);
    CHECK(hetlaunch::detail::check_host("198.18.99999999999999999999999.1").issue ==
          host_issue::bad_ipv4);
    CHECK(hetlaunch::detail::check_host("198.18.99999999999999999999999.1").position == 7);
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
