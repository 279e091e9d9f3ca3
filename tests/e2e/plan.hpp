// SPDX-License-Identifier: MIT
// The plan handed to test workers on their command line: "host:nproc[:role],..."
#ifndef HETLAUNCH_TESTS_E2E_PLAN_HPP
#define HETLAUNCH_TESTS_E2E_PLAN_HPP

#include <hetlaunch/cluster.hpp>

#include <string>
#include <vector>

namespace e2e {

inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

inline hetlaunch::cluster parse_plan(const std::string& text) {
  std::vector<std::vector<std::string>> nodes;  // the specs view these; the cluster copies them
  for (const std::string& n : split(text, ',')) nodes.push_back(split(n, ':'));
  std::vector<hetlaunch::node_spec> specs;
  for (const auto& parts : nodes)
    specs.push_back({parts.at(0), std::stoi(parts.at(1)),
                     parts.size() > 2 ? std::string_view(parts[2]) : "default"});
  return hetlaunch::cluster(specs);
}

inline std::string format_plan(const hetlaunch::cluster& c) {
  std::string out;
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const hetlaunch::node_spec n = c.node(i);
    if (i) out += ',';
    out += hetlaunch::detail::concat(n.host, ":", n.nproc, ":", n.role);
  }
  return out;
}

}  // namespace e2e

#endif
