// SPDX-License-Identifier: MIT
// hetlaunch: errc and diagnostic, the problems a topology or an argument can have.
#ifndef HETLAUNCH_DIAGNOSTIC_HPP
#define HETLAUNCH_DIAGNOSTIC_HPP

#include <climits>
#include <cstddef>
#include <string>
#include <string_view>

#include "detail/host_name.hpp"

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
  }
  return "unknown";
}

namespace detail {
// Quotes text for an error message; bytes that would garble a terminal are shown as escapes.
inline void append_quoted(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '\'';
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\' || c == '\'') { out += '\\'; out += ch; }
    else if (c < 0x20 || c == 0x7f) { out += "\\x"; out += hex[c >> 4]; out += hex[c & 15]; }
    else out += ch;
  }
  out += '\'';
}
inline std::string quoted(std::string_view text) {
  std::string out;
  append_quoted(out, text);
  return out;
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
  long long limit = 0;           // *_out_of_range: the exclusive bound; world_size_overflow: INT_MAX

  constexpr explicit operator bool() const noexcept { return code != errc::ok; }

  /// For people: "node 1 ('gpu-b'): nproc must be at least 1, got 0".
  [[nodiscard]] std::string message() const {
    std::string out;
    const auto num = [](auto v) { return std::to_string(v); };
    const auto node_prefix = [&] {
      out += "node " + num(node) + " (";
      detail::append_quoted(out, host);
      out += "): ";
    };
    switch (code) {
      case errc::ok:
        return "no problem";
      case errc::empty_cluster:
        return "the cluster has no nodes";
      case errc::bad_nproc:
        node_prefix();
        out += "nproc must be at least 1, got " + num(value);
        return out;
      case errc::world_size_overflow:
        node_prefix();
        out += "world size would be " + num(value) + ", more than " + num(limit) +
               " (torch.distributed ranks are 32-bit)";
        return out;
      case errc::bad_host:
        node_prefix();
        out += "host is not a valid RFC 1123 name or IP literal: ";
        out += host_issue_text();
        return out;
      case errc::duplicate_host:
        node_prefix();
        out += "host is also node " + num(other_node) +
               "; two agents on one host must be allowed explicitly (allow_duplicate_hosts)";
        return out;
      case errc::empty_role:
        node_prefix();
        out += "role is empty";
        return out;
      case errc::bad_role:
        node_prefix();
        out += "role ";
        detail::append_quoted(out, role);
        out += position == 0 && !role.empty() && role[0] == '-'
                   ? " starts with '-', which torchrun would read as an option"
                   : " has a blank or control character at position " + num(position);
        return out;
      case errc::node_out_of_range:
        return "node index " + num(value) + " is out of range: the cluster has " + num(limit) +
               " nodes";
      case errc::local_rank_out_of_range:
        node_prefix();
        out += "local rank " + num(value) + " is out of range: the node runs " + num(limit) +
               " workers";
        return out;
      case errc::global_rank_out_of_range:
        return "global rank " + num(value) + " is out of range: the world size is " + num(limit);
    }
    return "unknown problem";
  }

 private:
  std::string host_issue_text() const {
    const std::string at = " at position " + std::to_string(position);
    switch (issue) {
      case host_issue::none: return "no problem";
      case host_issue::empty: return "it is empty";
      case host_issue::too_long: return "it is longer than 253 characters";
      case host_issue::bad_character: {
        std::string out = "character ";
        const char c = position < host.size() ? host[position] : '?';
        detail::append_quoted(out, std::string_view(&c, 1));
        out += at + " is not allowed";
        if (c == '[' || c == ']') out += " (write IPv6 addresses without brackets)";
        else if (c == '%') out += " (IPv6 zone ids are not supported by torchrun)";
        else if (c == '_') out += " (allow it with allow_underscore)";
        return out;
      }
      case host_issue::empty_label: return "empty label" + at;
      case host_issue::label_too_long: return "label longer than 63 characters" + at;
      case host_issue::hyphen_at_label_edge: return "a label starts or ends with '-'" + at;
      case host_issue::numeric_not_ipv4:
        return "an all-numeric name that is not a dotted quad (resolvers read it as an IPv4 address)";
      case host_issue::bad_ipv4: return "invalid IPv4 address" + at;
      case host_issue::bad_ipv6: return "invalid IPv6 address" + at;
    }
    return "unknown";
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
