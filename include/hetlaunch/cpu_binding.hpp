// SPDX-License-Identifier: MIT
// hetlaunch: which CPUs each local rank's worker runs on, by torchrun's --numa-binding modes (the
// rules of torch 2.14's torch/numa/binding.py), computed from a cpu_topology.
#ifndef HETLAUNCH_CPU_BINDING_HPP
#define HETLAUNCH_CPU_BINDING_HPP

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cpu_topology.hpp"
#include "detail/text.hpp"
#include "numa_binding.hpp"
#include "result.hpp"

namespace hetlaunch {

/// One local rank's binding: its GPU (physical index and PCI address), the GPU's NUMA node (0
/// when sysfs says -1) and the CPUs the worker runs on.
struct local_rank_cpus {
  int local_rank = 0;
  unsigned gpu = 0;
  std::string pci;
  int numa_node = 0;
  cpu_list cpus;
};

/// The GPUs a worker sees, in CUDA's order: CUDA_VISIBLE_DEVICES's physical indices (a comma
/// list), or every GPU of `gpus` by index when it is not set. An index the node does not have,
/// one given twice, or anything but decimal indices (UUIDs, MIG names) is an error.
[[nodiscard]] inline result<std::vector<gpu_device>, binding_error> visible_gpus(
    const std::vector<gpu_device>& gpus, std::optional<std::string_view> cuda_visible_devices) {
  if (!cuda_visible_devices) return gpus;
  std::vector<gpu_device> out;
  const std::string_view list = detail::trimmed(*cuda_visible_devices);
  for (std::size_t start = 0; start < list.size();) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view item = list.substr(start, end - start);
    start = end + 1;
    const auto index = detail::small_integer(item, 0x7fffffff, false);
    if (!index)
      return binding_error{
          detail::concat("the visible devices ", detail::quoted(list), " hold ",
                         detail::quoted(item),
                         ", not a GPU index (UUIDs and MIG devices cannot be bound)"),
          errc::bad_visible_devices};
    const auto found = std::find_if(gpus.begin(), gpus.end(),
                                    [&](const gpu_device& g) { return g.index == *index; });
    if (found == gpus.end()) {
      std::string have;
      for (const gpu_device& g : gpus) have += detail::concat(have.empty() ? "" : ",", g.index);
      return binding_error{
          detail::concat("the visible devices ", detail::quoted(list), " name GPU ", *index,
                         ", which the node does not have (it has ", have.empty() ? "none" : have,
                         ")"),
          errc::bad_visible_devices};
    }
    for (const gpu_device& g : out)
      if (g.index == found->index)
        return binding_error{detail::concat("the visible devices ", detail::quoted(list),
                                            " name GPU ", *index, " twice"),
                             errc::bad_visible_devices};
    out.push_back(*found);
  }
  return out;
}

