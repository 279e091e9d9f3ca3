// SPDX-License-Identifier: MIT
// hetlaunch: errc and diagnostic, the problems a topology or an argument can have.
#ifndef HETLAUNCH_DIAGNOSTIC_HPP
#define HETLAUNCH_DIAGNOSTIC_HPP

#include <climits>
#include <cstddef>
#include <string>
#include <string_view>

#include "detail/host_name.hpp"
#include "detail/text.hpp"

namespace hetlaunch {

/// What is wrong. Stable: values are never renumbered.
enum class errc : int {
  ok = 0,
  empty_cluster = 1,             // no nodes
  bad_nproc = 2,                 // a node's nproc < 1
  world_size_overflow = 3,       // the sum of nproc exceeds INT_MAX (torch ranks are 32-bit)
  bad_host = 4,                  // not an RFC 1123 name or IP literal (see host_issue)
  duplicate_host = 5,            // two nodes name the same host (case-insensitive)
  empty_role = 6,                // role ""
  bad_role = 7,                  // a role torchrun's command line cannot carry (blank, control, leading '-')
  node_out_of_range = 8,         // a node index >= node_count()
  local_rank_out_of_range = 9,   // a local rank outside [0, nproc)
  global_rank_out_of_range = 10, // a global rank outside [0, world_size)
  // Launch options (torchrun.hpp).
  bad_port = 11,                 // master_port outside 1..65535
  bad_master_addr = 12,          // master_addr not a valid host or IP literal
  missing_rdzv_id = 13,          // c10d without an rdzv_id
  empty_script = 14,             // no training script
  empty_program = 15,            // no launcher program
  bad_max_restarts = 16,         // max_restarts < 0
  ranks_decided_at_rendezvous = 17,  // c10d: torchrun orders agents when they meet
  dash_flags_need_torch_2 = 18,  // --nproc-per-node spellings exist from torch 2.0
  too_few_processes = 19,        // accelerate --multi_gpu needs 2 processes or more
  // A worker's actual environment compared with the plan (check_worker_env).
  env_missing = 20,              // a variable torchrun always sets is absent
  env_not_a_number = 21,         // a variable that must be an integer is not
  world_size_mismatch = 22,      // WORLD_SIZE differs from the plan
  group_rank_out_of_range = 23,  // GROUP_RANK is not a node of the plan
  local_world_size_mismatch = 24,  // LOCAL_WORLD_SIZE differs from the node's nproc
  rank_mismatch = 25,            // RANK is not global_rank(GROUP_RANK, LOCAL_RANK)
  identical_workers_on_heterogeneous = 26,  // TORCH_ELASTIC_WORKER_IDENTICAL=1 breaks mixed nodes
  bad_rendezvous_timeout = 27,   // rendezvous_timeout < 0
  overriding_torchrun_arg = 28,  // an extra torchrun argument names a flag hetlaunch computes
  script_looks_like_option = 29, // a script starting with '-', which torchrun would read as its own option
};

/// A short stable name of the code: "bad_nproc".
constexpr std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::ok: return "ok";
    case errc::empty_cluster: return "empty_cluster";
    case errc::bad_nproc: return "bad_nproc";
    case errc::world_size_overflow: return "world_size_overflow";
    case errc::bad_host: return "bad_host";
    case errc::duplicate_host: return "duplicate_host";
    case errc::empty_role: return "empty_role";
    case errc::bad_role: return "bad_role";
    case errc::node_out_of_range: return "node_out_of_range";
    case errc::local_rank_out_of_range: return "local_rank_out_of_range";
    case errc::global_rank_out_of_range: return "global_rank_out_of_range";
    case errc::bad_port: return "bad_port";
    case errc::bad_master_addr: return "bad_master_addr";
    case errc::missing_rdzv_id: return "missing_rdzv_id";
    case errc::empty_script: return "empty_script";
    case errc::empty_program: return "empty_program";
    case errc::bad_max_restarts: return "bad_max_restarts";
    case errc::ranks_decided_at_rendezvous: return "ranks_decided_at_rendezvous";
    case errc::dash_flags_need_torch_2: return "dash_flags_need_torch_2";
    case errc::too_few_processes: return "too_few_processes";
    case errc::env_missing: return "env_missing";
    case errc::env_not_a_number: return "env_not_a_number";
    case errc::world_size_mismatch: return "world_size_mismatch";
    case errc::group_rank_out_of_range: return "group_rank_out_of_range";
    case errc::local_world_size_mismatch: return "local_world_size_mismatch";
    case errc::rank_mismatch: return "rank_mismatch";
    case errc::identical_workers_on_heterogeneous: return "identical_workers_on_heterogeneous";
    case errc::bad_rendezvous_timeout: return "bad_rendezvous_timeout";
    case errc::overriding_torchrun_arg: return "overriding_torchrun_arg";
    case errc::script_looks_like_option: return "script_looks_like_option";
  }
  return "unknown";
}

