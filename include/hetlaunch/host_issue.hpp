// SPDX-License-Identifier: MIT
// hetlaunch: host_issue, what is wrong with a host name (a diagnostic's `issue`).
#ifndef HETLAUNCH_HOST_ISSUE_HPP
#define HETLAUNCH_HOST_ISSUE_HPP

namespace hetlaunch {

/// Why a host was refused; `position` in the diagnostic says where.
enum class host_issue : unsigned char {
  none,
  empty,                 // ""
  too_long,              // more than 253 characters
  bad_character,         // anything but letters, digits, '-', '.' (and ':' in IPv6)
  empty_label,           // "a..b", ".a", "a."
  label_too_long,        // a label over 63 characters
  hyphen_at_label_edge,  // "-a", "a-.b": a leading '-' would read as an option to ssh or pdsh
  numeric_not_ipv4,      // "123", "1.2.3": resolvers read these as IPv4 (0.0.0.123)
  bad_ipv4,              // "1.2.3.256", "01.2.3.4" (a leading zero reads as octal)
  bad_ipv6,              // "1:::2", "fe80::1%eth0", "[::1]"
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_HOST_ISSUE_HPP
