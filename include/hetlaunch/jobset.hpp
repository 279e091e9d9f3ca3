// SPDX-License-Identifier: MIT
// hetlaunch: a Kubernetes JobSet (jobset.x-k8s.io/v1alpha2) that runs a mixed-GPU torchrun job:
// one replicatedJob per group of equal nodes, each pod torchrun's node offset(group) + its index.
#ifndef HETLAUNCH_JOBSET_HPP
#define HETLAUNCH_JOBSET_HPP

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "diagnostic.hpp"
#include "document.hpp"
#include "node_group.hpp"
#include "plan.hpp"
#include "result.hpp"
#include "torchrun_argv.hpp"

namespace hetlaunch {

/// What a JobSet needs besides the groups. `launch` gives torchrun's options (master_port,
/// max_restarts, program, torchrun_args, module, script, script_args, flags); its master_addr is
/// ignored: node 0 is the first pod's stable host name.
/// How JobSet restarts a failed set (spec.failurePolicy.restartStrategy): `recreate` deletes
/// and recreates every Job at once (JobSet's default), `blocking_recreate` creates the new Jobs
/// only once every old Job and pod is gone. `unset` leaves the field out.
enum class jobset_restart_strategy { unset, recreate, blocking_recreate };

struct jobset_options {
  std::string name;        ///< the JobSet's name: a DNS label (lower case, digits, '-')
  std::string namespace_;  ///< metadata.namespace; empty: none (kubectl's current namespace)
  std::string image;       ///< the container image; it needs torchrun and the script, not hetlaunch
  launch_options launch;
  environment env;     ///< the container's variables, in order
  std::string cpu;     ///< resources.requests.cpu of each pod ("8", "500m"); empty: none
  std::string memory;  ///< resources.requests.memory ("64Gi"); empty: none
  int jobset_max_restarts =
      0;  ///< spec.failurePolicy.maxRestarts: how often every Job is recreated
  jobset_restart_strategy restart_strategy =
      jobset_restart_strategy::unset;  ///< failurePolicy.restartStrategy
  std::string gpu_resource = "nvidia.com/gpu";
};

/// The variable each pod's command reads its index in its group from (the downward API gives it
/// the Job's completion index annotation).
constexpr std::string_view pod_index_variable = variables::pod_index;

/// The annotation JobSet gives every pod with the set's restart attempt (0 at first); each pod's
/// HETLAUNCH_RESTART_COUNT reads it through the downward API.
constexpr std::string_view restart_attempt_annotation = "jobset.sigs.k8s.io/restart-attempt";

namespace detail {

// A DNS-1035 label, as Kubernetes checks names that become host names: lower-case letters,
// digits and '-', starting with a letter, ending with a letter or digit.
inline std::size_t dns_label_problem(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || (c == '-' && i > 0 && i + 1 < s.size()) || (is_digit(c) && i > 0);
    if (!ok) return i;
  }
  return s.empty() ? 0 : s.size();
}

// The texts of the JobSet's problems; the codes it shares with the core keep the core's.
inline std::string jobset_message(const diagnostic& d) {
  const std::string text = quoted(d.text);
  switch (d.code) {
    case errc::bad_name:
      return concat("the ", d.variable, " ", text,
                    " is not a DNS label (lower-case letters, digits and '-', "
                    "starting with a letter and not ending with '-'): position ",
                    d.position);
    case errc::name_too_long:
      return concat("the ", d.variable, " ", text, " makes pod host names of ", d.value,
                    " characters, more than ", d.limit, " (NAME-gG-0-K): shorten it");
    case errc::empty_image:
      return "no container image given";
    case errc::bad_group:
      return concat("group ", d.text, " must have at least ", d.limit, " ", d.variable, ", got ",
                    d.value);
    case errc::too_many_pods:
      return concat(
          d.text, " would have ", d.value, " pods, more than ", d.limit,
          d.text == "the job" ? "" : " (the completions Kubernetes allows an Indexed Job)");
    case errc::not_utf8:
      return concat("the ", d.variable, " ", text, " is not UTF-8 (byte ", d.position,
                    " does not start a character): Kubernetes carries only UTF-8 text");
    default:
      return core_message(d);
  }
}

inline diagnostic jobset_problem(errc code, std::string_view variable, std::string_view text,
                                 long long value = 0, long long limit = 0) {
  return diagnostic::of(code)
      .with_variable(variable)
      .with_text(text)
      .with_value(value)
      .with_limit(limit)
      .with_describe(&jobset_message);
}

// A problem at a character of `text`: its offset is the diagnostic's position.
inline diagnostic jobset_problem_at(errc code, std::string_view variable, std::string_view text,
                                    std::size_t position) {
  return jobset_problem(code, variable, text).with_position(position);
}

}  // namespace detail

