// SPDX-License-Identifier: MIT
// host_issue: what is wrong with a host name, and where, as the host check finds it.
#include <doctest/doctest.h>

#include <hetlaunch/diagnostic.hpp>
#include <hetlaunch/host_issue.hpp>

#include <string>

TEST_SUITE("host_issue") {
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

  TEST_CASE("each issue names the offending character or label, as messages show it") {
    using hetlaunch::host_issue;
    const auto describe = [](std::string_view host) {
      const auto c = hetlaunch::detail::check_host(host);
      return hetlaunch::detail::describe_host_issue(host, c.issue, c.position);
    };
    CHECK(describe("gpu a") == "character ' ' at position 3 is not allowed");
    CHECK(describe("[::1]") ==
          "character '[' at position 0 is not allowed (write IPv6 addresses without brackets)");
    CHECK(describe("gpu_a") ==
          "character '_' at position 3 is not allowed (allow it with allow_underscore)");
    CHECK(describe("a..b") == "empty label at position 2");
    CHECK(describe("-a") == "a label starts or ends with '-' at position 0");
    CHECK(describe("123") ==
          "an all-numeric name that is not a dotted quad (resolvers read it as an IPv4 address)");
    CHECK(describe(std::string(254, 'a')) == "it is longer than 253 characters");
    CHECK(describe("") == "it is empty");
  }
}
