// SPDX-License-Identifier: MIT
// `hetlaunch preflight` and `run --preflight`: each host's facts, asked over ssh in the round that
// asks slots=auto hosts for their GPU counts (discover.cpp), judged by preflight.hpp's rules.
#include "job.hpp"

#include <cstdio>

namespace cli {
namespace {

std::string json_or_null(const std::optional<std::string>& v) {
  return v ? json_string(*v) : std::string("null");
}

// A host's least GPU capability, as the rules compute it for one host alone.
std::optional<std::string> least_capability(const hetlaunch::host_facts& h) {
  return hetlaunch::check_preflight({h}).min_capability;
}

}  // namespace

std::string host_facts_json(const std::vector<hetlaunch::host_facts>& hosts) {
  std::string out = "[";
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const hetlaunch::host_facts& h = hosts[i];
    std::string names = "[";
    for (std::size_t g = 0; g < h.gpus.size(); ++g)
      names += concat(g ? ", " : "", json_string(h.gpus[g].name));
    out += concat(
        i ? ", " : "", "{\"host\": ", json_string(h.host), ", \"python\": ", json_string(h.python),
        ", \"torch\": ", json_or_null(h.torch), ", \"cuda\": ", json_or_null(h.cuda),
        ", \"nccl\": ", json_or_null(h.nccl), ", \"gpus\": ", h.gpus.size(),
        ", \"capability\": ", json_or_null(least_capability(h)), ", \"gpu_names\": ", names, "]}");
  }
  return out + "]";
}

std::string preflight_problems_text(const hetlaunch::preflight_verdict& v) {
  std::string out;
  for (const hetlaunch::preflight_problem& p : v.problems)
    out += concat("hetlaunch: preflight: ", p.message, "\n");
  return out;
}

std::vector<int> nproc_of(const hetlaunch::cluster& nodes) {
  std::vector<int> out;
  for (std::size_t i = 0; i < nodes.node_count(); ++i) out.push_back(nodes.nproc(i));
  return out;
}

int preflight_command(const preflight_options& o) {
  std::vector<hetlaunch::host_facts> facts;
  remote_args remote = o.remote;
  remote.python = o.launch.python;
  const result<input> in = read_input(o.input, [&remote, &facts](hetlaunch::cluster& nodes) {
    return resolve_auto(remote, restart_args{}, nodes, &facts);
  });
  if (const int sig = take_stop_signal()) return 128 + sig;
  if (!in) return fail(in.error());
  const hetlaunch::preflight_verdict v = hetlaunch::check_preflight(facts, nproc_of(in->nodes));
  std::string text;
  if (o.format == "json") {
    std::string problems = "[";
    for (std::size_t k = 0; k < v.problems.size(); ++k)
      problems += concat(k ? ", " : "", json_string(v.problems[k].message));
    text = concat("{\"passed\": ", v.passes() ? "true" : "false",
                  ", \"hosts\": ", host_facts_json(facts), ", \"problems\": ", problems,
                  "], \"min_compute_capability\": ", json_or_null(v.min_capability),
                  ", \"bf16\": ", v.bf16 ? (*v.bf16 ? "true" : "false") : "null", "}\n");
  } else {
    char line[1024];
    std::snprintf(line, sizeof line, "%-20s %-8s %-22s %-8s %-8s %5s  %s\n", "host", "python",
                  "torch", "cuda", "nccl", "gpus", "capability");
    text = line;
    for (std::size_t i = 0; i < facts.size(); ++i) {
      const hetlaunch::host_facts& h = facts[i];
      std::snprintf(line, sizeof line, "%-20.*s %-8.*s %-22.*s %-8s %-8s %5zu  %s\n",
                    static_cast<int>(std::min<std::size_t>(h.host.size(), 200)), h.host.data(),
                    static_cast<int>(std::min<std::size_t>(h.python.size(), 40)), h.python.data(),
                    static_cast<int>(std::min<std::size_t>(h.torch.value_or("none").size(), 60)),
                    h.torch.value_or("none").c_str(), h.cuda.value_or("-").substr(0, 20).c_str(),
                    h.nccl.value_or("-").substr(0, 20).c_str(), h.gpus.size(),
                    least_capability(h).value_or("-").c_str());
      text += line;
    }
    text += v.passes()
                ? concat("\nthe hosts can run one job",
                         v.min_capability
                             ? concat(" (least capability ", *v.min_capability,
                                      *v.bf16 ? ", bf16 on every GPU)" : ", bf16 not on every GPU)")
                             : std::string(" (no GPU: gloo)"),
                         "\n")
                : "";
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (!v.passes()) {
    const std::string said = preflight_problems_text(v);
    std::fwrite(said.data(), 1, said.size(), stderr);
  }
  return finish_output(v.passes() ? 0 : exit_invalid);
}

}  // namespace cli
