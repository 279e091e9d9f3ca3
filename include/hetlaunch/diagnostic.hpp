// SPDX-License-Identifier: MIT
// hetlaunch: diagnostic, one problem of a topology, an argument or a launch with its message, and
// validate_options, what validation tolerates.
#ifndef HETLAUNCH_DIAGNOSTIC_HPP
#define HETLAUNCH_DIAGNOSTIC_HPP

#include <climits>
#include <cstddef>
#include <string>
#include <string_view>

#include "bounded_string.hpp"
#include "errc.hpp"
#include "weight.hpp"
#include "detail/host_name.hpp"
#include "detail/text.hpp"

namespace hetlaunch {

namespace detail {
// What is wrong with a host name, for messages: "character ' ' at position 3 is not allowed".
template <class Unused = void>
std::string describe_host_issue(std::string_view host, host_issue issue, std::size_t position) {
  switch (issue) {
    case host_issue::none:
      return "no problem";
    case host_issue::empty:
      return "it is empty";
    case host_issue::too_long:
      return "it is longer than 253 characters";
    case host_issue::bad_character: {
      const char c = position < host.size() ? host[position] : '?';
      const char* hint = c == '[' || c == ']' ? " (write IPv6 addresses without brackets)"
                         : c == '%'           ? " (IPv6 zone ids are not supported by torchrun)"
                         : c == '_'           ? " (allow it with allow_underscore)"
                                              : "";
      return concat(describe_character(host, position), " at position ", position,
                    " is not allowed", hint);
    }
    case host_issue::empty_label:
      return concat("empty label at position ", position);
    case host_issue::label_too_long:
      return concat("label longer than 63 characters at position ", position);
    case host_issue::hyphen_at_label_edge:
      return concat("a label starts or ends with '-' at position ", position);
    case host_issue::numeric_not_ipv4:
      return "an all-numeric name that is not a dotted quad (resolvers read it as an IPv4 address)";
    case host_issue::bad_ipv4:
      return concat("invalid IPv4 address at position ", position);
    case host_issue::bad_ipv6:
      return concat("invalid IPv6 address at position ", position);
  }
  return "unknown";
}
}  // namespace detail

/// One problem, naming the node it concerns. A literal type, so constexpr validation can return
/// it; converts to `true` when it reports a problem:
///   if (auto d = hetlaunch::first_error(c)) std::cerr << d.message() << '\n';
/// A diagnostic owns its text: it may outlive the cluster, the options and the environment it
/// describes. Host names are kept whole up to 253 bytes (every valid name); longer text is kept
/// up to its capacity, and `full_size()` gives the original length. About 600 bytes.
struct diagnostic {
  errc code = errc::ok;
  std::size_t node = 0;        // the node concerned (the later one for a duplicate)
  bounded_string<253> host;    // that node's host
  bounded_string<128> role;    // that node's role
  long long value = 0;         // the offending number: nproc, a rank, an index, the world size
  std::size_t other_node = 0;  // duplicate_host: the earlier node with the same host
  std::size_t position = 0;    // bad_host / bad_role: offset of the offending character
  host_issue issue = host_issue::none;  // bad_host: what is wrong with the name
  long long limit = 0;        // *_out_of_range: the exclusive bound; world_size_overflow: INT_MAX;
                              // *_mismatch: the planned value
  std::string_view variable;  // env_* and *_mismatch: the environment variable; launch
                              // options: the option. Always a string literal of the library.
  bounded_string<128> text;   // the offending text (an address, a variable's value, a weight)
  weight_issue weight = weight_issue::none;  // bad_weight: what is wrong with the weight in `text`

  constexpr explicit operator bool() const noexcept { return code != errc::ok; }