namespace detail {
// What is wrong with a host name, for messages: "character ' ' at position 3 is not allowed".
inline std::string describe_host_issue(std::string_view host, host_issue issue, std::size_t position) {
  switch (issue) {
    case host_issue::none: return "no problem";
    case host_issue::empty: return "it is empty";
    case host_issue::too_long: return "it is longer than 253 characters";
    case host_issue::bad_character: {
      const char c = position < host.size() ? host[position] : '?';
      const char* hint = c == '[' || c == ']' ? " (write IPv6 addresses without brackets)"
                         : c == '%'           ? " (IPv6 zone ids are not supported by torchrun)"
                         : c == '_'           ? " (allow it with allow_underscore)"
                                              : "";
      return concat(describe_character(host, position), " at position ", position, " is not allowed", hint);
    }
    case host_issue::empty_label: return concat("empty label at position ", position);
    case host_issue::label_too_long: return concat("label longer than 63 characters at position ", position);
    case host_issue::hyphen_at_label_edge: return concat("a label starts or ends with '-' at position ", position);
    case host_issue::numeric_not_ipv4:
      return "an all-numeric name that is not a dotted quad (resolvers read it as an IPv4 address)";
    case host_issue::bad_ipv4: return concat("invalid IPv4 address at position ", position);
    case host_issue::bad_ipv6: return concat("invalid IPv6 address at position ", position);
  }
  return "unknown";
}
}  // namespace detail

/// One problem, naming the node it concerns. A literal type, so constexpr validation can return
/// it; converts to `true` when it reports a problem:
///   if (auto d = hetlaunch::first_error(c)) std::cerr << d.message() << '\n';
/// `host` and `role` view the cluster's strings: keep the cluster alive while using them.
struct diagnostic {
  errc code = errc::ok;
  std::size_t node = 0;          // the node concerned (the later one for a duplicate)
  std::string_view host;         // that node's host
  std::string_view role;         // that node's role
  long long value = 0;           // the offending number: nproc, a rank, an index, the world size
  std::size_t other_node = 0;    // duplicate_host: the earlier node with the same host
  std::size_t position = 0;      // bad_host / bad_role: offset of the offending character
  host_issue issue = host_issue::none;  // bad_host: what is wrong with the name
  long long limit = 0;           // *_out_of_range: the exclusive bound; world_size_overflow: INT_MAX;
                                 // *_mismatch: the planned value
  std::string_view variable;     // env_* and *_mismatch: the environment variable; launch
                                 // options: the option; its offending text is in `text`
  std::string_view text;         // the offending text (an address, a variable's value)

  constexpr explicit operator bool() const noexcept { return code != errc::ok; }

