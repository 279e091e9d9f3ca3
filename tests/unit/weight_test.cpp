// SPDX-License-Identifier: MIT
// weight.hpp: a node weight is an exact decimal, read without floating point.
#include <doctest/doctest.h>

#include <hetlaunch/weight.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "../support/text_properties.hpp"

using test_support::for_all_texts;
using test_support::reference_count;

TEST_SUITE("weight") {
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
}