namespace detail {

struct binding_context {
  const cpu_topology& topology;
  const std::vector<gpu_device>& visible;
  const cpu_list& allowed;
};

// The GPU's NUMA node; -1 (one-node machines) counts as node 0.
inline result<int, binding_error> gpu_numa_node(const binding_context& b,
                                                std::size_t visible_index) {
  result<int, binding_error> node = b.topology.pci_numa_node(b.visible[visible_index].pci);
  if (!node) return node;
  return std::max(*node, 0);
}

inline result<cpu_list, binding_error> allowed_node_cpus(const binding_context& b, unsigned node) {
  result<cpu_list, binding_error> cpus = b.topology.numa_node_cpus(node);
  if (!cpus) return cpus;
  return cpu_intersection(*cpus, b.allowed);
}

// The positions among the visible GPUs of those on `node`: a GPU's share in `exclusive` and
// `core-complex` depends on all of them, whether or not a worker runs on it.
inline result<std::vector<std::size_t>, binding_error> gpus_of_node(const binding_context& b,
                                                                    int node) {
  std::vector<std::size_t> out;
  for (std::size_t j = 0; j < b.visible.size(); ++j) {
    result<int, binding_error> n = gpu_numa_node(b, j);
    if (!n) return n.error();
    if (*n == node) out.push_back(j);
  }
  return out;
}

// CPUs grouped by a key (a core, a cache group), each group ascending, the groups by key.
template <class KeyOf>
result<std::map<unsigned, cpu_list>, binding_error> grouped(const cpu_list& cpus, KeyOf key_of) {
  std::map<unsigned, cpu_list> groups;
  for (unsigned cpu : cpus) {
    result<unsigned, binding_error> key = key_of(cpu);
    if (!key) return key.error();
    groups[*key].push_back(cpu);
  }
  return groups;
}

inline result<long long, binding_error> socket_of_node(const binding_context& b, unsigned node) {
  result<cpu_list, binding_error> cpus = allowed_node_cpus(b, node);
  if (!cpus) return cpus.error();
  if (cpus->empty())
    return binding_error{
        concat("NUMA node ", node, " has no CPU this worker may use, so its socket is unknown"),
        errc::no_binding};
  return b.topology.package_of(cpus->front());
}

inline result<cpu_list, binding_error> socket_cpus(const binding_context& b, int node) {
  result<long long, binding_error> socket = socket_of_node(b, static_cast<unsigned>(node));
  if (!socket) return socket.error();
  result<cpu_list, binding_error> nodes = b.topology.possible_numa_nodes();
  if (!nodes) return nodes;
  cpu_list out;
  for (unsigned n : *nodes) {
    result<long long, binding_error> s = socket_of_node(b, n);
    if (!s) return s.error();
    if (*s != *socket) continue;
    result<cpu_list, binding_error> cpus = allowed_node_cpus(b, n);
    out = cpu_union(out, *cpus);
  }
  return out;
}

// What `exclusive` and `core-complex` split: the node's allowed CPUs grouped by `key_of` (a core,
// a cache), and this GPU's place among the node's visible GPUs.
struct node_split {
  std::size_t position = 0;
  std::size_t gpus = 0;
  std::map<unsigned, cpu_list> groups;
};

template <class KeyOf>
result<node_split, binding_error> split_of_node(const binding_context& b, int node,
                                                std::size_t rank, KeyOf key_of) {
  result<std::vector<std::size_t>, binding_error> gpus = gpus_of_node(b, node);
  if (!gpus) return gpus.error();
  result<cpu_list, binding_error> cpus = allowed_node_cpus(b, static_cast<unsigned>(node));
  if (!cpus) return cpus.error();
  result<std::map<unsigned, cpu_list>, binding_error> groups = grouped(*cpus, key_of);
  if (!groups) return groups.error();
  const std::size_t position =
      static_cast<std::size_t>(std::find(gpus->begin(), gpus->end(), rank) - gpus->begin());
  return node_split{position, gpus->size(), *std::move(groups)};
}

inline result<cpu_list, binding_error> exclusive_cpus(const binding_context& b, int node,
                                                      std::size_t rank) {
  result<node_split, binding_error> split =
      split_of_node(b, node, rank, [&](unsigned cpu) { return b.topology.core_of(cpu); });
  if (!split) return split.error();
  const std::size_t cores = split->groups.size(), position = split->position;
  const std::size_t per_gpu = cores / split->gpus;
  const std::size_t extra = cores % split->gpus;
  if (per_gpu < 1)
    return binding_error{concat("exclusive: NUMA node ", node, " has ", cores, " physical core",
                                cores == 1 ? "" : "s", " this worker may use, fewer than its ",
                                split->gpus, " GPUs"),
                         errc::no_binding};
  const std::size_t first = position * per_gpu + std::min(position, extra);
  const std::size_t count = per_gpu + (position < extra ? 1 : 0);
  cpu_list out;
  std::size_t k = 0;
  for (const auto& core : split->groups) {
    if (k >= first && k < first + count)
      out.insert(out.end(), core.second.begin(), core.second.end());
    ++k;
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline result<cpu_list, binding_error> core_complex_cpus(const binding_context& b, int node,
                                                         std::size_t rank) {
  result<node_split, binding_error> split =
      split_of_node(b, node, rank, [&](unsigned cpu) { return b.topology.cache_group_of(cpu); });
  if (!split) return split.error();
  if (split->groups.empty())
    return binding_error{concat("NUMA node ", node, " has no CPU this worker may use"),
                         errc::no_binding};
  std::vector<std::pair<unsigned, cpu_list>> order(split->groups.begin(), split->groups.end());
  // The groups with the most CPUs the worker may use first, then by their lowest CPU.
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& c) { return a.second.size() > c.second.size(); });
  return order[split->position % order.size()].second;
}

}  // namespace detail

