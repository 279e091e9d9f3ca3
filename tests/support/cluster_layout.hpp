// SPDX-License-Identifier: MIT
// A cluster, or the error that came instead, as one line of text: what the host-list and
// device-filter tests compare.
#ifndef HETLAUNCH_TESTS_SUPPORT_CLUSTER_LAYOUT_HPP
#define HETLAUNCH_TESTS_SUPPORT_CLUSTER_LAYOUT_HPP

#include <hetlaunch/cluster.hpp>
#include <hetlaunch/result.hpp>

#include <string>

namespace test_support {

// "host:nproc[devices]" for each node, or "ERR line:column: message".
inline std::string layout(const hetlaunch::result<hetlaunch::cluster>& r) {
  if (!r)
    return hetlaunch::detail::concat("ERR ", r.error().line, ":", r.error().column, ": ",
                                     r.error().message);
  std::string out;
  for (std::size_t i = 0; i < r->node_count(); ++i) {
    if (i) out += ' ';
    out += hetlaunch::detail::concat(r->node(i).host, ":", r->nproc(i));
    if (!r->devices(i).empty()) {
      out += '[';
      for (std::size_t k = 0; k < r->devices(i).size(); ++k)
        out += hetlaunch::detail::concat(k ? "," : "", r->devices(i)[k]);
      out += ']';
    }
  }
  return out;
}

}  // namespace test_support

#endif  // HETLAUNCH_TESTS_SUPPORT_CLUSTER_LAYOUT_HPP