  /// For people: "node 1 ('gpu-b'): nproc must be at least 1, got 0".
  [[nodiscard]] std::string message() const {
    using detail::concat;
    const std::string who = concat("node ", node, " (", detail::quoted(host), "): ");
    switch (code) {
      case errc::ok:
        return "no problem";
      case errc::empty_cluster:
        return "the cluster has no nodes";
      case errc::bad_nproc:
        return concat(who, "nproc must be at least 1, got ", value);
      case errc::world_size_overflow:
        return concat(who, "world size would be ", value, ", more than ", limit,
                      " (torch.distributed ranks are 32-bit)");
      case errc::bad_host:
        return concat(who, "host is not a valid RFC 1123 name or IP literal: ",
                      detail::describe_host_issue(host, issue, position));
      case errc::duplicate_host:
        return concat(who, "host is also node ", other_node,
                      "; two agents on one host must be allowed explicitly (allow_duplicate_hosts)");
      case errc::empty_role:
        return concat(who, "role is empty");
      case errc::bad_role:
        if (!role.empty() && role[0] == '-')
          return concat(who, "role ", detail::quoted(role), " starts with '-', which torchrun would read as an option");
        return concat(who, "role ", detail::quoted(role), " has a blank or control character at position ", position);
      case errc::node_out_of_range:
        return concat("node index ", value, " is out of range: the cluster has ", limit, " nodes");
      case errc::local_rank_out_of_range:
        return concat(who, "local rank ", value, " is out of range: the node runs ", limit, " workers");
      case errc::global_rank_out_of_range:
        return concat("global rank ", value, " is out of range: the world size is ", limit);
      case errc::bad_port:
        return concat("master_port must be 1..65535, got ", value);
      case errc::bad_master_addr:
        return concat("master_addr ", detail::quoted(text), " is not a valid host name or IP literal");
      case errc::missing_rdzv_id:
        return "the c10d rendezvous needs an rdzv_id shared by every node of the job";
      case errc::empty_script:
        return "no training script given";
      case errc::empty_program:
        return "no launcher program given (program is empty)";
      case errc::bad_max_restarts:
        return concat("max_restarts must be 0 or more, got ", value);
      case errc::ranks_decided_at_rendezvous:
        return "with the c10d rendezvous torchrun orders the nodes by host name and process id when "
               "they meet, so RANK, GROUP_RANK, ROLE_RANK and MASTER_ADDR cannot be known in advance; "
               "use the static rendezvous to fix them";
      case errc::dash_flags_need_torch_2:
        return concat("dash flag spellings (--nproc-per-node) need torch 2.0 or later; the options name torch ",
                      value / 100, ".", value % 100, " (use flag_style::underscore, which every torch accepts)");
      case errc::too_few_processes:
        return concat("accelerate launch --multi_gpu needs at least 2 processes; this job has ", value);
      case errc::env_missing:
        return concat(variable, " is not set; was this process started by torchrun (or with worker_env)?");
      case errc::env_not_a_number:
        return concat(variable, "=", detail::quoted(text), " is not an integer");
      case errc::world_size_mismatch:
        return concat("WORLD_SIZE is ", value, " but the plan's world size is ", limit);
      case errc::group_rank_out_of_range:
        return concat("GROUP_RANK ", value, " is not a node of the plan, which has ", limit, " nodes");
      case errc::local_world_size_mismatch:
        return concat(who, "started with LOCAL_WORLD_SIZE ", value, " (--nproc_per_node), but the plan gives it ",
                      limit, " workers");
      case errc::rank_mismatch:
        return concat(who, "RANK is ", value, " but the plan gives LOCAL_RANK ", position, " the global rank ", limit);
      case errc::identical_workers_on_heterogeneous:
        return "TORCH_ELASTIC_WORKER_IDENTICAL=1 makes torchrun assume every node runs this node's worker "
               "count, which breaks RANK and WORLD_SIZE when nodes differ; unset it";
      case errc::bad_rendezvous_timeout:
        return concat("rendezvous_timeout must be 0 (torchrun's default) or more seconds, got ", value);
      case errc::overriding_torchrun_arg:
        return concat("the extra torchrun argument ", detail::quoted(text),
                      " names an option hetlaunch computes (--nnodes, --node_rank, --nproc_per_node, --master_addr, "
                      "--master_port, --rdzv_*, --max_restarts, --role, --standalone); set it through the launch "
                      "options instead");
      case errc::script_looks_like_option:
        return concat("the script ", detail::quoted(text),
                      " starts with '-', so torchrun would read it as one of its own options");
    }
    return "unknown problem";
  }
};

/// What validation tolerates.
struct validate_options {
  /// Several agents on one host (for example two torchrun agents on one machine, each with its
  /// own GPUs). Off by default: a duplicate host is far more often a typo.
  bool allow_duplicate_hosts = false;
  /// '_' in host names, which RFC 1123 forbids but some clusters use.
  bool allow_underscore = false;
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_DIAGNOSTIC_HPP
