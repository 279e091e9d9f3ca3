// SPDX-License-Identifier: MIT
// slurm_hostlist.hpp: Slurm's host list semantics (current Slurm, 23.11 and later) and its count
// lists. tests/slurm/ compares the expansions with Slurm's own scontrol.
#include <doctest/doctest.h>

#include <hetlaunch/slurm_hostlist.hpp>

#include <string>
#include <vector>

namespace {
std::string expand(const char* expr, std::size_t max_hosts = std::size_t{1} << 20) {
  const auto r = hetlaunch::expand_hostlist(expr, max_hosts);
  if (!r) return "ERR " + r.error().to_string();
  std::string out;
  for (const auto& h : *r) out += (out.empty() ? "" : " ") + h;
  return out;
}
std::string counts(const char* expr) {
  const auto r = hetlaunch::expand_tasks_per_node(expr);
  if (!r) return "ERR " + r.error().to_string();
  std::string out;
  for (int c : *r) out += hetlaunch::detail::concat(out.empty() ? "" : " ", c);
  return out;
}
}  // namespace

TEST_SUITE("slurm host lists") {
  TEST_CASE("ranges, lists, padding from the low bound's text") {
    CHECK(expand("a[1-3],b[08-10]") == "a1 a2 a3 b08 b09 b10");
    CHECK(expand("node[1-3,5,7-8]") == "node1 node2 node3 node5 node7 node8");
    CHECK(expand("a[1-010]") == "a1 a2 a3 a4 a5 a6 a7 a8 a9 a10");
    CHECK(expand("a[08-010]") == "a08 a09 a10");
    CHECK(expand("a[005,4,11-13]") == "a005 a4 a11 a12 a13");
    CHECK(expand("a[01-1]") == "a01");
    CHECK(expand("[00-2]") == "00 01 02");
    CHECK(expand("10.0.0.[1-3]") == "10.0.0.1 10.0.0.2 10.0.0.3");
  }
  TEST_CASE("order and duplicates are kept") {
    CHECK(expand("a[3,1,2]") == "a3 a1 a2");
    CHECK(expand("a[1-3],a[2-4]") == "a1 a2 a3 a2 a3 a4");
    CHECK(expand("b2,a1,b1") == "b2 a1 b1");
  }
  TEST_CASE("several brackets: the last is innermost, the others right to left") {
    CHECK(expand("rack[1-2]-node[01-03]") ==
          "rack1-node01 rack1-node02 rack1-node03 rack2-node01 rack2-node02 rack2-node03");
    CHECK(expand("a[1-2]b[1-2]c[1-2]") ==
          "a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 a1b2c2 a2b2c1 a2b2c2");
    CHECK(expand("a[1-2][3-4]") == "a13 a14 a23 a24");
  }
  TEST_CASE("text after the last bracket (Slurm >= 23.11; 22.05 refuses it)") {
    CHECK(expand("node[01-03]-ib") == "node01-ib node02-ib node03-ib");
    CHECK(expand("a[1-2].ib.cluster") == "a1.ib.cluster a2.ib.cluster");
    CHECK(expand("a[1-2]]") == "a1] a2]");
    CHECK(expand("a[[1-2]]") == "a[1] a[2]");
    CHECK(expand("[[1-2]") == "[1 [2");
  }
  TEST_CASE("separators: comma, blank, tab, newline; not inside brackets") {
    CHECK(expand("a b,c\td\ne") == "a b c d e");
    CHECK(expand(",a,,b,") == "a b");
    CHECK(expand("a[1, 3]") == "a1 a03");
    CHECK(expand("a[1-2]\nb[1-2]") == "a1 a2 b1 b2");
  }
  TEST_CASE("strtoul's quirks that Slurm keeps") {
    CHECK(expand("a[ 1-3]") == "a01 a02 a03");
    CHECK(expand("a[+1-3]") == "a01 a02 a03");
    CHECK(expand("a[1-+3]") == "a1 a2 a3");
    CHECK(expand("a[1-]") == "a1");
  }
  TEST_CASE("names without brackets are taken verbatim") {
    CHECK(expand("node1-2,node1-node3,a{1-2},@grp,a*") == "node1-2 node1-node3 a{1-2} @grp a*");
    CHECK(expand("a1-3]") == "a1-3]");
  }
  TEST_CASE("Slurm's errors, with the column") {
    CHECK(expand("a[3-1]") ==
          "ERR line 1, column 3: invalid range '3-1': the low bound is above the high bound");
    CHECK(expand("a[]") == "ERR line 1, column 3: empty range item");
    CHECK(expand("a[1,,3]") == "ERR line 1, column 5: empty range item");
    CHECK(expand("a[1,]") == "ERR line 1, column 5: empty range item");
    CHECK(expand("a[-1]") ==
          "ERR line 1, column 3: invalid range '-1': negative numbers are not allowed");
    CHECK(expand("a[1--3]") ==
          "ERR line 1, column 3: invalid range '1--3': negative numbers are not allowed");
    CHECK(expand("a[a-c]") == "ERR line 1, column 3: invalid range 'a-c': expected a number");
    CHECK(
        expand("a[1-3a]") ==
        "ERR line 1, column 3: invalid range '1-3a': unexpected text after the high bound (Slurm has no steps)");
    CHECK(
        expand("node[1-10:2]") ==
        "ERR line 1, column 6: invalid range '1-10:2': unexpected text after the high bound (Slurm has no steps)");
    CHECK(
        expand("node[1-10/2]") ==
        "ERR line 1, column 6: invalid range '1-10/2': unexpected text after the high bound (Slurm has no steps)");
    CHECK(
        expand("a[0x1-3]") ==
        "ERR line 1, column 3: invalid range '0x1-3': 'x' (box syntax) is for multi-dimensional clusters");
    CHECK(expand("a[0-65536]") ==
          "ERR line 1, column 3: too many hosts in range '0-65536' (Slurm's limit is 65536)");
    CHECK(
        expand("ok,a[1-40000,40001-70000]b[1]") ==
        "ERR line 1, column 5: a bracket before the last one of a name expands to more than 65536 hosts");
  }
  TEST_CASE("errors where Slurm silently produces garbage") {
    // 22.05 turns these into "a]" and "a]1]"; 23.02 and later refuse them too.
    CHECK(expand("a[1-3") == "ERR line 1, column 2: '[' without a matching ']'");
    CHECK(expand("a]1[") == "ERR line 1, column 4: '[' without a matching ']'");
    // Slurm saturates at 2^64 - 1.
    CHECK(
        expand("a[99999999999999999999]") ==
        "ERR line 1, column 3: number '99999999999999999999' is larger than 2^64 - 1 (Slurm would silently change it)");
    CHECK(expand("") == "ERR line 1, column 1: the host list is empty");
    CHECK(expand(" ,\t") == "ERR line 1, column 1: the host list is empty");
  }
  TEST_CASE("the host cap is checked before anything is allocated") {
    CHECK(expand("n[0-999999999]") ==
          "ERR line 1, column 3: too many hosts in range '0-999999999' (Slurm's limit is 65536)");
    CHECK(
        expand("a[1-40000]b[1-40000]") ==
        "ERR line 1, column 1: the host list names more than 1048576 hosts, the limit (max_hosts; hetlaunch's --max-hosts raises it)");
    CHECK(
        expand("a[1-3],b[1-3]", 5) ==
        "ERR line 1, column 8: the host list names more than 5 hosts, the limit (max_hosts; hetlaunch's --max-hosts raises it)");
    CHECK(expand("a[1-5]", 5) == "a1 a2 a3 a4 a5");
    CHECK(hetlaunch::expand_hostlist("a[0-65535]b[0-1]")->size() == 131072);
    // More than half the cap in plain names (the generating pass must not count them again).
    std::string names;
    for (int i = 0; i < 3; ++i) names += hetlaunch::detail::concat(i ? "," : "", "plain", i, "x");
    CHECK(expand(names.c_str(), 4) == "plain0x plain1x plain2x");
  }
  TEST_CASE("compress_hostlist prints what scontrol show hostlist prints") {
    CHECK(hetlaunch::compress_hostlist({"a1", "a2", "a3", "b08", "b09", "b10"}) ==
          "a[1-3],b[08-10]");
    CHECK(hetlaunch::compress_hostlist({"rack1-node01", "rack1-node02", "rack2-node01"}) ==
          "rack1-node[01-02],rack2-node01");
    CHECK(hetlaunch::compress_hostlist({"node01-ib", "node02-ib"}) == "node01-ib,node02-ib");
    CHECK(hetlaunch::compress_hostlist({"tux2", "tux1", "tux2"}) == "tux[2,1-2]");
    CHECK(hetlaunch::compress_hostlist({"a9", "a10"}) == "a[9-10]");
    CHECK(hetlaunch::compress_hostlist({"a1"}) == "a1");
    CHECK(hetlaunch::compress_hostlist({}).empty());
    for (const char* expr : {"a[1-3],b[08-10]", "gpu[001-128],cpu[1-4]", "n[1,3,5-9]"})
      CHECK(hetlaunch::compress_hostlist(*hetlaunch::expand_hostlist(expr)) == expr);
  }
  TEST_CASE("try_compress_hostlist: only names that a host list gives back as themselves") {
    CHECK(hetlaunch::try_compress_hostlist({"a1", "a2", "b"}).value() == "a[1-2],b");
    CHECK(hetlaunch::try_compress_hostlist({"n1", "a[1]"}).error().message ==
          "host 2 ('a[1]'): a host list would read it as the host 'a1'");
    CHECK(hetlaunch::try_compress_hostlist({"a,b"}).error().message ==
          "host 1 ('a,b'): a host list would read it as the hosts 'a,b'");
    CHECK(hetlaunch::try_compress_hostlist({"x["}).error().message.rfind(
              "host 1 ('x['): a host list cannot hold it (", 0) == 0);
    CHECK(hetlaunch::try_compress_hostlist({"a", ""}).error().message ==
          "host 2 (''): an empty name");
    CHECK(hetlaunch::try_compress_hostlist({"a b"}).error().code == hetlaunch::errc::bad_host);
  }

  TEST_CASE(
      "property: every accepted list of names reads back as itself; a refused name does not") {
    // Every name of up to 3 characters over an alphabet of name characters and separators, and
    // pairs of them: accepted exactly when the name alone reads back as itself.
    const std::string alphabet = "a1-[],. ";
    std::vector<std::string> names;
    for (std::size_t n = 1; n <= 3; ++n) {
      std::size_t total = 1;
      for (std::size_t k = 0; k < n; ++k) total *= alphabet.size();
      for (std::size_t code = 0; code < total; ++code) {
        std::string name;
        for (std::size_t k = 0, c = code; k < n; ++k, c /= alphabet.size())
          name += alphabet[c % alphabet.size()];
        names.push_back(name);
      }
    }
    std::vector<std::string> accepted;
    for (const std::string& name : names) {
      const auto alone = hetlaunch::expand_hostlist(name);
      const bool round_trips = alone && alone->size() == 1 && alone->front() == name;
      CHECK_MESSAGE(static_cast<bool>(hetlaunch::try_compress_hostlist({name})) == round_trips,
                    name);
      if (round_trips) accepted.push_back(name);
    }
    for (std::size_t i = 0; i + 1 < accepted.size(); i += 7) {
      const std::vector<std::string> pair = {accepted[i], accepted[i + 1]};
      const auto list = hetlaunch::try_compress_hostlist(pair);
      REQUIRE(list);
      CHECK_MESSAGE(hetlaunch::expand_hostlist(*list).value() == pair, *list);
    }
  }

  TEST_CASE("count lists: SLURM_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE") {
    CHECK(counts("2(x3),1") == "2 2 2 1");
    CHECK(counts("72(x2),36") == "72 72 36");
    CHECK(counts("8") == "8");
    CHECK(counts("1(x1)") == "1");
    CHECK(counts("") == "ERR line 1, column 1: the count list is empty");
    CHECK(counts("2(x0)") == "ERR line 1, column 4: a repeat count must be at least 1");
    CHECK(counts("2(3)") == "ERR line 1, column 3: expected 'x' after '(' as in 2(x3)");
    CHECK(counts("2(x3") == "ERR line 1, column 5: expected ')'");
    CHECK(counts("2,") == "ERR line 1, column 3: expected a count, got the end");
    CHECK(counts("-1") == "ERR line 1, column 1: expected a count, got '-'");
    CHECK(counts("2 ,1") == "ERR line 1, column 2: expected ',' or the end, got ' '");
    CHECK(counts("99999999999") == "ERR line 1, column 1: a count is larger than 2147483647");
    CHECK(
        counts("1(x99999999999)") ==
        "ERR line 1, column 1: the count list names 99999999999 nodes, more than 1048576, the limit (max_nodes)");
  }
}
