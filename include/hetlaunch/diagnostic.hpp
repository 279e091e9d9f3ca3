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
#include "worker_variables.hpp"
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

template <class Diagnostic>
std::string core_message(const Diagnostic& d);
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
  std::size_t position = 0;    // offset of the offending character in `host`, `role` or `text`
  host_issue issue = host_issue::none;  // bad_host: what is wrong with the name
  long long limit = 0;        // *_out_of_range: the exclusive bound; world_size_overflow: INT_MAX;
                              // *_mismatch: the planned value
  std::string_view variable;  // env_* and *_mismatch: the environment variable; launch
                              // options: the option. Always a string literal of the library.
  bounded_string<128> text;   // the offending text (an address, a variable's value, a weight)
  weight_issue weight = weight_issue::none;  // bad_weight: what is wrong with the weight in `text`
  int local_rank = 0;                        // rank_mismatch: the worker whose RANK is wrong

  /// Renders the problems of a subsystem (JobSet, ssh, accelerate), whose texts live beside the
  /// code that finds them; null for the core's problems, which message() renders itself.
  std::string (*describe)(const diagnostic&) = nullptr;

  constexpr explicit operator bool() const noexcept { return code != errc::ok; }

  /// Every diagnostic is built one way, in one expression: the code, then the fields it uses.
  ///   diagnostic::of(errc::bad_nproc).with_node(i).with_host(host).with_value(0)
  [[nodiscard]] static constexpr diagnostic of(errc problem) noexcept {
    diagnostic d{};
    d.code = problem;
    return d;
  }
  constexpr diagnostic& with_node(std::size_t i) noexcept {
    node = i;
    return *this;
  }
  constexpr diagnostic& with_host(std::string_view h) noexcept {
    host = h;
    return *this;
  }
  constexpr diagnostic& with_role(std::string_view r) noexcept {
    role = r;
    return *this;
  }
  constexpr diagnostic& with_value(long long v) noexcept {
    value = v;
    return *this;
  }
  constexpr diagnostic& with_other_node(std::size_t i) noexcept {
    other_node = i;
    return *this;
  }
  constexpr diagnostic& with_position(std::size_t p) noexcept {
    position = p;
    return *this;
  }
  constexpr diagnostic& with_issue(host_issue i) noexcept {
    issue = i;
    return *this;
  }
  constexpr diagnostic& with_limit(long long l) noexcept {
    limit = l;
    return *this;
  }
  constexpr diagnostic& with_variable(std::string_view v) noexcept {
    variable = v;
    return *this;
  }
  constexpr diagnostic& with_text(std::string_view t) noexcept {
    text = t;
    return *this;
  }
  constexpr diagnostic& with_weight(weight_issue w) noexcept {
    weight = w;
    return *this;
  }
  constexpr diagnostic& with_local_rank(int l) noexcept {
    local_rank = l;
    return *this;
  }
  constexpr diagnostic& with_describe(std::string (*d)(const diagnostic&)) noexcept {
    describe = d;
    return *this;
  }

  /// For people: "node 1 ('gpu-b'): nproc must be at least 1, got 0". (A template only so that
  /// it is compiled where it is used.)
  template <class Unused = void>
  [[nodiscard]] std::string message() const {
    return describe ? describe(*this) : detail::core_message(*this);
  }
};

/// "weight '0' is not valid: it must be more than 0": how every reader of weights (hostfiles,
/// --weight, a node group, a diagnostic) says that one is not a weight.
template <class Unused = void>
[[nodiscard]] std::string weight_refusal(std::string_view text, weight_issue issue) {
  return detail::concat("weight ", detail::quoted(text), " is not valid: ", describe(issue));
}

/// "'1X' is not a variable name (...)": how every reader of variables (--env, env files, ssh
/// options, a diagnostic) says that a name is not one a shell can set.
template <class Unused = void>
[[nodiscard]] std::string env_name_refusal(std::string_view name) {
  return detail::concat(
      detail::quoted(name),
      " is not a variable name (letters, digits and '_', not starting with a digit)");
}