/// Kubernetes' limit on an Indexed Job's completions, and so on the pods of one group.
constexpr long long max_indexed_completions = 100000;
/// The most pods of one JobSet (the default max_hosts of host lists).
constexpr long long max_jobset_pods = 1 << 20;

/// The name of group `g`'s replicatedJob: "g0", "g1", ...
inline std::string jobset_group_name(std::size_t g) { return detail::concat("g", g); }

/// The stable host name of pod `k` of group `g`: NAME-gG-0-K.NAME (JobSet's
/// <jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>, with the subdomain its name).
inline std::string jobset_pod_host(const jobset_options& o, std::size_t g, std::size_t k) {
  return detail::concat(o.name, "-", jobset_group_name(g), "-0-", k, ".", o.name);
}

/// Every problem of the groups and options, in order: the name (a DNS label, short enough that
/// the longest pod host name, NAME-gG-0-K, is at most 63 characters), an empty image, groups
/// without nodes or GPUs or with more than 100,000 pods, more than 2^20 pods in all, variable
/// names a shell cannot set, a negative jobset_max_restarts, and any text of the manifest that is
/// not UTF-8 (not_utf8, naming which text). try_jobset_document adds the plan's problems.
[[nodiscard]] inline std::vector<diagnostic> validate_jobset(const std::vector<node_group>& groups,
                                                             const jobset_options& o) {
  std::vector<diagnostic> out;
  const std::size_t bad = detail::dns_label_problem(o.name);
  if (o.name.empty() || bad < o.name.size())
    out.push_back(detail::jobset_problem_at(errc::bad_name, "name", o.name, bad));
  long long longest = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const long long last = groups[g].nodes > 0 ? groups[g].nodes - 1 : 0;
    const long long length = static_cast<long long>(
        o.name.size() + 1 + jobset_group_name(g).size() + 3 + std::to_string(last).size());
    if (length > longest) longest = length;
  }
  if (!o.name.empty() && bad == o.name.size() && longest > 63)
    out.push_back(detail::jobset_problem(errc::name_too_long, "name", o.name, longest, 63));
  if (!o.namespace_.empty() && detail::dns_label_problem(o.namespace_) < o.namespace_.size())
    out.push_back(detail::jobset_problem_at(errc::bad_name, "namespace", o.namespace_,
                                            detail::dns_label_problem(o.namespace_)));
  if (o.image.empty()) out.push_back(detail::jobset_problem(errc::empty_image, "image", ""));
  if (groups.empty()) out.push_back(detail::jobset_problem(errc::empty_cluster, "groups", ""));
  long long pods = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].nodes > 0) pods += groups[g].nodes;  // at most 2^31 a group: cannot wrap
    if (groups[g].nodes > max_indexed_completions)
      out.push_back(detail::jobset_problem(errc::too_many_pods, "nodes",
                                           detail::concat("group ", jobset_group_name(g)),
                                           groups[g].nodes, max_indexed_completions));
    if (groups[g].nodes < 1)
      out.push_back(detail::jobset_problem(errc::bad_group, "nodes", jobset_group_name(g),
                                           groups[g].nodes, 1));
    if (groups[g].gpus < 1)
      out.push_back(
          detail::jobset_problem(errc::bad_group, "gpus", jobset_group_name(g), groups[g].gpus, 1));
  }
  // The pods are planned as a cluster, which costs memory for each: bounded as host lists are.
  if (pods > max_jobset_pods && out.empty())
    out.push_back(
        detail::jobset_problem(errc::too_many_pods, "nodes", "the job", pods, max_jobset_pods));
  // Kubernetes takes the later of two equal names: the plan's own variables cannot be given.
  for (const auto& v : o.env)
    if (!detail::is_env_name(v.first))
      out.push_back(detail::jobset_problem(errc::bad_env_name, "env", v.first));
    else if (is_owned_variable(v.first))
      out.push_back(detail::jobset_problem(errc::owned_variable, "env", v.first));
  if (o.jobset_max_restarts < 0)
    out.push_back(detail::jobset_problem(errc::bad_max_restarts, "jobset_max_restarts", "",
                                         o.jobset_max_restarts));
  // Kubernetes stores text as UTF-8: kubectl refuses a manifest with other bytes (YAML) or turns
  // them into U+FFFD without a word (JSON). Every text of the manifest, each named.
  const auto utf8 = [&out](std::string_view what, std::string_view text) {
    const std::size_t at = detail::first_non_utf8(text);
    if (at < text.size()) out.push_back(detail::jobset_problem_at(errc::not_utf8, what, text, at));
  };
  utf8("image", o.image);
  utf8("cpu request", o.cpu);
  utf8("memory request", o.memory);
  utf8("GPU resource", o.gpu_resource);
  for (const std::string& w : o.launch.program) utf8("program word", w);
  for (const std::string& a : o.launch.torchrun_args) utf8("torchrun argument", a);
  utf8("script", o.launch.script);
  for (const std::string& a : o.launch.script_args) utf8("script argument", a);
  for (const auto& v : o.env) utf8("value of variable", v.second);
  for (const node_group& g : groups)
    for (const auto& kv : g.node_selector) {
      utf8("nodeSelector key", kv.first);
      utf8("nodeSelector value", kv.second);
    }
  return out;
}

