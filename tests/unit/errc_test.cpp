// SPDX-License-Identifier: MIT
// errc: the stable code of every error, and its stable name.
#include <doctest/doctest.h>

#include <hetlaunch/errc.hpp>

#include <set>
#include <string>
#include <string_view>

TEST_SUITE("errc") {
  TEST_CASE("every errc has a stable name") {
    CHECK(hetlaunch::to_string(hetlaunch::errc::ok) == "ok");
    CHECK(hetlaunch::to_string(hetlaunch::errc::duplicate_host) == "duplicate_host");
    CHECK(hetlaunch::to_string(hetlaunch::errc::global_rank_out_of_range) ==
          "global_rank_out_of_range");
  }

  TEST_CASE("every code from ok to the last has a name of its own") {
    std::set<std::string_view> names;
    const int last = static_cast<int>(hetlaunch::errc::bad_host_facts);
    for (int code = 0; code <= last; ++code) {
      const std::string_view name = hetlaunch::to_string(static_cast<hetlaunch::errc>(code));
      CAPTURE(code);
      CHECK(name != "unknown");
      CHECK(names.insert(name).second);
    }
    CHECK(names.size() == static_cast<std::size_t>(last) + 1);
    CHECK(hetlaunch::to_string(static_cast<hetlaunch::errc>(last + 1)) == "unknown");
  }
}