namespace detail {
/// The text of a problem of the core: the topology, the launch options, the workers'
/// environments and the text inputs. A subsystem's `describe` falls back to it for the codes it
/// shares (an empty program, a variable name).
template <class Diagnostic>
std::string core_message(const Diagnostic& d) {
  const auto& host = d.host;
  const auto& role = d.role;
  const auto& text = d.text;
  const long long value = d.value, limit = d.limit;
  const std::size_t position = d.position;
  const std::string_view variable = d.variable;
  const std::string who = concat("node ", d.node, " (", quoted(host), "): ");
  switch (d.code) {
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
                    detail::describe_host_issue(host, d.issue, position));
    case errc::duplicate_host:
      return concat(who, "host is also node ", d.other_node,
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
      return concat(who, "RANK is ", value, " but the plan gives LOCAL_RANK ", d.local_rank,
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
      return env_name_refusal(text.view());
    case errc::owned_variable:
      if (text == variables::restart_count)
        return concat(detail::quoted(text),
                      " is the attempt number that a launcher with --restarts sets for each "
                      "attempt; it cannot be given as a variable");
      if (text == variables::max_batch)
        return concat(detail::quoted(text),
                      " is the node's memory ceiling, set from the plan (max_batch= in a hostfile, "
                      "--max-batch); it cannot be given as a variable");
      if (text == variables::progress_seconds)
        return concat(detail::quoted(text),
                      " is set only by `hetlaunch run --hang-timeout`, which reads the ranks' "
                      "progress lines; it cannot be given as a variable");
      if (text == variables::min_compute_capability || text == variables::bf16)
        return concat(detail::quoted(text),
                      " is set only by `hetlaunch run --preflight`, from the GPUs each host "
                      "reports; it cannot be given as a variable");
      if (text == variables::on_slow)
        return concat(
            detail::quoted(text),
            " is set only by `hetlaunch run --on-slow rebalance`, which judges the ranks' "
            "progress; it cannot be given as a variable");
      if (text == variables::calibrate_steps)
        return concat(detail::quoted(text),
                      " is set only by `hetlaunch calibrate` (--calibrate-steps): a job given it "
                      "stops after that many steps as if it had succeeded; it cannot be given as a "
                      "variable");
      return concat(detail::quoted(text),
                    " is set from the plan (--global-batch), and another value would give the "
                    "workers wrong work shares; it cannot be given as a variable");
    case errc::unplanned_share:
      return concat(variable, " is ", detail::quoted(text),
                    " but the plan has no global batch: the worker would read a work share that "
                    "no launch gave it (an inherited variable?); unset it, or plan with "
                    "--global-batch");
    case errc::bad_weight:
      return concat(who, weight_refusal(text.view(), d.weight));
    case errc::global_batch_too_small:
      return concat("the global batch ", value, " is smaller than the world size ", limit,
                    ": every worker needs at least one sample a step");
    case errc::bad_global_batch:
      if (value == 0)
        return "the plan has no global batch (global_batch is 0), so it has no work shares";
      return concat("the global batch must be 0 (no work shares) or at least the world size, got ",
                    value);
    case errc::batch_mismatch:
      if (variable == variables::max_batch && limit == 0)
        return concat(host.empty() ? std::string() : who, variable, " is ", detail::quoted(text),
                      " but the plan gives this node no ceiling");
      return concat(host.empty() ? std::string() : who, variable, " is ", detail::quoted(text),
                    " but the plan gives ", limit);
    case errc::host_mismatch:
      if (text.empty())
        return concat(who, variable, " is not set; the plan gives ", detail::quoted(host));
      return concat(who, variable, " is ", detail::quoted(text), " but the plan gives ",
                    detail::quoted(host));
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
    default:
      break;
  }
  // A subsystem's code in a diagnostic built without its `describe`.
  return concat(to_string(d.code), ": ", quoted(text));
}
}  // namespace detail

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