  /// For people: "node 1 ('gpu-b'): nproc must be at least 1, got 0". (A template only so that
  /// it is compiled where it is used.)
  template <class Unused = void>
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
        return concat(
            who, "host is also node ", other_node,
            "; two agents on one host must be allowed explicitly (allow_duplicate_hosts)");
      case errc::empty_role:
        return concat(who, "role is empty");
      case errc::bad_role:
        if (!role.empty() && role[0] == '-')
          return concat(who, "role ", detail::quoted(role),
                        " starts with '-', which torchrun would read as an option");
        return concat(who, "role ", detail::quoted(role),
                      " has a blank or control character at position ", position);
      case errc::node_out_of_range:
        return concat("node index ", value, " is out of range: the cluster has ", limit, " nodes");
      case errc::local_rank_out_of_range:
        return concat(who, "local rank ", value, " is out of range: the node runs ", limit,
                      " workers");
      case errc::global_rank_out_of_range:
        return concat("global rank ", value, " is out of range: the world size is ", limit);
      case errc::bad_port:
        return concat("master_port must be 1..65535, got ", value);
      case errc::bad_master_addr:
        return concat("master_addr ", detail::quoted(text),
                      " is not a valid host name or IP literal");
      case errc::missing_rdzv_id:
        return "the c10d rendezvous needs an rdzv_id shared by every node of the job";
      case errc::empty_script:
        return "no training script given";
      case errc::empty_program:
        return variable.empty() ? "no launcher program given (program is empty)"
                                : concat("no ", variable, " given (it is empty)");
      case errc::bad_max_restarts:
        return concat("max_restarts must be 0 or more, got ", value);
      case errc::ranks_decided_at_rendezvous:
        return "with the c10d rendezvous torchrun orders the nodes by host name and process id when "
               "they meet, so RANK, GROUP_RANK, ROLE_RANK and MASTER_ADDR cannot be known in advance; "
               "use the static rendezvous to fix them";
      case errc::dash_flags_need_torch_2:
        return concat(
            "dash flag spellings (--nproc-per-node) need torch 2.0 or later; the options name torch ",
            value / 100, ".", value % 100,
            " (use flag_style::underscore, which every torch accepts)");
      case errc::too_few_processes:
        return concat("accelerate launch --multi_gpu needs at least 2 processes; this job has ",
                      value);
      case errc::env_missing:
        return concat(variable,
                      " is not set; was this process started by torchrun (or with worker_env)?");
      case errc::env_not_a_number:
        return concat(variable, "=", detail::quoted(text), " is not an integer");
      case errc::world_size_mismatch:
        return concat("WORLD_SIZE is ", value, " but the plan's world size is ", limit);
      case errc::group_rank_out_of_range:
        return concat("GROUP_RANK ", value, " is not a node of the plan, which has ", limit,
                      " nodes");
      case errc::local_world_size_mismatch:
        return concat(who, "started with LOCAL_WORLD_SIZE ", value,
                      " (--nproc_per_node), but the plan gives it ", limit, " workers");
      case errc::rank_mismatch:
        return concat(who, "RANK is ", value, " but the plan gives LOCAL_RANK ", position,
                      " the global rank ", limit);
      case errc::identical_workers_on_heterogeneous:
        return "TORCH_ELASTIC_WORKER_IDENTICAL=1 makes torchrun assume every node runs this node's worker "
               "count, which breaks RANK and WORLD_SIZE when nodes differ; unset it";
      case errc::bad_rendezvous_timeout:
        return concat("rendezvous_timeout must be 0 (torchrun's default) or more seconds, got ",
                      value);
      case errc::overriding_torchrun_arg:
        return concat(
            "the extra torchrun argument ", detail::quoted(text),
            " names an option hetlaunch computes (--nnodes, --node_rank, --nproc_per_node, --master_addr, "
            "--master_port, --rdzv_*, --max_restarts, --role, --standalone); set it through the launch "
            "options instead");
      case errc::script_looks_like_option:
        return concat("the script ", detail::quoted(text),
                      " starts with '-', so torchrun would read it as one of its own options");
      // The codes of text inputs, which parse_error carries with its own message; a diagnostic
      // holding one says what it is and shows the text.
      case errc::bad_syntax:
        return concat(detail::quoted(text), " is not in the expected format");
      case errc::limit_exceeded:
        return concat("more than ", limit, " (the limit)");
      case errc::count_mismatch:
        return concat(value, " counts for ", limit, " hosts");
      case errc::unknown_host:
        return concat("host ", detail::quoted(text), " is not in the cluster");
      case errc::no_devices:
        return "nothing is left to run on";
      case errc::bad_env_name:
        return concat(
            detail::quoted(text),
            " is not a variable name (letters, digits and '_', not starting with a digit)");
      case errc::not_utf8:
        return concat("the ", variable, " ", detail::quoted(text), " is not UTF-8 (byte ", limit,
                      " does not start a character): Kubernetes carries only UTF-8 text");
      case errc::nul_byte:
        return concat("the ", variable, " ", detail::quoted(text), " holds a NUL byte at position ",
                      limit, ", which no argument or variable can carry");
      case errc::bad_weight:
        return concat(who, "weight ", detail::quoted(text),
                      " is not valid: ", hetlaunch::describe(weight));
      case errc::global_batch_too_small:
        return concat("the global batch ", value, " is smaller than the world size ", limit,
                      ": every worker needs at least one sample a step");
      case errc::bad_global_batch:
        if (value == 0)
          return "the plan has no global batch (global_batch is 0), so it has no work shares";
        return concat(
            "the global batch must be 0 (no work shares) or at least the world size, got ", value);
      case errc::batch_mismatch:
        return concat(host.empty() ? std::string() : who, variable, " is ", detail::quoted(text),
                      " but the plan gives ", limit);
      case errc::bad_kill_after:
        return concat("kill_after must be 1..3600 seconds, got ", value);
      case errc::bad_name:
        return concat("the ", variable, " ", detail::quoted(text),
                      " is not a DNS label (lower-case letters, digits and '-', "
                      "starting with a letter and not ending with '-'): position ",
                      value);
      case errc::name_too_long:
        return concat("the ", variable, " ", detail::quoted(text), " makes pod host names of ",
                      value, " characters, more than ", limit, " (NAME-gG-0-K): shorten it");
      case errc::empty_image:
        return "no container image given";
      case errc::bad_group:
        return concat("group ", text, " must have at least ", limit, " ", variable, ", got ",
                      value);
      case errc::too_many_pods:
        return concat(
            text, " would have ", value, " pods, more than ", limit,
            text == "the job" ? "" : " (the completions Kubernetes allows an Indexed Job)");
      case errc::virtual_local_rank:
        return concat(
            "the extra torchrun argument ", detail::quoted(text),
            " (torch 2.14) gives every worker LOCAL_RANK=0 and only its own device in "
            "CUDA_VISIBLE_DEVICES, which the plan, its environments and the workers' checks do not "
            "describe; leave it out: each worker's LOCAL_RANK picks its device");
      case errc::binding_entrypoint:
        return concat(
            "the extra torchrun argument ", detail::quoted(text),
            " changes how torchrun starts each worker, "
            "which --numa-binding does through `hetlaunch bind`; leave it out, or bind with torchrun's own "
            "--numa-binding (torch 2.9 and later) instead of hetlaunch's");
      case errc::binding_not_carried:
        return "accelerate's command cannot carry --numa-binding (accelerate starts the workers itself); leave it out, "
               "or use accelerate's own --enable_cpu_affinity";
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