namespace detail {

// The pods as a cluster: what make_plan validates and torchrun_argv is built from.
inline cluster jobset_cluster(const std::vector<node_group>& groups, const jobset_options& o) {
  cluster_builder b;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (int k = 0; k < groups[g].nodes; ++k)
      b.add(jobset_pod_host(o, g, static_cast<std::size_t>(k)), groups[g].gpus, "default",
            groups[g].weight);
  return b.finish();
}

// The first line of the error in a torchrun error file (argv[1]), at most 1,024 bytes, as a JSON
// string; nothing when it has none. Single quotes never appear in it.
inline std::string_view error_line_program() {
  return R"py(import json, sys
m = json.load(open(sys.argv[1]))["message"]
m = m["message"] if isinstance(m, dict) else m
line = "".join(c if c >= " " else " " for c in (str(m).splitlines() or [""])[0])
line = line.encode("utf-8", "replace")[:1024].decode("utf-8", "ignore")
print(json.dumps(line) if line else "")
)py";
}

// Runs the torchrun argv with --node_rank=OFFSET+INDEX put in at its place (`at`, after the
// program and --nnodes); the index comes from the downward API.
// With a work share, the pod's part of each step first: a group's nodes are alike, so the samples
// left after the floors went to a prefix of them (equal remainders, ties to the lower index), and
// pod k gets base + (k < extra) samples from first_offset + k * base + min(k, extra).
struct group_share {
  long long base = 0, extra = 0, first_offset = 0;
  std::string host_head, host_tail;  // pod k's host: host_head, k, host_tail (jobset_pod_host)
};
// Then torchrun runs as the shell's child, with SIGTERM and SIGINT passed on (the shell is the
// container's first process, which ignores them by default), and its end is written as the
// node's node_exited JSON to the termination message file (terminationMessagePath, or
// HETLAUNCH_TERMINATION_LOG where it runs outside Kubernetes): node, host, status, reason, and
// the error's first line when torchrun copied a worker's error file into its own
// (TORCHELASTIC_ERROR_FILE, the worker's entry point wrapped in @record). Well under 4,096 bytes.
inline std::string pod_script(long long offset, std::size_t at, std::string_view node_rank_flag,
                              std::string_view host_head, std::string_view host_tail,
                              const group_share* share = nullptr) {
  const std::string batch =
      share == nullptr
          ? std::string()
          : concat("k=$((", pod_index_variable, "))\n", "export ", variables::node_batch, "=$((",
                   share->base, " + (k < ", share->extra, ")))\n", "export ",
                   variables::node_batch_offset, "=$((", share->first_offset, " + k * ",
                   share->base, " + (k < ", share->extra, " ? k : ", share->extra, ")))\n",
                   "export ", variables::node_host, "=\"", share->host_head, "$k", share->host_tail,
                   "\"\n");
  return concat(
      batch, "rank=$((", offset, " + ", pod_index_variable, "))\n", "i=0\n",
      "for a; do shift; i=$((i + 1)); set -- \"$@\" \"$a\"; if [ \"$i\" -eq ", at,
      " ]; then set -- \"$@\" \"", node_rank_flag, "=$rank\"; fi; done\n",
      "TORCHELASTIC_ERROR_FILE=${TMPDIR:-/tmp}/hetlaunch-torchrun-error.$$.json\n",
      "export TORCHELASTIC_ERROR_FILE\n", "rm -f \"$TORCHELASTIC_ERROR_FILE\"\n", "\"$@\" &\n",
      "child=$!\n", "trap 'kill -TERM \"$child\" 2>/dev/null' TERM\n",
      "trap 'kill -INT \"$child\" 2>/dev/null' INT\n",
      "while :; do wait \"$child\"; status=$?; kill -0 \"$child\" 2>/dev/null || break; done\n",
      "reason=succeeded; [ \"$status\" -eq 0 ] || reason=failed\n", "error=\n",
      "if [ -s \"$TORCHELASTIC_ERROR_FILE\" ]; then error=$(python3 -c '", error_line_program(),
      "' \"$TORCHELASTIC_ERROR_FILE\" 2>/dev/null); fi\n", "rm -f \"$TORCHELASTIC_ERROR_FILE\"\n",
      "printf '{\"event\": \"node_exited\", \"node\": %s, \"host\": \"%s\", \"status\": %s, "
      "\"reason\": \"%s\"%s}\\n' \"$rank\" \"",
      host_head, "$", pod_index_variable, host_tail,
      "\" \"$status\" \"$reason\" \"${error:+, \\\"error\\\": $error}\" > "
      "\"${HETLAUNCH_TERMINATION_LOG:-/dev/termination-log}\" 2>/dev/null\n",
      "exit \"$status\"");
}

}  // namespace detail

