// SPDX-License-Identifier: MIT
// cpu_binding.hpp: each local rank's CPUs by torchrun's modes on small trees held in memory (the
// recorded trees of real machines are compared with torch's own code in tests/binding), and how a
// plan starts its workers through `hetlaunch bind`.
#include <doctest/doctest.h>

#include <hetlaunch/cpu_binding.hpp>
#include <hetlaunch/plan.hpp>

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace {
using hetlaunch::cpu_list;
using hetlaunch::numa_binding;

// A tree in memory: path -> text, read as the tool reads sysfs.
struct tree {
  std::map<std::string, std::string> files;
  std::optional<std::string> operator()(const std::string& path) const {
    const auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  void cpu(unsigned cpu, int package, const std::string& siblings, const std::string& l3) {
    const std::string dir = "devices/system/cpu/cpu" + std::to_string(cpu) + "/";
    files[dir + "topology/physical_package_id"] = std::to_string(package) + "\n";
    files[dir + "topology/thread_siblings_list"] = siblings + "\n";
    files[dir + "cache/index0/type"] = "Data\n";
    files[dir + "cache/index0/level"] = "1\n";
    files[dir + "cache/index0/shared_cpu_list"] = siblings + "\n";
    files[dir + "cache/index1/type"] = "Instruction\n";
    files[dir + "cache/index1/level"] = "1\n";
    files[dir + "cache/index1/shared_cpu_list"] = siblings + "\n";
    files[dir + "cache/index2/type"] = "Unified\n";
    files[dir + "cache/index2/level"] = "3\n";
    files[dir + "cache/index2/shared_cpu_list"] = l3 + "\n";
  }
};

// Two sockets, one NUMA node each, 4 cores of 2 threads a node (cpu N and N + 8 are siblings),
// two L3 groups of 2 cores a node; GPUs 0, 1 on node 1 and GPU 2 on node 0.
tree two_sockets() {
  tree t;
  t.files["devices/system/node/possible"] = "0-1\n";
  t.files["devices/system/node/node0/cpulist"] = "0-3,8-11\n";
  t.files["devices/system/node/node1/cpulist"] = "4-7,12-15\n";
  for (unsigned core = 0; core < 8; ++core) {
    const unsigned l3 = core - core % 2;
    const std::string group = std::to_string(l3) + "-" + std::to_string(l3 + 1) + "," +
                              std::to_string(l3 + 8) + "-" + std::to_string(l3 + 9);
    for (unsigned cpu : {core, core + 8})
      t.cpu(cpu, core < 4 ? 0 : 1, std::to_string(core) + "," + std::to_string(core + 8), group);
  }
  t.files["bus/pci/devices/0000:41:00.0/numa_node"] = "1\n";
  t.files["bus/pci/devices/0000:42:00.0/numa_node"] = "1\n";
  t.files["bus/pci/devices/0000:01:00.0/numa_node"] = "0\n";
  return t;
}

const std::vector<hetlaunch::gpu_device> tree_gpus = {
    {0, "0000:41:00.0"}, {1, "0000:42:00.0"}, {2, "0000:01:00.0"}};
const cpu_list every_cpu = *hetlaunch::parse_cpulist("0-15");

std::string cpus_of(const tree& t, numa_binding mode, int rank, const cpu_list& allowed = every_cpu,
                    const std::vector<hetlaunch::gpu_device>& visible = tree_gpus) {
  const auto topology = hetlaunch::cpu_topology::read(t, tree_gpus);
  const auto r = hetlaunch::local_rank_binding(topology, mode, visible, rank, allowed);
  return r ? hetlaunch::format_cpulist(r->cpus) : "error: " + r.error().message;
}
}  // namespace

TEST_SUITE("CPU binding") {
  TEST_CASE("the visible devices pick and order the GPUs") {
    CHECK(hetlaunch::visible_gpus(tree_gpus, std::nullopt).value() == tree_gpus);
    const auto two = hetlaunch::visible_gpus(tree_gpus, std::string_view("2,0")).value();
    REQUIRE(two.size() == 2);
    CHECK(two[0].index == 2);
    CHECK(two[1].index == 0);
    CHECK(hetlaunch::visible_gpus(tree_gpus, std::string_view("")).value().empty());
    CHECK(hetlaunch::visible_gpus(tree_gpus, std::string_view("0,0")).error().message ==
          "the visible devices '0,0' name GPU 0 twice");
    CHECK(hetlaunch::visible_gpus(tree_gpus, std::string_view("3")).error().message ==
          "the visible devices '3' name GPU 3, which the node does not have (it has 0,1,2)");
    CHECK(hetlaunch::visible_gpus(tree_gpus, std::string_view("3")).error().code ==
          hetlaunch::errc::bad_visible_devices);
  }

  TEST_CASE("node: every allowed CPU of the GPU's NUMA node") {
    const tree t = two_sockets();
    CHECK(cpus_of(t, numa_binding::node, 0) == "4-7,12-15");
    CHECK(cpus_of(t, numa_binding::node, 2) == "0-3,8-11");
    CHECK(cpus_of(t, numa_binding::node, 0, *hetlaunch::parse_cpulist("0-5")) == "4-5");
  }

  TEST_CASE("socket: every NUMA node of the GPU's socket") {
    tree t = two_sockets();
    CHECK(cpus_of(t, numa_binding::socket, 0) == "4-7,12-15");
    // Node 1 moved onto socket 0: GPU 2's socket now holds both nodes.
    for (unsigned cpu : {4u, 5u, 6u, 7u, 12u, 13u, 14u, 15u})
      t.files["devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/physical_package_id"] =
          "0\n";
    CHECK(cpus_of(t, numa_binding::socket, 2) == "0-15");
    // torch's rule needs an allowed CPU on every NUMA node to know its socket.
    CHECK(
        cpus_of(t, numa_binding::socket, 2, *hetlaunch::parse_cpulist("0-3")) ==
        "error: local rank 2 (GPU 2, 0000:01:00.0): NUMA node 1 has no CPU this worker may use, so its socket is unknown");
    // The local rank's prefix keeps the code of what it wraps.
    const auto topology = hetlaunch::cpu_topology::read(t, tree_gpus);
    CHECK(hetlaunch::local_rank_binding(topology, numa_binding::socket, tree_gpus, 2,
                                        *hetlaunch::parse_cpulist("0-3"))
              .error()
              .code == hetlaunch::errc::no_binding);
  }

  TEST_CASE("exclusive: the node's cores split among all of its visible GPUs, in visible order") {
    const tree t = two_sockets();
    CHECK(cpus_of(t, numa_binding::exclusive, 0) == "4-5,12-13");
    CHECK(cpus_of(t, numa_binding::exclusive, 1) == "6-7,14-15");
    CHECK(cpus_of(t, numa_binding::exclusive, 2) == "0-3,8-11");
    // GPU 1 first: it takes the first half.
    const std::vector<hetlaunch::gpu_device> reversed = {tree_gpus[1], tree_gpus[0]};
    CHECK(cpus_of(t, numa_binding::exclusive, 0, every_cpu, reversed) == "4-5,12-13");
    CHECK(cpus_of(t, numa_binding::exclusive, 1, every_cpu, reversed) == "6-7,14-15");
    // Three allowed cores for two GPUs: the lower one takes the extra core; siblings stay together.
    const cpu_list three = *hetlaunch::parse_cpulist("4-6,12-13");
    CHECK(cpus_of(t, numa_binding::exclusive, 0, three) == "4-5,12-13");
    CHECK(cpus_of(t, numa_binding::exclusive, 1, three) == "6");
    // A core counts once, whatever its threads: one core is too few for two GPUs.
    CHECK(
        cpus_of(t, numa_binding::exclusive, 1, *hetlaunch::parse_cpulist("4,12")) ==
        "error: local rank 1 (GPU 1, 0000:42:00.0): exclusive: NUMA node 1 has 1 physical core this worker may use, "
        "fewer than its 2 GPUs");
  }

  TEST_CASE(
      "core-complex: one L3 group per GPU, the groups with most allowed CPUs first, cycling") {
    const tree t = two_sockets();
    CHECK(cpus_of(t, numa_binding::core_complex, 0) == "4-5,12-13");
    CHECK(cpus_of(t, numa_binding::core_complex, 1) == "6-7,14-15");
    CHECK(cpus_of(t, numa_binding::core_complex, 2) == "0-1,8-9");
    // Fewer allowed CPUs in the first group: the second comes first.
    const cpu_list uneven = *hetlaunch::parse_cpulist("4,6-7,12-15");
    CHECK(cpus_of(t, numa_binding::core_complex, 0, uneven) == "6-7,14-15");
    CHECK(cpus_of(t, numa_binding::core_complex, 1, uneven) == "4,12-13");
    // One group for two GPUs: both get it.
    const cpu_list one_group = *hetlaunch::parse_cpulist("4-5,12-13");
    CHECK(cpus_of(t, numa_binding::core_complex, 1, one_group) == "4-5,12-13");
  }

  TEST_CASE("numa_node -1 counts as node 0") {
    tree t = two_sockets();
    t.files["bus/pci/devices/0000:41:00.0/numa_node"] = "-1\n";
    CHECK(cpus_of(t, numa_binding::node, 0) == "0-3,8-11");
    const auto topology = hetlaunch::cpu_topology::read(t, tree_gpus);
    CHECK(hetlaunch::local_rank_binding(topology, numa_binding::node, tree_gpus, 0, every_cpu)
              ->numa_node == 0);
  }

  TEST_CASE("a binding refuses only for what it needs, naming the rank, the GPU and the file") {
    tree t = two_sockets();
    t.files.erase("devices/system/cpu/cpu4/cache/index2/type");
    t.files.erase("devices/system/cpu/cpu4/cache/index0/type");
    CHECK(cpus_of(t, numa_binding::node, 0) == "4-7,12-15");
    CHECK(
        cpus_of(t, numa_binding::core_complex, 0) ==
        "error: local rank 0 (GPU 0, 0000:41:00.0): the CPU topology has no devices/system/cpu/cpu4/cache/index0/type");
    t.files.erase("devices/system/node/node0/cpulist");
    CHECK(cpus_of(t, numa_binding::node, 0) == "4-7,12-15");
    CHECK(
        cpus_of(t, numa_binding::node, 2) ==
        "error: local rank 2 (GPU 2, 0000:01:00.0): the CPU topology has no devices/system/node/node0/cpulist");
    t.files["bus/pci/devices/0000:42:00.0/numa_node"] = "one\n";
    CHECK(
        cpus_of(t, numa_binding::exclusive, 0) ==
        "error: local rank 0 (GPU 0, 0000:41:00.0): the CPU topology's bus/pci/devices/0000:42:00.0/numa_node holds "
        "'one', not an integer");
    CHECK(
        cpus_of(t, numa_binding::node, 3) ==
        "error: local rank 3 has no GPU: the node shows 3 GPUs (CUDA_VISIBLE_DEVICES, --devices)");
    CHECK(
        cpus_of(t, numa_binding::node, 0, {}) ==
        "error: local rank 0 (GPU 0, 0000:41:00.0): node: no CPU of NUMA node 1 is one this worker may use (allowed: none)");
  }

  TEST_CASE("a reader that says why a file cannot be read: the query names the file and why") {
    // A reader of result<optional<string>, binding_error>: nothing for a missing file, an error
    // for one that is there but cannot be read.
    const tree t = two_sockets();
    using read_result = hetlaunch::result<std::optional<std::string>, hetlaunch::binding_error>;
    const auto reader = [&t](const std::string& path) -> read_result {
      if (path == "devices/system/node/node1/cpulist")
        return hetlaunch::binding_error{"cannot be read: it is a directory"};
      return t(path);
    };
    static_assert(std::is_same<hetlaunch::binding_error, hetlaunch::parse_error>::value,
                  "a binding's error is the library's one error, without a line");
    const auto topology = hetlaunch::cpu_topology::read(reader, tree_gpus);
    CHECK(topology.numa_node_cpus(1).error().line == 0);
    CHECK(topology.numa_node_cpus(1).error().code == hetlaunch::errc::bad_cpu_topology);
    CHECK(topology.numa_node_cpus(1).error().message ==
          "the CPU topology's devices/system/node/node1/cpulist cannot be read: it is a directory");
    // What does not depend on it is unaffected; a file the tree lacks is still missing.
    CHECK(topology.numa_node_cpus(0).value() == *hetlaunch::parse_cpulist("0-3,8-11"));
    CHECK(topology.numa_node_cpus(7).error().message ==
          "the CPU topology has no devices/system/node/node7/cpulist");
    CHECK(topology.numa_node_cpus(1).error().code == hetlaunch::errc::bad_cpu_topology);
    CHECK(topology.numa_node_cpus(7).error().code == hetlaunch::errc::bad_cpu_topology);
  }

  TEST_CASE(
      "4,096 CPUs whose siblings and caches each name every CPU: read right, a bad one named") {
    // 4,096 CPUs whose every list names all of them: the lowest CPU of each is 0, read from one
    // parse of the shared text. A list that is not one is named at its own path.
    tree t;
    const unsigned n = 4096;
    const std::string all = "0-" + std::to_string(n - 1);
    t.files["devices/system/node/possible"] = "0\n";
    t.files["devices/system/node/node0/cpulist"] = all + "\n";
    t.files["bus/pci/devices/0000:01:00.0/numa_node"] = "0\n";
    for (unsigned cpu = 0; cpu < n; ++cpu) t.cpu(cpu, 0, all, all);
    t.files["devices/system/cpu/cpu7/topology/thread_siblings_list"] = "7-3\n";
    const std::vector<hetlaunch::gpu_device> one = {{0, "0000:01:00.0"}};
    const auto topology = hetlaunch::cpu_topology::read(t, one);
    CHECK(topology.core_of(4095).value() == 0);
    CHECK(topology.cache_group_of(4095).value() == 0);
    CHECK(topology.core_of(7).error().message ==
          "the CPU topology's devices/system/cpu/cpu7/topology/thread_siblings_list holds '7-3', "
          "not a CPU list");
  }

  TEST_CASE("local_rank_bindings covers ranks 0 to nproc - 1 and stops at the first error") {
    const tree t = two_sockets();
    const auto topology = hetlaunch::cpu_topology::read(t, tree_gpus);
    const auto all =
        hetlaunch::local_rank_bindings(topology, numa_binding::exclusive, tree_gpus, 3, every_cpu)
            .value();
    REQUIRE(all.size() == 3);
    CHECK(all[2].gpu == 2);
    CHECK(all[2].pci == "0000:01:00.0");
    CHECK(all[2].numa_node == 0);
    CHECK(!hetlaunch::local_rank_bindings(topology, numa_binding::node, tree_gpus, 4, every_cpu));
  }

  TEST_CASE("a plan with a binding starts every worker through `hetlaunch bind`, on every torch") {
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.script_args = {"--lr", "0.1"};
    o.binding = numa_binding::exclusive;
    o.torch = {1, 13};
    const hetlaunch::cluster c({{"a", 2}, {"b", 1}});
    const auto argv = hetlaunch::torchrun_argv(c, 1, o);
    const std::vector<std::string> tail = {"--no_python", "hetlaunch", "bind",    "--numa-binding",
                                           "exclusive",   "--",        "python3", "-u",
                                           "train.py",    "--lr",      "0.1"};
    REQUIRE(argv.size() > tail.size());
    CHECK(std::vector<std::string>(argv.end() - static_cast<long>(tail.size()), argv.end()) ==
          tail);
    o.module = true;
    o.flags = hetlaunch::flag_style::dash;
    o.torch = {2, 6};
    o.bind_program = "/opt/hetlaunch/bin/hetlaunch";
    o.python = "/venv/bin/python";
    const auto module = hetlaunch::torchrun_argv(c, 0, o);
    const std::vector<std::string> module_tail = {"--no-python",
                                                  "/opt/hetlaunch/bin/hetlaunch",
                                                  "bind",
                                                  "--numa-binding",
                                                  "exclusive",
                                                  "--",
                                                  "/venv/bin/python",
                                                  "-u",
                                                  "-m",
                                                  "train.py",
                                                  "--lr",
                                                  "0.1"};
    CHECK(std::vector<std::string>(module.end() - static_cast<long>(module_tail.size()),
                                   module.end()) == module_tail);
    // The script is a program already: no Python in between, no second --no-python.
    o.module = false;
    o.torchrun_args = {"--no-python"};
    const auto program = hetlaunch::torchrun_argv(c, 0, o);
    const std::vector<std::string> program_tail = {"--no-python", "/opt/hetlaunch/bin/hetlaunch",
                                                   "bind",        "--numa-binding",
                                                   "exclusive",   "--",
                                                   "train.py",    "--lr",
                                                   "0.1"};
    CHECK(std::vector<std::string>(program.end() - static_cast<long>(program_tail.size()),
                                   program.end()) == program_tail);
    // Without a binding nothing changes.
    o.binding = numa_binding::none;
    o.torchrun_args.clear();
    CHECK(hetlaunch::torchrun_argv(c, 0, o).back() == "0.1");
    CHECK(hetlaunch::torchrun_argv(c, 0, o)[hetlaunch::torchrun_argv(c, 0, o).size() - 3] ==
          "train.py");
  }

  TEST_CASE("a binding refuses torchrun arguments that replace how workers start") {
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.binding = numa_binding::node;
    const hetlaunch::cluster c({{"a", 2}});
    for (const char* arg : {"--run-path", "--run_path", "--numa-binding=node", "--numa_binding"}) {
      o.torchrun_args = {arg};
      const auto r = hetlaunch::try_torchrun_argv(c, 0, o);
      REQUIRE_MESSAGE(!r, arg);
      CHECK(r.error().code == hetlaunch::errc::binding_entrypoint);
      CHECK(r.error().message().find("changes how torchrun starts each worker") !=
            std::string::npos);
    }
    o.binding = numa_binding::none;
    o.torchrun_args = {"--numa-binding=node"};
    CHECK(hetlaunch::try_torchrun_argv(c, 0, o));
  }

  TEST_CASE("a worker started without torchrun is bound the same way") {
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.script_args = {"--rank=${local_rank}"};
    o.binding = numa_binding::socket;
    CHECK(hetlaunch::worker_argv(1, o) ==
          std::vector<std::string>{"hetlaunch", "bind", "--numa-binding", "socket", "--", "python3",
                                   "-u", "train.py", "--rank=1"});
  }
}
