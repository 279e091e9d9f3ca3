// SPDX-License-Identifier: MIT
// hostfile.hpp: every format rule, and every error with its line, column and message.
#include <doctest/doctest.h>

#include <hetlaunch/hostfile.hpp>

#include "../support/cluster_layout.hpp"

#include <string>
#include <vector>

using hetlaunch::cluster;
using strings = std::vector<std::string>;

namespace {

using test_support::layout;

std::string hostfile(const char* text) { return layout(hetlaunch::parse_hostfile(text)); }
std::string host_list(const char* text) { return layout(hetlaunch::parse_host_list(text)); }

}  // namespace

TEST_SUITE("hostfile") {
  TEST_CASE("DeepSpeed and Open MPI lines: host slots=N") {
    CHECK(hostfile("worker-0 slots=8\nworker-1 slots=4\n") == "worker-0:8 worker-1:4");
    CHECK(hostfile("worker-0 slots=04") == "worker-0:4");  // no trailing newline; leading zeros
  }
  TEST_CASE("MPICH lines: host:N; a bare host is one slot") {
    CHECK(hostfile("a:2\nb\nc slots=3") == "a:2 b:1 c:3");
  }
  TEST_CASE("comments, blank lines, tabs and CRLF") {
    CHECK(hostfile("# cluster\r\n\r\n\tgpu-a\tslots=8 # the big one\r\n  gpu-b slots=4\r\n#end") ==
          "gpu-a:8 gpu-b:4");
  }
  TEST_CASE("Open MPI's synonyms and max_slots") {
    CHECK(hostfile("a count=2\nb cpu=3\nc max_slots=5\nd slots=2 max-slots=4\ne slots_max=1") ==
          "a:2 b:3 c:5 d:2 e:1");
  }
  TEST_CASE("IP literals, IPv6 without a count in the host token") {
    CHECK(hostfile("10.0.0.1 slots=2\nfe80::1 slots=4\n::1") == "10.0.0.1:2 fe80::1:4 ::1:1");
  }
  TEST_CASE("every error names line and column") {
    CHECK(hostfile("a slots=4\nb slots=4\nworker slots=0") ==
          "ERR 3:14: slots must be a positive integer, got '0'");
    CHECK(hostfile("a slots=-1") == "ERR 1:9: slots must be a positive integer, got '-1'");
    CHECK(hostfile("a slots=") == "ERR 1:9: slots must be a positive integer, got ''");
    CHECK(hostfile("a slots=4abc") == "ERR 1:9: slots must be a positive integer, got '4abc'");
    CHECK(hostfile("a slots=99999999999") ==
          "ERR 1:9: slots must be a positive integer, got '99999999999'");
    CHECK(hostfile("a:0") == "ERR 1:3: slots must be a positive integer, got '0'");
    CHECK(
        hostfile("a slot=4") ==
        "ERR 1:3: unexpected 'slot=4' (did you mean slots=?); expected slots=N, max_slots=N, weight=W or max_batch=M");
    CHECK(hostfile("a SLOTS=4") ==
          "ERR 1:3: unexpected 'SLOTS=4'; expected slots=N, max_slots=N, weight=W or max_batch=M");
    CHECK(hostfile("a slots=2 slots=3") == "ERR 1:11: slots is given twice for host 'a'");
    CHECK(hostfile("a:2 slots=3") ==
          "ERR 1:5: slots= gives the slots of host 'a' again (host:N gave them)");
    CHECK(hostfile("a count=2 cpu=2") ==
          "ERR 1:11: cpu= gives the slots of host 'a' again (count= gave them)");
    CHECK(hostfile("a max_slots=2 max-slots=3") ==
          "ERR 1:15: max_slots is given twice for host 'a'");
    CHECK(hostfile("a slots=4 max_slots=2") == "ERR 1:9: max_slots (2) is less than slots (4)");
    CHECK(hostfile("a\nb\n\nA slots=2") == "ERR 4:1: host 'A' is already on line 1");
    CHECK(
        hostfile("gpu;reboot slots=2") ==
        "ERR 1:4: host 'gpu;reboot' is not a valid RFC 1123 name or IP literal: character ';' at position 3 is not allowed");
    CHECK(
        hostfile("  -oProxyCommand=x") ==
        "ERR 1:17: host '-oProxyCommand=x' is not a valid RFC 1123 name or IP literal: character '=' at position 14 is not allowed");
    CHECK(
        hostfile("[fe80::1] slots=2") ==
        "ERR 1:1: host '[fe80::1]' is not a valid RFC 1123 name or IP literal: character '[' at position 0 is not allowed (write IPv6 addresses without brackets)");
    CHECK(hostfile("") == "ERR 1:1: the hostfile names no hosts");
    CHECK(hostfile("# only\n\n") == "ERR 1:1: the hostfile names no hosts");
    CHECK(
        hostfile("a slots=2147483647\nb slots=1") ==
        "ERR 2:1: the world size would be 2147483648, more than 2147483647 (torch.distributed ranks are 32-bit)");
  }
  TEST_CASE("a leading '-' is refused, so no host can become an ssh option") {
    CHECK(
        hostfile("-a slots=1") ==
        "ERR 1:1: host '-a' is not a valid RFC 1123 name or IP literal: a label starts or ends with '-' at position 0");
  }
  TEST_CASE("underscores only when allowed") {
    CHECK(hostfile("node_1 slots=2").rfind("ERR 1:5:", 0) == 0);
    CHECK(layout(hetlaunch::parse_hostfile("node_1 slots=2", {true})) == "node_1:2");
  }
  TEST_CASE("Horovod -H lists") {
    CHECK(host_list("h1:4,h2:8") == "h1:4 h2:8");
    CHECK(host_list(" h1:4 , h2:8 ") == "h1:4 h2:8");
    CHECK(host_list("h1:4,,h2:8") == "ERR 1:6: empty item; expected host:slots");
    CHECK(host_list("h1:4,h2") == "ERR 1:6: 'h2' has no slot count; expected host:slots");
    CHECK(host_list("h1:0") == "ERR 1:4: slots must be a positive integer, got '0'");
    CHECK(host_list("h1:4,H1:2") == "ERR 1:6: host 'H1' is already at column 1");
    CHECK(host_list("fe80::1:4") ==
          "ERR 1:1: IPv6 addresses cannot be written in host:slots lists");
    CHECK(host_list("") == "ERR 1:1: empty item; expected host:slots");
  }
}
