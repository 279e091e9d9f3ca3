// SPDX-License-Identifier: MIT
// Hostile input, by class: numbers that would wrap, input that multiplies, lists that would be
// quadratic, text that is not UTF-8. Every case ends in the right answer or a clear error, and
// nothing grows faster than the input. Where a simple reference exists, every input up to a size
// is compared with it.
#include <doctest/doctest.h>

#include <hetlaunch/hetlaunch.hpp>

#include <climits>

#include "../support/naive_hostlist.hpp"
#include <string>
#include <vector>

using strings = std::vector<std::string>;

namespace {

// Every string of length 1..max_len over `alphabet`, in order.
template <class Visit>
void every_string(const std::string& alphabet, std::size_t max_len, Visit visit) {
  std::string s;
  for (std::size_t len = 1; len <= max_len; ++len) {
    std::vector<std::size_t> digit(len, 0);
    while (true) {
      s.assign(len, ' ');
      for (std::size_t k = 0; k < len; ++k) s[k] = alphabet[digit[k]];
      visit(s);
      std::size_t k = 0;
      while (k < len && ++digit[k] == alphabet.size()) digit[k++] = 0;
      if (k == len) break;
    }
  }
}

}  // namespace

TEST_SUITE("hostile input") {
  // Compares every expression over `alphabet` up to `max_len` characters with the naive expansion
  // (capped at `cap` names), and returns how many expanded; the first disagreement fails.
  static std::size_t agree_with_naive(const std::string& alphabet, std::size_t max_len,
                                      std::size_t cap) {
    std::size_t expanded = 0;
    std::string first_mismatch;
    every_string(alphabet, max_len, [&](const std::string& expr) {
      if (!first_mismatch.empty()) return;
      strings naive;
      hetlaunch_test::naive_hostlist reference;
      const bool ok = reference.expand(expr, naive) && naive.size() <= cap;
      const auto ours = hetlaunch::expand_hostlist(expr, cap);
      const bool same =
          ours ? ok && *ours == naive
               : !ok && ours.error().column >= 1 && ours.error().column <= expr.size() + 1;
      if (!same) first_mismatch = expr;
      if (ours) ++expanded;
    });
    INFO("first disagreement: '" << first_mismatch << "'");
    CHECK(first_mismatch.empty());
    return expanded;
  }
  TEST_CASE(
      "property: every host list of up to 6 characters expands as the naive expansion, or is refused") {
    CHECK(agree_with_naive("a1[]-,0", 6, 64) > 5000);
  }
  TEST_CASE(
      "property: with several brackets and padding, every expression of up to 7 characters agrees") {
    CHECK(agree_with_naive("b0[]2-,", 7, 1000) > 20000);
  }

  TEST_CASE("numbers that would wrap are refused, never wrapped") {
    const auto error = [](std::string_view expr) {
      const auto r = hetlaunch::expand_hostlist(expr);
      return r ? std::string("OK") : r.error().to_string();
    };
    // hi - lo + 1 is 0 in 64 bits: a range of 2^64 hosts.
    CHECK(
        error("n[0-18446744073709551615],m") ==
        "line 1, column 3: too many hosts in range '0-18446744073709551615' (Slurm's limit is 65536)");
    CHECK(
        error("n[0-18446744073709551615]") ==
        "line 1, column 3: too many hosts in range '0-18446744073709551615' (Slurm's limit is 65536)");
    CHECK(
        error("n[1-18446744073709551615]") ==
        "line 1, column 3: too many hosts in range '1-18446744073709551615' (Slurm's limit is 65536)");
    CHECK(
        error("n[18446744073709551616]") ==
        "line 1, column 3: number '18446744073709551616' is larger than 2^64 - 1 (Slurm would silently change it)");
    // A plain name's trailing number is read by Slurm too, and saturated past 2^64 - 1.
    CHECK(
        error("n99999999999999999999") ==
        "line 1, column 2: the number at the end of 'n99999999999999999999' is larger than 2^64 - 1 (Slurm would silently change it)");
    CHECK(
        error("ok,n18446744073709551616") ==
        "line 1, column 5: the number at the end of 'n18446744073709551616' is larger than 2^64 - 1 (Slurm would silently change it)");
    // The largest numbers themselves are fine, and so are long zero-padded ones.
    CHECK(*hetlaunch::expand_hostlist("n[18446744073709551614-18446744073709551615]") ==
          strings{"n18446744073709551614", "n18446744073709551615"});
    CHECK(*hetlaunch::expand_hostlist("n18446744073709551615,n0000000000000000000000001") ==
          strings{"n18446744073709551615", "n0000000000000000000000001"});
  }

  TEST_CASE("the caps on names and bytes are exact, also at SIZE_MAX") {
    CHECK(hetlaunch::expand_hostlist("a[1-3]", SIZE_MAX)->size() == 3);
    CHECK(hetlaunch::expand_hostlist("a[1-3]", SIZE_MAX, SIZE_MAX)->size() == 3);
    CHECK(hetlaunch::expand_hostlist("a[1-3]", 3)->size() == 3);
    CHECK(!hetlaunch::expand_hostlist("a[1-3]", 2));
    // a8 a9 a10 a11: 2 + 2 + 3 + 3 bytes.
    CHECK(hetlaunch::expand_hostlist("a[8-11]", 100, 10)->size() == 4);
    CHECK(
        hetlaunch::expand_hostlist("a[8-11]", 100, 9).error().to_string() ==
        "line 1, column 1: the host list's names take more than 9 bytes, the limit (max_bytes; hetlaunch's --max-bytes raises it)");
    // Padding counts: b008 b009 b010 are 4 bytes each, and so are the names of earlier brackets.
    CHECK(hetlaunch::expand_hostlist("b[008-010]", 100, 12)->size() == 3);
    CHECK(!hetlaunch::expand_hostlist("b[008-010]", 100, 11));
    CHECK(hetlaunch::expand_hostlist("r[1-2]n[9-10]", 100, 18)->size() ==
          4);  // r1n9 r1n10 r2n9 r2n10
    CHECK(!hetlaunch::expand_hostlist("r[1-2]n[9-10]", 100, 17));
    CHECK(hetlaunch::expand_hostlist("r[9-10]n[1-2]", 100, 18)->size() ==
          4);  // r9n1 r9n2 r10n1 r10n2
    CHECK(!hetlaunch::expand_hostlist("r[9-10]n[1-2]", 100, 17));
    CHECK(!hetlaunch::expand_hostlist("plain", 100, 4));
    CHECK(hetlaunch::expand_hostlist("plain", 100, 5)->size() == 1);
  }

  TEST_CASE("input that multiplies is refused by its size before anything is allocated") {
    // 65536 names of 120 kB each would be 8 GB.
    const std::string wide = std::string(120000, 'x') + "[0-65535]";
    CHECK(
        hetlaunch::expand_hostlist(wide).error().message ==
        "the host list's names take more than 134217728 bytes, the limit (max_bytes; hetlaunch's --max-bytes raises it)");
    // 30000 brackets in one name: no recursion, one name of 60000 bytes.
    std::string many;
    for (int i = 0; i < 30000; ++i) many += "a[1]";
    const auto r = hetlaunch::expand_hostlist(many);
    REQUIRE(r);
    CHECK(r->size() == 1);
    CHECK(r->front().size() == 60000);
    // Brackets that multiply: 65536^2 names.
    CHECK(!hetlaunch::expand_hostlist("a[0-65535]b[0-65535]"));
    // Many '[' without ']': read once, not once per '['.
    const std::string open(200000, '[');
    CHECK(hetlaunch::expand_hostlist(open).error().message == "'[' without a matching ']'");
    std::string opens;
    for (int i = 0; i < 50000; ++i) opens += "a[,";
    CHECK(!hetlaunch::expand_hostlist(opens));
  }

  TEST_CASE("count lists: repeat counts and totals that would wrap are refused") {
    // 2^64 + 4 would wrap to 4.
    CHECK(hetlaunch::expand_tasks_per_node("2(x18446744073709551620)").error().to_string() ==
          "line 1, column 4: a repeat count is larger than 18446744073709551615");
    CHECK(hetlaunch::expand_tasks_per_node("2(x18446744073709551615),1(x1)").error().to_string() ==
          "line 1, column 26: the count list names more than 2^64 - 1 values");
    CHECK(
        hetlaunch::expand_tasks_per_node("2(x18446744073709551615)").error().to_string() ==
        "line 1, column 1: the count list names 18446744073709551615 nodes, more than 1048576, the limit (max_nodes)");
    CHECK(hetlaunch::expand_tasks_per_node("2(x3)", SIZE_MAX)->size() == 3);
    CHECK(hetlaunch::expand_tasks_per_node("2147483648").error().to_string() ==
          "line 1, column 1: a count is larger than 2147483647");
  }

  TEST_CASE("compress_hostlist merges numbers up to 2^64 - 1 as scontrol does, and never wraps") {
    CHECK(hetlaunch::compress_hostlist({"n18446744073709551614", "n18446744073709551615"}) ==
          "n[18446744073709551614-18446744073709551615]");
    CHECK(hetlaunch::compress_hostlist({"n10000000000000000000", "n10000000000000000001"}) ==
          "n[10000000000000000000-10000000000000000001]");
    CHECK(hetlaunch::compress_hostlist({"n000000000000000000001", "n000000000000000000002"}) ==
          "n[000000000000000000001-000000000000000000002]");
    // scontrol 22.05 prints n[18446744073709551615] here, losing n0: 2^64 - 1 + 1 wraps to 0.
    CHECK(hetlaunch::compress_hostlist({"n18446744073709551615", "n0"}) ==
          "n[18446744073709551615,0]");
    // Past 2^64 - 1 a name is text, as it is.
    CHECK(hetlaunch::compress_hostlist({"n99999999999999999999"}) == "n99999999999999999999");
  }

  TEST_CASE("hostfiles: Open MPI's blanks around '=', and what each field says when it repeats") {
    const auto layout = [](std::string_view text) {
      const auto r = hetlaunch::parse_hostfile(text);
      if (!r) return "ERR " + r.error().to_string();
      std::string out;
      for (std::size_t i = 0; i < r->node_count(); ++i)
        out += hetlaunch::detail::concat(i ? " " : "", r->node(i).host, ":", r->nproc(i));
      return out;
    };
    CHECK(layout("a slots = 4\nb slots= 2 max_slots =3\nc\tcount\t=\t5") == "a:4 b:2 c:5");
    CHECK(layout("a slots =") == "ERR line 1, column 10: slots must be a positive integer, got ''");
    CHECK(
        layout("a slots 4") ==
        "ERR line 1, column 3: unexpected 'slots'; expected slots=N, max_slots=N, weight=W or max_batch=M");
    CHECK(
        layout("a = 4") ==
        "ERR line 1, column 3: unexpected '= 4'; expected slots=N, max_slots=N, weight=W or max_batch=M");
  }

  TEST_CASE("messages name a byte order mark, keep whole UTF-8 characters and cut long text") {
    CHECK(
        hetlaunch::parse_hostfile("\xef\xbb\xbfgpu-a slots=8").error().to_string() ==
        "line 1, column 1: the file starts with a UTF-8 byte order mark (U+FEFF), which is not part of a host "
        "name; save it without one");
    CHECK(
        hetlaunch::parse_hostfile("gpu-a slots=8\n\xef\xbb\xbfgpu-b").error().to_string() ==
        "line 2, column 1: host '\\u{FEFF}gpu-b' is not a valid RFC 1123 name or IP literal: a UTF-8 byte order mark "
        "(U+FEFF) at position 0 is not allowed");
    CHECK(
        hetlaunch::parse_hostfile("n\xc3\xa9ud slots=1").error().to_string() ==
        "line 1, column 2: host 'n\xc3\xa9ud' is not a valid RFC 1123 name or IP literal: character '\xc3\xa9' at "
        "position 1 is not allowed");
    CHECK(
        hetlaunch::parse_hostfile("n\xff\xfe slots=1").error().to_string() ==
        "line 1, column 2: host 'n\\xff\\xfe' is not a valid RFC 1123 name or IP literal: character '\\xff' at "
        "position 1 is not allowed");
    // A 10 MB line is not echoed whole.
    const std::string huge = hetlaunch::detail::concat("host ", std::string(10u << 20, 'x'));
    const std::string message = hetlaunch::parse_hostfile(huge).error().message;
    CHECK(message.size() < 200);
    CHECK(message.find("... (10485760 bytes)") != std::string::npos);
    CHECK(hetlaunch::detail::quoted(std::string(100, 'a')) ==
          hetlaunch::detail::concat("'", std::string(80, 'a'), "'... (100 bytes)"));
    // A cut never splits a character: 40 two-byte characters then one more.
    std::string accents;
    for (int i = 0; i < 41; ++i) accents += "\xc3\xa9";
    CHECK(hetlaunch::detail::quoted(accents).find("\xc3\xa9'... (82 bytes)") != std::string::npos);
  }

  TEST_CASE("host:slots lists blame the character, not IPv6") {
    CHECK(
        hetlaunch::parse_host_list("a:1;b:1").error().to_string() ==
        "line 1, column 4: host 'a:1;b' is not a valid RFC 1123 name or IP literal: character ';' at position 3 is not allowed");
    CHECK(hetlaunch::parse_host_list("fe80::1:4").error().to_string() ==
          "line 1, column 1: IPv6 addresses cannot be written in host:slots lists");
  }

  TEST_CASE(
      "property: duplicate hosts are found in linear time exactly as a pairwise search finds them") {
    unsigned seed = 12345;
    const auto next = [&seed] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
    for (int round = 0; round < 200; ++round) {
      const std::size_t n = 1 + next() % 40;
      std::vector<std::string> hosts;
      for (std::size_t i = 0; i < n; ++i) {
        std::string h = hetlaunch::detail::concat("h", next() % 8);  // few names: many duplicates
        if (next() % 2) h[0] = 'H';  // case differs, host is the same
        hosts.push_back(h);
      }
      std::vector<hetlaunch::node_spec> specs;
      for (const auto& h : hosts) specs.push_back({h, 1});
      const hetlaunch::cluster c(specs);
      std::vector<std::pair<std::size_t, std::size_t>> expected;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (hetlaunch::detail::compare_host(hosts[i], hosts[j]) == 0) {
            expected.emplace_back(i, j);
            break;
          }
      std::vector<std::pair<std::size_t, std::size_t>> found;
      for (const auto& d : hetlaunch::validate(c))
        if (d.code == hetlaunch::errc::duplicate_host) found.emplace_back(d.node, d.other_node);
      CHECK(found == expected);
    }
  }

  TEST_CASE("hostfile and host list duplicates are reported on their line, whatever the size") {
    std::string text;
    for (int i = 0; i < 100000; ++i) text += hetlaunch::detail::concat("worker-", i, " slots=8\n");
    text += "WORKER-77 slots=1\n";
    CHECK(hetlaunch::parse_hostfile(text).error().to_string() ==
          "line 100001, column 1: host 'WORKER-77' is already on line 78");
    hetlaunch::hostfile_options allow;
    allow.allow_duplicate_hosts = true;
    CHECK(hetlaunch::parse_hostfile(text, allow)->node_count() == 100001);
    CHECK(hetlaunch::parse_host_list("a:1, b:2,A:3").error().to_string() ==
          "line 1, column 10: host 'A' is already at column 1");
    CHECK(hetlaunch::parse_host_list("a:1,A:3", allow)->node_count() == 2);
  }

  TEST_CASE("device filters allocate per listed device, not per worker") {
    const hetlaunch::cluster big{{"a", INT_MAX}, {"b", 2}};
    const auto one = hetlaunch::filter_devices(big, "a:0");
    REQUIRE(one);
    CHECK(one->node_count() == 1);
    CHECK(one->devices(0) == std::vector<int>{0});
    CHECK(hetlaunch::filter_devices(big, "a:2147483646")->devices(0) ==
          std::vector<int>{2147483646});
    CHECK(
        hetlaunch::filter_devices(big, "a").error().message ==
        "node 0 ('a') would list 2147483647 devices, more than 65536 (a filtered node lists every device it keeps)");
    CHECK(
        hetlaunch::filter_devices(big, "", "b").error().message ==
        "node 0 ('a') would list 2147483647 devices, more than 65536 (a filtered node lists every device it keeps)");
    CHECK(hetlaunch::filter_devices(big, "a:2147483647").error().message ==
          "device 2147483647 is not on host 'a', which has devices 0..2147483646");
    // A long include list is sorted once, not searched once per device.
    std::string ids = "w:";
    for (int d = 0; d < 60000; ++d) ids += hetlaunch::detail::concat(d ? "," : "", 59999 - d);
    const auto many = hetlaunch::filter_devices(hetlaunch::cluster{{"w", 60000}}, ids);
    REQUIRE(many);
    CHECK(many->nproc(0) == 60000);
    CHECK(many->devices(0).front() == 0);
    CHECK(many->devices(0).back() == 59999);
  }

  TEST_CASE("filter_devices_mapped says where each kept node came from") {
    const hetlaunch::cluster c{{"n1", 2}, {"n2", 2}, {"n3", 2}};
    const auto r = hetlaunch::filter_devices_mapped(c, "", "n1");
    REQUIRE(r);
    CHECK(r->source_node == std::vector<std::size_t>{1, 2});
    CHECK(r->nodes.node(0).host == "n2");
  }
}
