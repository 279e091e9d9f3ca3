// SPDX-License-Identifier: MIT
// bounded_string: the fixed-capacity text a diagnostic owns, cut at a character boundary.
#include <doctest/doctest.h>

#include <hetlaunch/bounded_string.hpp>
#include <hetlaunch/diagnostic.hpp>

#include <string>

TEST_SUITE("bounded_string") {
  TEST_CASE("keeps the whole text when it fits, and says so") {
    constexpr hetlaunch::bounded_string<8> s("gpu-a");
    static_assert(s == "gpu-a" && !s.cut() && s.full_size() == 5, "");
    CHECK(s.view() == "gpu-a");
  }
  TEST_CASE("cuts before a character that does not fit, and compares unequal to the original") {
    const hetlaunch::bounded_string<6> s("gpu-\xc3\xa9x");  // "gpu-éx": é is 2 bytes at 4..5
    CHECK(s.view() == "gpu-\xc3\xa9");
    const hetlaunch::bounded_string<5> t("gpu-\xc3\xa9x");
    CHECK(t.view() == "gpu-");
    CHECK(t.cut());
    CHECK(t.full_size() == 7);
    CHECK(t != "gpu-");
  }
  TEST_CASE("a diagnostic shows the original length of a cut text") {
    const auto d = hetlaunch::diagnostic::of(hetlaunch::errc::bad_master_addr)
                       .with_text(std::string(500, 'a'));
    CHECK(d.message().find("(500 bytes)") != std::string::npos);
  }
}
