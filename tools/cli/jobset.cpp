// SPDX-License-Identifier: MIT
// `hetlaunch jobset`: the flags made into node groups and JobSet options for jobset.hpp.
#include "cli.hpp"

#include <cstdio>
#include <optional>

namespace cli {
namespace {

constexpr long long max_group_count = 1 << 30;

int positive(const std::string& whole, std::string_view text, const char* what) {
  const bool digits =
      !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
  const std::optional<unsigned long long> n = hetlaunch::parse_count(text, max_group_count);
  if (!digits || (n && *n < 1))
    throw usage_error{concat("--group ", quoted(whole), ": ", what, " ", quoted(text),
                             " is not a positive integer")};
  if (!n)
    throw usage_error{concat("--group ", quoted(whole), ": ", what, " ", quoted(text),
                             " is more than ", max_group_count, ", the most one group can have")};
  return static_cast<int>(*n);
}

}  // namespace

result<std::vector<hetlaunch::node_group>> node_groups(const groups_part& flags) {
  std::vector<hetlaunch::node_group> groups;
  for (const std::string& g : flags.groups) {
    const std::size_t colon = g.find(':');
    if (colon == std::string::npos)
      throw usage_error{concat("--group ", quoted(g), " is not NODES:GPUS[:WEIGHT]")};
    const std::size_t second = g.find(':', colon + 1);
    const std::string_view gpus = std::string_view(g).substr(
        colon + 1, second == std::string::npos ? std::string::npos : second - colon - 1);
    groups.push_back({positive(g, std::string_view(g).substr(0, colon), "NODES"),
                      positive(g, gpus, "GPUS"),
                      {},
                      second == std::string::npos ? std::string("1") : g.substr(second + 1)});
  }
  for (std::size_t k = 0; k < groups.size(); ++k)
    if (const hetlaunch::weight_check wc = hetlaunch::check_weight(groups[k].weight); !wc)
      return invalid(concat("--group ", quoted(flags.groups[k]), ": ",
                            hetlaunch::weight_refusal(groups[k].weight, wc.issue)));
  return groups;
}

int jobset_command(const jobset_command_options& o) {
  // Node 0 is the first pod's stable host name, met at a static rendezvous: an address or a
  // backend the manifest would drop is refused rather than ignored.
  if (given(o, "--master-addr"))
    throw usage_error{
        "jobset takes no --master-addr: node 0 is the first pod, reached by its stable host name"};
  if (o.launch.backend == hetlaunch::rendezvous::c10d)
    throw usage_error{
        "jobset takes no --rdzv c10d: its pods meet at a static rendezvous on the "
        "first pod, where each pod's rank is its place in the groups"};
  result<std::vector<hetlaunch::node_group>> shapes = node_groups(o);
  if (!shapes) return fail(shapes.error());
  std::vector<hetlaunch::node_group>& groups = *shapes;
  for (const std::string& s : o.node_selectors) {
    const std::size_t colon = s.find(':'), eq = s.find('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon)
      throw usage_error{concat("--node-selector ", quoted(s), " is not GROUP:KEY=VALUE")};
    const std::optional<unsigned long long> g =
        hetlaunch::parse_count(std::string_view(s).substr(0, colon), 1 << 30);
    if (!g || *g >= groups.size())
      throw usage_error{concat("--node-selector ", quoted(s), ": there is no group ",
                               quoted(s.substr(0, colon)),
                               " (groups count from 0 in --group order)")};
    groups[static_cast<std::size_t>(*g)].node_selector.emplace_back(
        s.substr(colon + 1, eq - colon - 1), s.substr(eq + 1));
  }
  // The flags wrote the JobSet's own options; the launch options and the variables join them.
  hetlaunch::jobset_options js = o.jobset;
  js.launch = o.launch;
  result<hetlaunch::environment> env = env_flags(o);
  if (!env) return fail(env.error());
  js.env = std::move(*env);
  const auto manifest = hetlaunch::try_jobset_manifest(groups, js, o.format == "json");
  if (!manifest) return fail(concat("jobset: ", manifest.error().message()));
  std::fwrite(manifest->data(), 1, manifest->size(), stdout);
  return 0;
}

}  // namespace cli
