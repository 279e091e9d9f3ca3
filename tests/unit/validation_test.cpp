// SPDX-License-Identifier: MIT
// Validation: every problem a topology can have, the node it names, and the message people read.
#include <doctest/doctest.h>

#include <hetlaunch/cluster.hpp>

#include <climits>
#include <string>
#include <vector>

using hetlaunch::cluster;
using hetlaunch::errc;
using hetlaunch::host_issue;
using hetlaunch::make_cluster;

namespace {

constexpr auto valid =
    make_cluster({{"gpu-a", 8}, {"gpu-b.example.com", 4}, {"10.0.0.7", 2}, {"fe80::1", 1}});
static_assert(!hetlaunch::first_error(valid), "a valid topology has no first error");
HETLAUNCH_STATIC_VALIDATE(valid);

constexpr auto zero_nproc = make_cluster({{"gpu-a", 8}, {"gpu-b", 0}});
static_assert(hetlaunch::first_error(zero_nproc).code == errc::bad_nproc &&
                  hetlaunch::first_error(zero_nproc).node == 1,
              "nproc 0 on node 1");

constexpr auto duplicate = make_cluster({{"a", 1}, {"b", 1}, {"A", 1}});
static_assert(hetlaunch::first_error(duplicate).code == errc::duplicate_host &&
                  hetlaunch::first_error(duplicate).node == 2 &&
                  hetlaunch::first_error(duplicate).other_node == 0,
              "host names compare case-insensitively; the later node is reported");
static_assert(!hetlaunch::first_error(duplicate, hetlaunch::validate_options{true}),
              "two agents on one host can be allowed explicitly");
HETLAUNCH_STATIC_VALIDATE_WITH(duplicate, hetlaunch::validate_options{true});

constexpr auto injected = make_cluster({{"a;reboot", 1}});
static_assert(hetlaunch::first_error(injected).code == errc::bad_host &&
                  hetlaunch::first_error(injected).position == 1,
              "shell metacharacters are refused where they stand");

constexpr auto overflow = make_cluster({{"a", INT_MAX}, {"b", 1}});
static_assert(hetlaunch::first_error(overflow).code == errc::world_size_overflow &&
                  hetlaunch::first_error(overflow).node == 1,
              "the world size must fit torch's 32-bit ranks");

constexpr auto empty_role = make_cluster({{"a", 1, ""}});
static_assert(hetlaunch::first_error(empty_role).code == errc::empty_role, "");

constexpr auto dash_role = make_cluster({{"a", 1, "-x"}});
static_assert(hetlaunch::first_error(dash_role).code == errc::bad_role, "");

constexpr hetlaunch::fixed_cluster<0> no_nodes{};
static_assert(hetlaunch::first_error(no_nodes).code == errc::empty_cluster, "");

std::vector<std::string> messages(const cluster& c, hetlaunch::validate_options o = {}) {
  std::vector<std::string> out;
  for (const auto& d : hetlaunch::validate(c, o)) out.push_back(d.message());
  return out;
}

hetlaunch::detail::host_check check(const char* host, bool underscore = false) {
  return hetlaunch::detail::check_host(host, underscore);
}

}  // namespace

