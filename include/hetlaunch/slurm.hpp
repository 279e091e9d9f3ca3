// SPDX-License-Identifier: MIT
// hetlaunch: a Slurm job's topology from its environment (cluster_from_slurm), read with Slurm's
// host lists and task counts (slurm_hostlist.hpp).
#ifndef HETLAUNCH_SLURM_HPP
#define HETLAUNCH_SLURM_HPP

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "detail/text.hpp"
#include "result.hpp"
#include "slurm_hostlist.hpp"
#include "worker_variables.hpp"

namespace hetlaunch {

/// A job's topology as Slurm describes it, and which node this process runs on.
struct slurm_job {
  /// Every node of the job. In a heterogeneous job, the nodes of component 0, then of
  /// component 1, and so on: the order in which Slurm counts SLURM_NODEID in a step over all
  /// components.
  cluster nodes;
  /// This process's node: SLURM_NODEID where it counts the job's nodes (the batch script, a step
  /// on every node of the job), else this host (SLURMD_NODENAME) found among the nodes.
  std::optional<std::size_t> this_node;
  /// The variable the worker counts came from (the first component's, in a heterogeneous job).
  std::string counts_from;
  /// In a heterogeneous job (SLURM_HET_SIZE), the index of each component's first node in
  /// `nodes`; empty for any other job.
  std::vector<std::size_t> component_first;
  /// Empty in the batch script and in a job step that runs exactly one task on every node of
  /// the job, which is what a launcher that starts one torchrun a node needs. Otherwise the
  /// reason, naming Slurm's variables and what would fix the step: a step on only some nodes
  /// (one hetjob component, `srun -N1`) or with several tasks on a node.
  std::string step_problem;
};

namespace detail {
// A per-component variable of a heterogeneous job: NAME_HET_GROUP_<n>, or the older
// NAME_PACK_GROUP_<n> that Slurm still sets beside it. `found` gets the name that was set.
template <class Var>
const char* component_variable(Var& var, const char* stem, std::size_t component,
                               std::string& found) {
  for (const char* kind : {"_HET_GROUP_", "_PACK_GROUP_"}) {
    found = concat(stem, kind, component);
    if (const char* value = var(found.c_str())) return value;
  }
  found = concat(stem, "_HET_GROUP_", component);
  return nullptr;
}

// Appends the counts of count list `text` (variable `name`), which must give one count for each
// of `hosts` hosts (named by `list_name`); its length is known before it is expanded.
template <class Unused = void>
result<bool> append_host_counts(const std::string& name, const char* text, std::size_t hosts,
                                const std::string& list_name, std::vector<int>& counts) {
  auto parsed = parse_count_list(text);
  if (!parsed)
    return parse_error{0, 0, concat(name, ": ", parsed.error().to_string()), parsed.error().code};
  if (parsed->total != hosts)
    return parse_error{0, 0,
                       concat(name, " gives ", parsed->total, " counts but ", list_name, " names ",
                              hosts, " hosts"),
                       errc::count_mismatch};
  append_count_list(*parsed, counts);
  return true;
}

// Worker counts of one list of hosts (the job, or component `component` of a heterogeneous job),
// from the first of Slurm's variables that is set; returns that variable's name.
template <class Var>
result<std::string> counts_of(Var& var, std::size_t component, bool heterogeneous,
                              std::size_t hosts, const std::string& list_name,
                              std::vector<int>& counts) {
  std::string name;
  const auto lookup = [&](const char* stem) -> const char* {
    if (heterogeneous) return component_variable(var, stem, component, name);
    name = stem;
    return var(stem);
  };
  for (const char* stem :
       {"SLURM_TASKS_PER_NODE", "SLURM_GPUS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"}) {
    const char* text = lookup(stem);
    if (text == nullptr) continue;
    if (std::string_view(stem) == "SLURM_GPUS_PER_NODE") {
      std::string_view gpus(text);
      const bool one_type =
          gpus.find(',') == std::string_view::npos;  // "a100:4,v100:2" is per type
      const std::size_t colon = gpus.rfind(':');
      if (colon != std::string_view::npos) gpus = gpus.substr(colon + 1);
      auto c = expand_tasks_per_node(gpus, 1);
      if (!c || !one_type)
        return parse_error{0, 0, concat(name, "=", quoted(text), " is not one count ([type:]N)")};
      counts.insert(counts.end(), hosts, c->front());
      return name;
    }
    if (auto r = append_host_counts(name, text, hosts, list_name, counts); !r) return r.error();
    return name;
  }
  return parse_error{
      0, 0,
      heterogeneous
          ? concat("no worker counts for component ", component, ": none of SLURM_TASKS_PER_NODE",
                   "_HET_GROUP_", component, ", SLURM_GPUS_PER_NODE_HET_GROUP_", component,
                   ", SLURM_JOB_CPUS_PER_NODE_HET_GROUP_", component, " is set")
          : std::string("no worker counts: none of HETLAUNCH_TASKS_PER_NODE, SLURM_TASKS_PER_NODE, "
                        "SLURM_GPUS_PER_NODE, SLURM_JOB_CPUS_PER_NODE is set"),
      errc::env_missing};
}
}  // namespace detail

/// Builds the cluster of a Slurm job from its environment. `get(name)` returns a variable's value
/// or nullptr, as std::getenv does.
///
/// Hosts: SLURM_JOB_NODELIST, else SLURM_NODELIST. Workers per node, the first that is set:
///  1. HETLAUNCH_TASKS_PER_NODE: a copy of the batch script's SLURM_TASKS_PER_NODE, taken before
///     `srun` replaces that variable with its own step's layout (one task per node, typically);
///  2. SLURM_TASKS_PER_NODE: one worker per Slurm task (ask for one task per GPU);
///  3. SLURM_GPUS_PER_NODE ("4" or "a100:4"): the same count on every node;
///  4. SLURM_JOB_CPUS_PER_NODE: one worker per allocated CPU.
/// Slurm exports only this node's GPUs (SLURM_GPUS_ON_NODE), so a per-node GPU count of other
/// nodes cannot be read; a heterogeneous layout comes from the task counts.
///
/// A heterogeneous job (SLURM_HET_SIZE, or the older SLURM_PACK_SIZE): the plain variables
/// describe component 0 only, and in a step over several components SLURM_JOB_NODELIST is
/// merged and sorted by name. The nodes are therefore read per component, in component order,
/// from SLURM_JOB_NODELIST_HET_GROUP_<n> and that component's own counts (the variables above
/// with _HET_GROUP_<n>; _PACK_GROUP_<n> too), which Slurm sets in the batch script and in every
/// step. HETLAUNCH_TASKS_PER_NODE, when set, gives the counts of all nodes in that order.
///
/// This node: SLURM_NODEID, which counts the job's nodes in the batch script and in a step on
/// every node (in component order in a hetjob). In a step on only some nodes it counts the step's
/// nodes; this node is then the job's node named SLURMD_NODENAME, and `step_problem` says why such
/// a step cannot start one torchrun a node. A missing variable, a malformed one, or counts that do
/// not match the host count is an error that names the variable. `max_hosts` and `max_bytes` bound
/// the node lists' expansion (of all components together), as for expand_hostlist. The job is
/// validated like any topology (host names, duplicate hosts unless `validation` allows them, the
/// world size): the error has the diagnostic's code and message.
template <class Getenv>
[[nodiscard]] result<slurm_job> cluster_from_slurm(Getenv&& get,
                                                   std::size_t max_hosts = std::size_t{1} << 20,
                                                   std::size_t max_bytes = std::size_t{1} << 27,
                                                   validate_options validation = {}) {
  const auto var = [&](const char* name) -> const char* { return get(name); };
  slurm_job job;
  // The lists are read and counted first, and expanded once, straight into the cluster.
  std::vector<detail::parsed_hostlist> lists;
  std::size_t host_count = 0;
  std::vector<int> counts;
  std::string list_name = "SLURM_JOB_NODELIST";
  const char* copied = var(variables::tasks_per_node.data());
  const char* het_size_name = "SLURM_HET_SIZE";
  const char* het_size = var(het_size_name);
  if (het_size == nullptr) {
    het_size_name = "SLURM_PACK_SIZE";
    het_size = var(het_size_name);
  }
  if (het_size != nullptr) {
    long long components = 0;
    // Every component has a node, so the node limit bounds the components too.
    if (!detail::parse_decimal(het_size,
                               static_cast<long long>(std::min<std::size_t>(max_hosts, 0x7fffffff)),
                               components) ||
        components < 1)
      return parse_error{0, 0,
                         detail::concat(het_size_name, "=", detail::quoted(het_size),
                                        " is not a number of components (1 to ",
                                        std::min<std::size_t>(max_hosts, 0x7fffffff), ")"),
                         errc::env_not_a_number};
    std::size_t bytes = 0;
    for (std::size_t n = 0; n < static_cast<std::size_t>(components); ++n) {
      std::string name;
      const char* list = detail::component_variable(var, "SLURM_JOB_NODELIST", n, name);
      if (list == nullptr)
        return parse_error{
            0, 0, detail::concat(het_size_name, "=", components, " but ", name, " is not set"),
            errc::env_missing};
      auto part = detail::parse_hostlist(list, max_hosts - host_count, max_bytes - bytes);
      // The limits count every component: what is left of them is what this one ran into.
      if (!part)
        return parse_error{
            0, 0,
            detail::concat(name,
                           host_count == 0 ? std::string()
                                           : detail::concat(" (after the ", host_count,
                                                            " hosts of the components before it)"),
                           ": ", part.error().to_string()),
            part.error().code};
      if (copied == nullptr) {
        auto from = detail::counts_of(var, n, true, part->hosts, name, counts);
        if (!from) return from.error();
        if (n == 0) job.counts_from = *from;
      }
      job.component_first.push_back(host_count);
      host_count += part->hosts;
      bytes += part->bytes;
      lists.push_back(std::move(*part));
      if (host_count == max_hosts && n + 1 < static_cast<std::size_t>(components))
        return parse_error{0, 0,
                           detail::concat("the job's components name more than ", max_hosts,
                                          " hosts, the limit (max_hosts)"),
                           errc::limit_exceeded};
    }
    list_name = detail::concat("SLURM_JOB_NODELIST_HET_GROUP_0..", components - 1);
  } else {
    const char* list = var("SLURM_JOB_NODELIST");
    if (list == nullptr) {
      list_name = "SLURM_NODELIST";
      list = var("SLURM_NODELIST");
    }
    if (list == nullptr)
      return parse_error{0, 0, "SLURM_JOB_NODELIST is not set; is this running inside a Slurm job?",
                         errc::env_missing};
    auto all = detail::parse_hostlist(list, max_hosts, max_bytes);
    if (!all)
      return parse_error{0, 0, detail::concat(list_name, ": ", all.error().to_string()),
                         all.error().code};
    host_count = all->hosts;
    lists.push_back(std::move(*all));
  }
  if (copied != nullptr) {
    job.counts_from = std::string(variables::tasks_per_node);
    if (auto r = detail::append_host_counts(job.counts_from, copied, host_count, list_name, counts);
        !r)
      return r.error();
  } else if (job.component_first.empty()) {
    auto from = detail::counts_of(var, 0, false, host_count, list_name, counts);
    if (!from) return from.error();
    job.counts_from = *from;
  }
  cluster_builder nodes;
  std::size_t host_bytes = 0;
  for (const detail::parsed_hostlist& l : lists) host_bytes += l.bytes;
  nodes.reserve(host_count, host_bytes);
  for (const detail::parsed_hostlist& l : lists)
    l.each([&](std::string_view host) { nodes.add(host, counts[nodes.node_count()]); });
  lists.clear();
  job.nodes = nodes.finish();
  // Slurm's node names need not be valid host names for torchrun, and counts can add up past
  // what torch's 32-bit ranks hold: the same checks as every other input.
  if (const diagnostic d = first_error(job.nodes, validation))
    return parse_error{0, 0, detail::concat(list_name, " and ", job.counts_from, ": ", d.message()),
                       d.code};

  // The current step, if any: on how many nodes, with how many tasks on each.
  std::optional<std::size_t> step_nodes;
  if (const char* text = var("SLURM_STEP_NUM_NODES")) {
    long long n = 0;
    if (!detail::parse_decimal(text, 0x7fffffff, n))
      return parse_error{0, 0,
                         detail::concat("SLURM_STEP_NUM_NODES=", detail::quoted(text),
                                        " is not a number of nodes"),
                         errc::env_not_a_number};
    step_nodes = static_cast<std::size_t>(n);
  }
  const char* node_name = var("SLURMD_NODENAME");
  // The srun options of a step with one task on every node, which the messages suggest.
  const auto one_task_a_node = [&] {
    if (job.component_first.empty())
      return detail::concat("srun --ntasks-per-node=1 --ntasks=", host_count);
    std::string out = "srun";
    // Every component's own sizes, up to a message's worth.
    constexpr std::size_t shown = 8;
    for (std::size_t n = 0; n < job.component_first.size() && n < shown; ++n) {
      const std::size_t end =
          n + 1 < job.component_first.size() ? job.component_first[n + 1] : host_count;
      const std::size_t size = end - job.component_first[n];
      out += detail::concat(n > 0 ? " :" : "", " --nodes=", size, " --ntasks=", size);
    }
    if (job.component_first.size() > shown)
      out += detail::concat(" : ... (", job.component_first.size() - shown,
                            " more components, each `--nodes=N --ntasks=N`)");
    return out;
  };
  const auto plan_side = [&] {
    return detail::concat("the plan starts one torchrun on each of the job's ", host_count,
                          " nodes");
  };
  if (step_nodes && *step_nodes != host_count) {
    job.step_problem = detail::concat(
        "this step runs on ", *step_nodes, " of the job's ", host_count,
        " nodes (SLURM_STEP_NUM_NODES=", *step_nodes,
        job.component_first.empty()
            ? std::string(")")
            : detail::concat(", in a job of ", job.component_first.size(), " components)"),
        ", but ", plan_side(),
        ", which would wait for the others: start one task on every node: ", one_task_a_node());
  } else if (const char* layout = var("SLURM_STEP_TASKS_PER_NODE")) {
    auto parsed = detail::parse_count_list(layout);
    if (!parsed)
      return parse_error{0, 0,
                         detail::concat("SLURM_STEP_TASKS_PER_NODE: ", parsed.error().to_string()),
                         parsed.error().code};
    if (parsed->total != host_count)
      return parse_error{0, 0,
                         detail::concat("SLURM_STEP_TASKS_PER_NODE gives ", parsed->total,
                                        " counts but the step runs on ", host_count, " nodes"),
                         errc::count_mismatch};
    const bool one_each = std::all_of(parsed->items.begin(), parsed->items.end(),
                                      [](const detail::count_item& it) { return it.count == 1; });
    if (!one_each)
      job.step_problem =
          detail::concat("this step runs ", detail::quoted(layout),
                         " tasks on its nodes (SLURM_STEP_TASKS_PER_NODE), but ", plan_side(),
                         ": start one task a node: ", one_task_a_node());
  }
  if (const char* id = var("SLURM_NODEID")) {
    long long n = 0;
    if (!detail::parse_decimal(id, 0x7fffffff, n))
      return parse_error{
          0, 0, detail::concat("SLURM_NODEID=", detail::quoted(id), " is not a node index"),
          errc::env_not_a_number};
    if (step_nodes && *step_nodes != host_count) {
      // SLURM_NODEID counts this step's nodes, not the job's: find this host by name instead.
      if (node_name != nullptr)
        for (std::size_t i = 0; i < host_count && !job.this_node; ++i)
          if (job.nodes.node(i).host == std::string_view(node_name)) job.this_node = i;
    } else {
      if (static_cast<std::size_t>(n) >= host_count)
        return parse_error{0, 0,
                           detail::concat("SLURM_NODEID=", n, " is out of range: ", list_name,
                                          " names ", host_count, " hosts"),
                           errc::node_out_of_range};
      job.this_node = static_cast<std::size_t>(n);
    }
  }
  return job;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SLURM_HPP
