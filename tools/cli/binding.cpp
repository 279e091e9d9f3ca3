// SPDX-License-Identifier: MIT
// `cpus` and `bind`: the CPUs of each local rank by --numa-binding, from this machine's sysfs or a
// recorded tree, and binding a worker to them before it executes its command.
#include "cli.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace cli {
namespace {

// The most a sysfs file or the GPU listing may hold: sysfs files are one page, and
// nvidia-smi's listing is a line a GPU.
constexpr std::size_t max_file_bytes = 1 << 16;

// A sysfs file's text; nothing when the tree has no such file; why, when it is there and cannot be
// read (a directory, a FIFO, a file larger than any sysfs file, no permission).
hetlaunch::result<std::optional<std::string>, hetlaunch::binding_error> read_sysfs(
    const std::string& root, const std::string& relative) {
  using outcome = hetlaunch::result<std::optional<std::string>, hetlaunch::binding_error>;
  const std::string path = concat(root, "/", relative);
  const auto cannot = [](const std::string& why) {
    return outcome(hetlaunch::binding_error{"cannot be read: " + why});
  };
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? outcome(std::optional<std::string>())
                                               : cannot(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return cannot("it is a directory");
  if (!S_ISREG(st.st_mode)) return cannot("it is not a regular file");
  // O_NONBLOCK: a file that turned into a FIFO since must not hang the worker's start.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return cannot(std::strerror(errno));
  // A sysfs file is a line or two: read it in small pieces, up to the bound.
  std::string text;
  char buffer[512];
  ssize_t got = 0;
  while ((got = read(fd, buffer, sizeof buffer)) > 0 && text.size() <= max_file_bytes)
    text.append(buffer, static_cast<std::size_t>(got));
  const int read_error = errno;
  close(fd);
  if (got < 0) return cannot(std::strerror(read_error));
  if (text.size() > max_file_bytes)
    return cannot(
        concat("it is larger than ", max_file_bytes, " bytes, more than a sysfs file holds"));
  return outcome(std::optional<std::string>(std::move(text)));
}

// The node's GPUs: --gpu-pci-command's output, or nvidia-smi's.
result<std::vector<hetlaunch::gpu_device>> node_gpus(const binding_args& o) {
  const std::string command =
      o.gpu_pci_command.value_or("nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader");
  std::fflush(nullptr);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return invalid(concat("cannot run ", quoted(command), ": ", std::strerror(errno)));
  std::string text;
  char buffer[4096];
  std::size_t got = 0;
  while (text.size() <= max_file_bytes &&
         (got = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0)
    text.append(buffer, got);
  const int status = pclose(pipe.release());  // a command still writing gets SIGPIPE
  if (text.size() > max_file_bytes)
    return invalid(concat(quoted(command), " printed more than ", max_file_bytes, " bytes"));
  if (status != 0)
    return invalid(concat(
        quoted(command), " failed (",
        WIFEXITED(status) ? concat("exit status ", WEXITSTATUS(status))
                          : std::string("killed by a signal"),
        o.gpu_pci_command ? ")" : "; on a machine without nvidia-smi, give --gpu-pci-command)"));
  auto gpus = hetlaunch::parse_gpu_pci_list(text);
  if (!gpus) return invalid(concat(quoted(command), "'s output, ", gpus.error().to_string()));
  return *std::move(gpus);
}

// This process's allowed CPUs (sched_getaffinity), for any number of CPUs the kernel has.
result<hetlaunch::cpu_list> own_affinity() {
  for (int cpus = 1024; cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(static_cast<std::size_t>(cpus));
    const std::size_t size = CPU_ALLOC_SIZE(static_cast<std::size_t>(cpus));
    if (sched_getaffinity(0, size, set) == 0) {
      hetlaunch::cpu_list out;
      for (int cpu = 0; cpu < cpus && cpu <= static_cast<int>(hetlaunch::max_cpu_number); ++cpu)
        if (CPU_ISSET_S(static_cast<std::size_t>(cpu), size, set))
          out.push_back(static_cast<unsigned>(cpu));
      CPU_FREE(set);
      return out;
    }
    CPU_FREE(set);
    if (errno != EINVAL) break;
  }
  return invalid(concat("cannot read this process's CPU affinity: ", std::strerror(errno)));
}

result<completed> set_affinity(const hetlaunch::cpu_list& cpus) {
  const std::size_t count = cpus.empty() ? 1 : cpus.back() + 1u;
  cpu_set_t* set = CPU_ALLOC(count);
  const std::size_t size = CPU_ALLOC_SIZE(count);
  CPU_ZERO_S(size, set);
  for (unsigned cpu : cpus) CPU_SET_S(cpu, size, set);
  const int r = sched_setaffinity(0, size, set);
  CPU_FREE(set);
  if (r == 0) return completed{};
  return invalid(concat("cannot set the CPU affinity to ", hetlaunch::format_cpulist(cpus), ": ",
                        std::strerror(errno)));
}

// Everything a binding needs on this node: the topology, the visible GPUs and the allowed CPUs.
struct node_binding {
  hetlaunch::cpu_topology topology;
  std::vector<hetlaunch::gpu_device> visible;
  hetlaunch::cpu_list allowed;
};

result<node_binding> read_node(const binding_args& o, std::optional<std::string_view> devices,
                               bool tree_allowed) {
  auto gpus = node_gpus(o);
  if (!gpus) return gpus.error();
  auto visible = hetlaunch::visible_gpus(*gpus, devices);
  if (!visible) return visible.error();
  const std::string root = o.sysfs.value_or("/sys");
  node_binding b{hetlaunch::cpu_topology::read(
                     [&](const std::string& path) { return read_sysfs(root, path); }, *visible),
                 *std::move(visible),
                 {}};
  if (b.topology.all_cpus().empty() && !b.topology.possible_numa_nodes())
    return invalid(concat("no CPU topology under ", quoted(root), ": ",
                          b.topology.possible_numa_nodes().error().message));
  if (o.allowed_cpus) {
    auto allowed = hetlaunch::parse_cpulist(*o.allowed_cpus);
    if (!allowed) throw usage_error{concat("--allowed-cpus: ", allowed.error().message)};
    b.allowed = *std::move(allowed);
  } else if (tree_allowed) {
    b.allowed = b.topology.all_cpus();
  } else {
    auto own = own_affinity();
    if (!own) return own.error();
    b.allowed = *std::move(own);
  }
  return b;
}

std::optional<std::string_view> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (!value) return std::nullopt;
  return std::string_view(value);
}

}  // namespace

int cpus_command(const binding_options& o) {
  std::optional<std::string_view> devices =
      o.binding.devices ? std::optional<std::string_view>(*o.binding.devices)
                        : env_value("CUDA_VISIBLE_DEVICES");
  auto node = read_node(o.binding, devices, o.binding.sysfs.has_value());
  if (!node) return fail(concat("cpus: ", node.error().message));
  const int nproc = o.binding.nproc.value_or(static_cast<int>(node->visible.size()));
  auto ranks = hetlaunch::local_rank_bindings(node->topology, o.launch.binding, node->visible,
                                              nproc, node->allowed);
  if (!ranks) return fail(concat("cpus: ", ranks.error().message));
  const std::string mode(hetlaunch::numa_binding_name(o.launch.binding));
  if (o.format == "json") {
    std::string out = concat("{\"mode\": ", json_string(mode), ", \"ranks\": [");
    for (const auto& r : *ranks)
      out += concat(&r == &ranks->front() ? "" : ", ", "{\"local_rank\": ", r.local_rank,
                    ", \"gpu\": ", r.gpu, ", \"pci\": ", json_string(r.pci),
                    ", \"numa_node\": ", r.numa_node,
                    ", \"cpus\": ", json_string(hetlaunch::format_cpulist(r.cpus)), "}");
    std::printf("%s]}\n", out.c_str());
    return 0;
  }
  std::printf("numa binding %s, %d local rank%s, CPUs of %s\n", mode.c_str(), nproc,
              nproc == 1 ? "" : "s",
              o.binding.sysfs ? concat("the tree ", *o.binding.sysfs).c_str() : "this machine");
  std::printf("%-10s  %-3s  %-12s  %-9s  %s\n", "local rank", "gpu", "pci", "numa node", "cpus");
  for (const auto& r : *ranks)
    std::printf("%-10d  %-3u  %-12s  %-9d  %s\n", r.local_rank, r.gpu, r.pci.c_str(), r.numa_node,
                hetlaunch::format_cpulist(r.cpus).c_str());
  return 0;
}

int bind_command(const binding_options& o) {
  // Errors name the node (torchrun's GROUP_RANK) and host, as a worker's failure is read in a
  // multi-node log; nothing of the command runs after one.
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const auto group = env_value("GROUP_RANK");
  const std::string who =
      concat("bind: ", group ? concat("node ", *group, " ") : std::string(), "(", host, ")");
  const auto local_rank_text = env_value("LOCAL_RANK");
  const std::optional<unsigned long long> local_rank_read =
      local_rank_text ? hetlaunch::parse_count(*local_rank_text, 0x7fffffff) : std::nullopt;
  if (!local_rank_read)
    return fail(
        concat(who, ": LOCAL_RANK is ",
               local_rank_text ? quoted(*local_rank_text) : std::string("not set"),
               "; `hetlaunch bind` runs as a worker, started by torchrun or `hetlaunch exec`"));
  const int local_rank = static_cast<int>(*local_rank_read);
  auto node = read_node(o.binding, env_value("CUDA_VISIBLE_DEVICES"), false);
  if (!node) return fail(concat(who, " local rank ", local_rank, ": ", node.error().message));
  auto rank = hetlaunch::local_rank_binding(node->topology, o.launch.binding, node->visible,
                                            local_rank, node->allowed);
  if (!rank) return fail(concat(who, ": ", rank.error().message));
  if (const result<completed> set = set_affinity(rank->cpus); !set)
    return fail(concat(who, " local rank ", local_rank, ": ", set.error().message));
  // nvidia-smi's indices are in PCI bus order; CUDA's default order is fastest first.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  std::vector<std::string> command = o.positional;  // execvp takes mutable strings
  std::vector<char*> args;
  for (std::string& a : command) args.push_back(a.data());
  args.push_back(nullptr);
  std::fflush(nullptr);
  execvp(args[0], args.data());
  return fail(concat(who, ": cannot run ", quoted(o.positional[0]), ": ", std::strerror(errno)));
}

}  // namespace cli