TEST_SUITE("validate") {
  TEST_CASE("a valid cluster has no problems") {
    CHECK(hetlaunch::validate(valid).empty());
    CHECK(hetlaunch::validate(cluster(valid)).empty());
    CHECK_FALSE(hetlaunch::first_error(cluster(valid)));
  }

  TEST_CASE("every problem is reported, in node order, with a message naming node and host") {
    const cluster c{{"gpu-a", 8}, {"gpu-b", 0}, {"gpu a", 2},
                    {"GPU-A", 1}, {"-x", 1},    {"ok", 1, ""}};
    CHECK(
        messages(c) ==
        std::vector<std::string>{
            "node 1 ('gpu-b'): nproc must be at least 1, got 0",
            "node 2 ('gpu a'): host is not a valid RFC 1123 name or IP literal: character ' ' at position 3 is not allowed",
            "node 3 ('GPU-A'): host is also node 0; two agents on one host must be allowed explicitly (allow_duplicate_hosts)",
            "node 4 ('-x'): host is not a valid RFC 1123 name or IP literal: a label starts or ends with '-' at position 0",
            "node 5 ('ok'): role is empty",
        });
  }

  TEST_CASE("first_error is the first of validate") {
    const cluster c{{"a", 1}, {"b", -3}, {"b", 1}};
    const auto all = hetlaunch::validate(c);
    REQUIRE(all.size() == 2);
    CHECK(hetlaunch::first_error(c).code == all.front().code);
    CHECK(all[0].code == errc::bad_nproc);
    CHECK(all[0].value == -3);
    CHECK(all[1].code == errc::duplicate_host);
    CHECK(all[1].other_node == 1);
  }

  TEST_CASE("every later copy of a host names the first one") {
    const cluster c{{"h", 1}, {"x", 1}, {"h", 1}, {"H", 1}};
    const auto all = hetlaunch::validate(c);
    REQUIRE(all.size() == 2);
    CHECK(all[0].node == 2);
    CHECK(all[0].other_node == 0);
    CHECK(all[1].node == 3);
    CHECK(all[1].other_node == 0);
    CHECK(hetlaunch::validate(c, hetlaunch::validate_options{true}).empty());
  }

  TEST_CASE("world size overflow is reported once, at the node that crosses INT_MAX") {
    const cluster c{{"a", INT_MAX - 1}, {"b", 1}, {"c", 1}, {"d", 5}};
    const auto all = hetlaunch::validate(c);
    REQUIRE(all.size() == 1);
    CHECK(all[0].node == 2);
    CHECK(
        all[0].message() ==
        "node 2 ('c'): world size would be 2147483648, more than 2147483647 (torch.distributed ranks are 32-bit)");
  }

  TEST_CASE("an empty cluster is an error") {
    CHECK(messages(cluster{}) == std::vector<std::string>{"the cluster has no nodes"});
  }

  TEST_CASE("roles torchrun cannot carry are refused") {
    CHECK(messages(cluster{{"a", 1, "-r"}}) ==
          std::vector<std::string>{
              "node 0 ('a'): role '-r' starts with '-', which torchrun would read as an option"});
    CHECK(messages(cluster{{"a", 1, "my role"}}) ==
          std::vector<std::string>{
              "node 0 ('a'): role 'my role' has a blank or control character at position 2"});
  }

  TEST_CASE("messages escape bytes that would garble a terminal") {
    CHECK(
        messages(cluster{{"a\nb", 1}}) ==
        std::vector<std::string>{
            "node 0 ('a\\nb'): host is not a valid RFC 1123 name or IP literal: character '\\n' at position 1 is not allowed"});
  }

  TEST_CASE("host names: RFC 1123 names, IPv4 and IPv6 literals") {
    for (const char* ok :
         {"a", "node-1", "1node", "a.b.c", "gpu-01.cluster.example.com", "10.0.0.1",
          "255.255.255.255", "0.0.0.0", "::1", "::", "fe80::1", "2001:db8::8a2e:370:7334",
          "1:2:3:4:5:6:7:8", "::ffff:10.0.0.1", "1::", "a-b-c", "0x1g"}) {
      CAPTURE(ok);
      CHECK(check(ok).issue == host_issue::none);
    }
    struct bad_case {
      const char* host;
      host_issue issue;
      std::size_t position;
    };
    for (const bad_case& b : {bad_case{"", host_issue::empty, 0},
                              bad_case{"a b", host_issue::bad_character, 1},
                              bad_case{"a;b", host_issue::bad_character, 1},
                              bad_case{"$(id)", host_issue::bad_character, 0},
                              bad_case{"a`b`", host_issue::bad_character, 1},
                              bad_case{"n[1-2]", host_issue::bad_character, 1},
                              bad_case{"a_b", host_issue::bad_character, 1},
                              bad_case{"-a", host_issue::hyphen_at_label_edge, 0},
                              bad_case{"a-.b", host_issue::hyphen_at_label_edge, 1},
                              bad_case{"a..b", host_issue::empty_label, 2},
                              bad_case{".a", host_issue::empty_label, 0},
                              bad_case{"a.", host_issue::empty_label, 2},
                              bad_case{"123", host_issue::numeric_not_ipv4, 0},
                              bad_case{"1.2.3", host_issue::numeric_not_ipv4, 0},
                              bad_case{"0x7f.1", host_issue::numeric_not_ipv4, 0},
                              bad_case{"1.2.3.256", host_issue::bad_ipv4, 6},
                              bad_case{"01.2.3.4", host_issue::bad_ipv4, 0},
                              bad_case{"1:::2", host_issue::bad_ipv6, 3},
                              bad_case{"1:2:3:4:5:6:7:8:9", host_issue::bad_ipv6, 17},
                              bad_case{"fe80::1%eth0", host_issue::bad_character, 7},
                              bad_case{"[::1]", host_issue::bad_character, 0},
                              bad_case{"1::2::3", host_issue::bad_ipv6, 4},
                              bad_case{":1", host_issue::bad_ipv6, 0},
                              bad_case{"1:", host_issue::bad_ipv6, 2},
                              bad_case{"12345::", host_issue::bad_ipv6, 0},
                              bad_case{"n\xc3\xb6"
                                       "de",
                                       host_issue::bad_character, 1}}) {
      CAPTURE(b.host);
      const auto r = check(b.host);
      CHECK(r.issue == b.issue);
      CHECK(r.position == b.position);
    }
    CHECK(check(std::string(64, 'a').c_str()).issue == host_issue::label_too_long);
    CHECK(check(std::string(63, 'a').c_str()).issue == host_issue::none);
    std::string long_name;
    for (int i = 0; i < 64; ++i) long_name += "abc.";
    long_name += "d";
    CHECK(check(long_name.c_str()).issue == host_issue::too_long);
    CHECK(check("a_b", true).issue == host_issue::none);
  }

  TEST_CASE("host problems read well") {
    CHECK(
        messages(cluster{{"[::1]", 1}}).front() ==
        "node 0 ('[::1]'): host is not a valid RFC 1123 name or IP literal: character '[' at position 0 is not allowed (write IPv6 addresses without brackets)");
    CHECK(
        messages(cluster{{"123", 1}}).front() ==
        "node 0 ('123'): host is not a valid RFC 1123 name or IP literal: an all-numeric name that is not a dotted quad (resolvers read it as an IPv4 address)");
    CHECK(
        messages(cluster{{"a_b", 1}}).front() ==
        "node 0 ('a_b'): host is not a valid RFC 1123 name or IP literal: character '_' at position 1 is not allowed (allow it with allow_underscore)");
    CHECK(messages(cluster{{"a_b", 1}}, hetlaunch::validate_options{false, true}).empty());
  }
}
