// SPDX-License-Identifier: MIT
// cpu_topology.hpp: CPU lists as Linux writes them, PCI addresses in both forms, and nvidia-smi's
// GPU list.
#include <doctest/doctest.h>

#include <hetlaunch/cpu_topology.hpp>

#include <string>
#include <vector>

using hetlaunch::cpu_list;

TEST_SUITE("CPU topology") {
  TEST_CASE("a CPU list reads and writes as Linux's cpulist files") {
    CHECK(hetlaunch::parse_cpulist("0-3,8,10-11\n").value() == cpu_list{0, 1, 2, 3, 8, 10, 11});
    CHECK(hetlaunch::parse_cpulist("").value().empty());
    CHECK(hetlaunch::parse_cpulist("\n").value().empty());
    CHECK(hetlaunch::parse_cpulist("5,1-2,2-3").value() == cpu_list{1, 2, 3, 5});
    CHECK(hetlaunch::format_cpulist({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
    CHECK(hetlaunch::format_cpulist({}).empty());
    CHECK(hetlaunch::format_cpulist({7}) == "7");
    for (const char* bad :
         {"3-1", "a", "1,", ",1", "1,,2", "-1", "1-", "65536", "0-4294967295", "1 2"})
      CHECK_MESSAGE(!hetlaunch::parse_cpulist(bad), bad);
    CHECK(hetlaunch::parse_cpulist("0-99999").error().message ==
          "not a CPU list: '0-99999' (at '0-99999'; CPUs are numbered 0 to 65535)");
    CHECK(hetlaunch::parse_cpulist("0-99999").error().code == hetlaunch::errc::bad_syntax);
  }

  TEST_CASE("property: format then parse gives the list back, for every subset of 12 CPUs") {
    for (unsigned mask = 0; mask < (1u << 12); ++mask) {
      cpu_list cpus;
      for (unsigned cpu = 0; cpu < 12; ++cpu)
        if (mask & (1u << cpu)) cpus.push_back(cpu * 3 / 2);
      REQUIRE(hetlaunch::parse_cpulist(hetlaunch::format_cpulist(cpus)).value() == cpus);
    }
  }

  TEST_CASE("a hostile CPU list costs no more than its text and the CPU limit") {
    std::string many;
    for (int i = 0; i < 100000; ++i) many += "0-65535,";
    many += "1";
    CHECK(hetlaunch::parse_cpulist(many).value().size() == 65536);
  }

  TEST_CASE(
      "PCI addresses: nvidia-smi's 8 upper-case domain digits become sysfs's 4 lower-case ones") {
    CHECK(hetlaunch::sysfs_pci_address("00000000:3B:00.0").value() == "0000:3b:00.0");
    CHECK(hetlaunch::sysfs_pci_address("0000:3b:00.0").value() == "0000:3b:00.0");
    CHECK(hetlaunch::sysfs_pci_address(" 00010000:07:1F.1\n").value() == "10000:07:1f.1");
    for (const char* bad : {"", "3b:00.0", "0000:3b:00", "0000:3b:0.0", "0000:3g:00.0",
                            "0000:3b:00.8", "000000000:3b:00.0"})
      CHECK_MESSAGE(!hetlaunch::sysfs_pci_address(bad), bad);
  }

  TEST_CASE("nvidia-smi's GPU list, sorted by index; a bad line names its line and column") {
    const auto list =
        hetlaunch::parse_gpu_pci_list("1, 00000000:0F:00.0\n0, 00000000:07:00.0\n\n").value();
    REQUIRE(list.size() == 2);
    CHECK(list[0] == hetlaunch::gpu_device{0, "0000:07:00.0"});
    CHECK(list[1] == hetlaunch::gpu_device{1, "0000:0f:00.0"});
    CHECK(
        hetlaunch::parse_gpu_pci_list("0, 00000000:07:00.0\nNo devices were found\n")
            .error()
            .to_string() ==
        "line 2, column 1: expected 'INDEX, PCI ADDRESS' (nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader), "
        "got 'No devices were found'");
    CHECK(hetlaunch::parse_gpu_pci_list("0, 00000000:07:00.0\n0, 00000000:08:00.0\n")
              .error()
              .to_string() == "line 2, column 1: GPU 0 is listed twice");
    CHECK(hetlaunch::parse_gpu_pci_list("").value().empty());
  }
}