/// The CPUs of local rank `local_rank`'s worker: its GPU is `visible[local_rank]` (the GPUs in
/// CUDA's order, see visible_gpus); the mode's CPUs of that GPU, always within `allowed` (the CPUs
/// the worker may use: its affinity, or every CPU of a recorded tree). Errors, each naming the
/// rank and its GPU: a rank without a GPU, what the topology lacks that the mode needs, no CPU
/// left, and `exclusive` with fewer cores than the node's GPUs.
[[nodiscard]] inline result<local_rank_cpus, binding_error> local_rank_binding(
    const cpu_topology& topology, numa_binding mode, const std::vector<gpu_device>& visible,
    int local_rank, const cpu_list& allowed) {
  if (local_rank < 0 || static_cast<std::size_t>(local_rank) >= visible.size())
    return binding_error{detail::concat("local rank ", local_rank, " has no GPU: the node shows ",
                                        visible.size(), visible.size() == 1 ? " GPU" : " GPUs",
                                        " (CUDA_VISIBLE_DEVICES, --devices)"),
                         errc::no_binding};
  const std::size_t rank = static_cast<std::size_t>(local_rank);
  const gpu_device& gpu = visible[rank];
  const auto failed = [&](const binding_error& e) {
    return binding_error{detail::concat("local rank ", local_rank, " (GPU ", gpu.index, ", ",
                                        gpu.pci, "): ", e.message),
                         e.code};
  };
  const detail::binding_context b{topology, visible, allowed};
  result<int, binding_error> node = detail::gpu_numa_node(b, rank);
  if (!node) return failed(node.error());
  result<cpu_list, binding_error> cpus = binding_error{};
  switch (mode) {
    case numa_binding::none:
      cpus = allowed;
      break;
    case numa_binding::node:
      cpus = detail::allowed_node_cpus(b, static_cast<unsigned>(*node));
      break;
    case numa_binding::socket:
      cpus = detail::socket_cpus(b, *node);
      break;
    case numa_binding::exclusive:
      cpus = detail::exclusive_cpus(b, *node, rank);
      break;
    case numa_binding::core_complex:
      cpus = detail::core_complex_cpus(b, *node, rank);
      break;
  }
  if (!cpus) return failed(cpus.error());
  if (cpus->empty())
    return failed(
        binding_error{detail::concat(numa_binding_name(mode), ": no CPU of NUMA node ", *node,
                                     " is one this worker may use (allowed: ",
                                     allowed.empty() ? "none" : format_cpulist(allowed), ")"),
                      errc::no_binding});
  return local_rank_cpus{local_rank, gpu.index, gpu.pci, *node, *std::move(cpus)};
}

/// local_rank_binding for local ranks 0 to nproc - 1; the first error stops.
[[nodiscard]] inline result<std::vector<local_rank_cpus>, binding_error> local_rank_bindings(
    const cpu_topology& topology, numa_binding mode, const std::vector<gpu_device>& visible,
    int nproc, const cpu_list& allowed) {
  std::vector<local_rank_cpus> out;
  for (int rank = 0; rank < nproc; ++rank) {
    result<local_rank_cpus, binding_error> one =
        local_rank_binding(topology, mode, visible, rank, allowed);
    if (!one) return one.error();
    out.push_back(*std::move(one));
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_CPU_BINDING_HPP