/// The JobSet as a document (see jobset_manifest), or the first problem (validate_jobset).
[[nodiscard]] inline result<document, diagnostic> try_jobset_document(
    const std::vector<node_group>& groups, const jobset_options& o) {
  if (const auto problems = validate_jobset(groups, o); !problems.empty()) return problems.front();
  launch_options launch = o.launch;
  launch.master_addr.clear();  // node 0: the first pod
  launch.backend = rendezvous::static_tcp;
  if (launch.script.empty()) return diagnostic::of(errc::empty_script);
  auto plan = make_plan(detail::jobset_cluster(groups, o), launch);
  if (!plan) return plan.error().front();
  document root = document::object();
  root.add("apiVersion", document::str("jobset.x-k8s.io/v1alpha2"));
  root.add("kind", document::str("JobSet"));
  document& meta = root.add("metadata", document::object());
  meta.add("name", document::str(o.name));
  if (!o.namespace_.empty()) meta.add("namespace", document::str(o.namespace_));
  document& spec = root.add("spec", document::object());
  document& network = spec.add("network", document::object());
  network.add("enableDNSHostnames", document::boolean(true));
  network.add("subdomain", document::str(o.name));
  document& failure_policy = spec.add("failurePolicy", document::object());
  failure_policy.add("maxRestarts", document::num(o.jobset_max_restarts));
  if (o.restart_strategy != jobset_restart_strategy::unset)
    failure_policy.add("restartStrategy",
                       document::str(o.restart_strategy == jobset_restart_strategy::recreate
                                         ? "Recreate"
                                         : "BlockingRecreate"));
  // A Job failed by its podFailurePolicy (invalid input, failed preflight) fails the whole set:
  // recreating it would fail the same way.
  document& rule = failure_policy.add("rules", document::array()).push(document::object());
  rule.add("name", document::str("FailOnInvalidInput"));
  rule.add("action", document::str("FailJobSet"));
  rule.add("onJobFailureReasons", document::array()).push(document::str("PodFailurePolicy"));
  document& jobs = spec.add("replicatedJobs", document::array());
  std::size_t first_node = 0;
  const std::string rank_flag = detail::flag(launch, "node_rank");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const node_group& group = groups[g];
    // The first pod's command, without its --node_rank: every pod of the group has the same.
    std::size_t at = 0;
    const std::vector<std::string> argv =
        detail::build_torchrun_argv(plan->topology(), first_node, plan->options(), &at);
    document& rj = jobs.push(document::object());
    rj.add("name", document::str(jobset_group_name(g)));
    rj.add("replicas", document::num(1));
    document& job_spec = rj.add("template", document::object()).add("spec", document::object());
    job_spec.add("completionMode", document::str("Indexed"));
    job_spec.add("completions", document::num(group.nodes));
    job_spec.add("parallelism", document::num(group.nodes));
    job_spec.add("backoffLimit", document::num(0));
    // Invalid input and a failed preflight (exit statuses 2 and 6, as --exit-status-by-reason
    // gives them; torchrun's own usage error is 2) fail the Job at once: no retry helps.
    document& fail_at_once = job_spec.add("podFailurePolicy", document::object())
                                 .add("rules", document::array())
                                 .push(document::object());
    fail_at_once.add("action", document::str("FailJob"));
    document& codes = fail_at_once.add("onExitCodes", document::object());
    codes.add("containerName", document::str("torchrun"));
    codes.add("operator", document::str("In"));
    document& values = codes.add("values", document::array());
    values.push(document::num(2));
    values.push(document::num(6));
    document& pod_spec =
        job_spec.add("template", document::object()).add("spec", document::object());
    pod_spec.add("restartPolicy", document::str("Never"));
    if (!group.node_selector.empty()) {
      document& sel = pod_spec.add("nodeSelector", document::object());
      for (const auto& kv : group.node_selector) sel.add(kv.first, document::str(kv.second));
    }
    document& container = pod_spec.add("containers", document::array()).push(document::object());
    container.add("name", document::str("torchrun"));
    container.add("image", document::str(o.image));
    // The node's node_exited JSON, shown in the pod's status; its last log lines when it wrote
    // none (it failed before torchrun ended).
    container.add("terminationMessagePath", document::str("/dev/termination-log"));
    container.add("terminationMessagePolicy", document::str("FallbackToLogsOnError"));
    document& command = container.add("command", document::array());
    command.push(document::str("sh"));
    command.push(document::str("-c"));
    detail::group_share share;
    const std::string host_head = detail::concat(o.name, "-", jobset_group_name(g), "-0-");
    const std::string host_tail = detail::concat(".", o.name);
    if (plan->has_shares()) {
      const node_batch first = plan->node_batch_of(first_node);
      const node_batch last =
          plan->node_batch_of(first_node + static_cast<std::size_t>(group.nodes) - 1);
      share.base = last.batch;
      share.first_offset = first.offset;
      // The pods with one sample more come first: count them from the offsets' growth.
      share.extra = (static_cast<long long>(last.offset) - first.offset) -
                    static_cast<long long>(group.nodes - 1) * last.batch;
      share.host_head = host_head;
      share.host_tail = host_tail;
    }
    command.push(document::str(detail::pod_script(static_cast<long long>(first_node), at, rank_flag,
                                                  host_head, host_tail,
                                                  plan->has_shares() ? &share : nullptr)));
    command.push(document::str("hetlaunch-pod"));
    document& args = container.add("args", document::array());
    for (const std::string& a : argv) args.push(document::str(a));
    document& env = container.add("env", document::array());
    document& index = env.push(document::object());
    index.add("name", document::str(std::string(pod_index_variable)));
    index.add("valueFrom", document::object())
        .add("fieldRef", document::object())
        .add("fieldPath",
             document::str("metadata.annotations['batch.kubernetes.io/job-completion-index']"));
    // The set's restart attempt, for the script to resume from its checkpoint (as in `run
    // --restarts`).
    document& attempt = env.push(document::object());
    attempt.add("name", document::str(std::string(variables::restart_count)));
    attempt.add("valueFrom", document::object())
        .add("fieldRef", document::object())
        .add("fieldPath", document::str(detail::concat("metadata.annotations['",
                                                       restart_attempt_annotation, "']")));
    if (plan->has_shares()) {
      document& e = env.push(document::object());
      e.add("name", document::str(std::string(variables::global_batch)));
      e.add("value", document::str(std::to_string(launch.global_batch)));
    }
    for (const auto& v : o.env) {
      document& e = env.push(document::object());
      e.add("name", document::str(v.first));
      e.add("value", document::str(v.second));
    }
    document& resources = container.add("resources", document::object());
    resources.add("limits", document::object()).add(o.gpu_resource, document::num(group.gpus));
    document& requests = resources.add("requests", document::object());
    requests.add(o.gpu_resource, document::num(group.gpus));
    if (!o.cpu.empty()) requests.add("cpu", document::str(o.cpu));
    if (!o.memory.empty()) requests.add("memory", document::str(o.memory));
    container.add("ports", document::array())
        .push(document::object())
        .add("containerPort", document::num(launch.master_port));
    first_node += static_cast<std::size_t>(group.nodes);
  }
  return root;
}

/// The JobSet manifest, YAML (`json` true: JSON), for `kubectl apply -f -`: one replicatedJob per
/// group ("g0", "g1", ...), each one Indexed Job of `nodes` pods that ask for (and are limited
/// to) `gpus` GPUs. Pod k of group g runs torchrun as node offset(g) + k with the group's
/// --nproc_per_node, the static rendezvous on the first pod's stable host name
/// (NAME-g0-0-0.NAME) and launch.master_port. Errors: validate_jobset's, then make_plan's.
[[nodiscard]] inline result<std::string, diagnostic> try_jobset_manifest(
    const std::vector<node_group>& groups, const jobset_options& o, bool json = false) {
  auto doc = try_jobset_document(groups, o);
  if (!doc) return doc.error();
  return json ? to_json(*doc) : to_yaml(*doc);
}
/// try_jobset_manifest(...).value().
[[nodiscard]] inline std::string jobset_manifest(const std::vector<node_group>& groups,
                                                 const jobset_options& o, bool json = false) {
  return try_jobset_manifest(groups, o, json).value();
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_JOBSET_HPP
